import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { EngineProcessError } from "../subprocess/child.ts";
import { alive } from "../subprocess/test-support.ts";
import { loadEmptySession, offlineHost } from "./offline-host.ts";

/** Pi as a process: it dies with the agent, and a start that takes too long is given up. */
const dir = mkdtempSync(path.join(tmpdir(), "gatehouse-pi-process-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the pi process", { timeout: 40_000 }, () => {
  it("ends when the agent process is SIGKILLed (its stdin closes)", async () => {
    const fixture = fileURLToPath(new URL("./watchdog-parent.fixture.ts", import.meta.url));
    const parent = spawn(process.execPath, [fixture, path.join(dir, "watchdog")], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = "";
      parent.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(Number(out.trim()));
      });
      parent.once("exit", (code) => reject(new Error(`the parent exited (${code}) before starting pi`)));
    });
    expect(alive(pid)).toBe(true);
    parent.kill("SIGKILL");
    await expect.poll(() => alive(pid), { timeout: 10_000, interval: 100 }).toBe(false);
  });

  it("gives up a start that takes longer than the start timeout, and leaves no process behind", async () => {
    const host = offlineHost(path.join(dir, "slow"), { startTimeoutMs: 50 });
    const failure = await loadEmptySession(host).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineProcessError);
    expect(failure).toMatchObject({ kind: "timeout", message: "pi did not start within 50 ms" });
    expect(host.pid).toBeUndefined();
    await host.close();
  });
});
