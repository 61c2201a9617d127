import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINE_MODULES, ENTRYPOINT } from "./compile-cache.ts";

const FILL = fileURLToPath(new URL("./compile-cache.ts", import.meta.url));
const SELECT = fileURLToPath(new URL("./engines/select.ts", import.meta.url));

/** Runs node with `args` from this folder, with only PATH, HOME and `env`. */
function node(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, args, {
    cwd: fileURLToPath(new URL(".", import.meta.url)),
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", ...env },
    timeout: 60_000,
    // node's compile cache log names every module it loads: over spawnSync's 1 MiB default.
    maxBuffer: 64 * 2 ** 20,
  });
}

/** Files node compiled itself (`missed`: no V8 code cache, or TypeScript it stripped) in `log`. */
function missed(log: string): string[] {
  return [
    ...log.matchAll(/no transpile cache for StrippedTypeScript file:\/\/(\S+)/g),
    ...log.matchAll(/V8 code cache for \w+ file:\/\/(\S+) was not initialized/g),
  ].map((match) => match[1]!);
}

describe("the compile cache the agent image is built with", () => {
  let cache: string;
  beforeAll(() => {
    cache = mkdtempSync(join(tmpdir(), "agent-compile-cache-test-"));
    const filled = node([FILL], { NODE_COMPILE_CACHE: cache });
    expect(filled.stderr).toBe("");
    expect(filled.status).toBe(0);
  });
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  it("holds every module the entrypoint and each engine load, so a pod compiles none of them", () => {
    const debug = { NODE_COMPILE_CACHE: cache, NODE_DEBUG_NATIVE: "COMPILE_CACHE" };
    const runs = [
      node([ENTRYPOINT, "--help"], debug),
      ...ENGINE_MODULES.map((specifier) =>
        node(["--input-type=module", "-e", `await import(${JSON.stringify(specifier)})`], debug),
      ),
    ];
    for (const run of runs) expect(run.error ?? run.status).toBe(0);
    const log = runs.map((run) => run.stderr).join("\n");
    expect(log).toContain(`retrieving transpile cache for StrippedTypeScript file://${ENTRYPOINT}...success`);
    // Only the module each check's -e evaluates is new; everything it loads comes from the cache.
    expect(missed(log).filter((file) => !file.endsWith("[eval1]"))).toEqual([]);
  });

  it("lists every module select.ts loads by import()", () => {
    const imported = [...readFileSync(SELECT, "utf8").matchAll(/import\("([^"]+)"\)/g)].map((match) =>
      match[1]!.startsWith(".") ? `./engines/${match[1]!.slice(2)}` : match[1]!,
    );
    expect(imported.length).toBeGreaterThanOrEqual(7);
    expect([...ENGINE_MODULES].sort()).toEqual([...new Set(imported)].sort());
  });

  it("is not filled without NODE_COMPILE_CACHE, and says which variable to set", () => {
    const run = node([FILL], {});
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^NODE_COMPILE_CACHE: /);
  });
});
