import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENTRYPOINT, PROGRAM_MODULES } from "./compile-cache.ts";

const FILL = fileURLToPath(new URL("./compile-cache.ts", import.meta.url));
const SRC = resolve(dirname(ENTRYPOINT));

/** Runs node with `args` and only PATH, HOME and `env`; node's compile cache log is on when asked. */
function node(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, args, {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", ...env },
    timeout: 60_000,
    // node's compile cache log names every module it loads: over spawnSync's 1 MiB default.
    maxBuffer: 64 * 2 ** 20,
  });
}

/** The TypeScript files node stripped itself (`missed`) and those it took from the cache (`hit`). */
function transpiled(log: string): { hit: string[]; missed: string[] } {
  const files = (pattern: RegExp) => [...log.matchAll(pattern)].map((match) => match[1]!);
  return {
    hit: files(/retrieving transpile cache for StrippedTypeScript file:\/\/(\S+)\.\.\.success/g),
    missed: files(/no transpile cache for StrippedTypeScript file:\/\/(\S+)/g),
  };
}

describe("the compile cache the operator image is built with", () => {
  let cache: string;
  beforeAll(() => {
    cache = mkdtempSync(join(tmpdir(), "compile-cache-test-"));
    const filled = node([FILL], { NODE_COMPILE_CACHE: cache });
    expect(filled.stderr).toBe("");
    expect(filled.status).toBe(0);
  });
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  it("holds every TypeScript module the entrypoint and each program load, so none is stripped at start", () => {
    const debug = { NODE_COMPILE_CACHE: cache, NODE_DEBUG_NATIVE: "COMPILE_CACHE" };
    const help = node([ENTRYPOINT, "--help"], debug);
    expect(help.error ?? help.status).toBe(0);
    const loads = PROGRAM_MODULES.map((path) =>
      node(["--input-type=module", "-e", `await import(${JSON.stringify(path)})`], debug),
    );
    for (const load of loads) expect(load.error ?? load.status).toBe(0);
    const { hit, missed } = transpiled([help, ...loads].map((run) => run.stderr).join("\n"));
    expect(missed).toEqual([]);
    expect(hit).toContain(ENTRYPOINT);
    for (const path of PROGRAM_MODULES) expect(hit).toContain(path);
  });

  it("is checked: the same load without it strips its TypeScript itself", () => {
    const empty = mkdtempSync(join(tmpdir(), "compile-cache-test-"));
    try {
      const load = node(
        ["--input-type=module", "-e", `await import(${JSON.stringify(PROGRAM_MODULES[0])})`],
        {
          NODE_COMPILE_CACHE: empty,
          NODE_DEBUG_NATIVE: "COMPILE_CACHE",
        },
      );
      expect(transpiled(load.stderr).missed).toContain(PROGRAM_MODULES[0]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("lists every module main.ts imports by itself and every worker a program starts", () => {
    const imported = (file: string, pattern: RegExp) =>
      [...readFileSync(file, "utf8").matchAll(pattern)].map((match) => resolve(dirname(file), match[1]!));
    const loadedApart = [
      ...imported(ENTRYPOINT, /await import\("(\.[^"]+)"\)/g),
      ...imported(join(SRC, "store/audit/verify-checkers.ts"), /new Worker\(new URL\("(\.[^"]+)"/g),
    ];
    expect(loadedApart.length).toBeGreaterThanOrEqual(4);
    expect([...PROGRAM_MODULES].sort()).toEqual([...new Set(loadedApart)].sort());
  });

  it("is not filled without NODE_COMPILE_CACHE, and says which variable to set", () => {
    const run = node([FILL], {});
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^NODE_COMPILE_CACHE: /);
  });
});
