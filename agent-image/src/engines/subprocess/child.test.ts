import { describe, expect, it } from "vitest";
import { type ChildSpec, describeExit, EngineProcessError, startChild } from "./child.ts";
import { alive } from "./test-support.ts";

/** A Node child running `code`; ready once it prints its first line. */
function nodeChild(code: string, overrides: Partial<ChildSpec> = {}, lines: string[] = []): ChildSpec {
  let first: (() => void) | undefined;
  const firstLine = new Promise<void>((resolve) => {
    first = resolve;
  });
  return {
    name: "fake",
    command: process.execPath,
    args: ["-e", code],
    env: { PATH: process.env.PATH ?? "" },
    startTimeoutMs: 5000,
    stopGraceMs: 200,
    onLine: (line) => {
      lines.push(line);
      first?.();
    },
    ready: () => firstLine,
    ...overrides,
  };
}

/** Echoes stdin lines back, prefixed; ends when stdin ends. */
const ECHO = `console.log("ready"); process.stdin.on("data", (d) => process.stdout.write("echo " + d)); process.stdin.on("end", () => process.exit(0));`;

describe("startChild", () => {
  it("starts, exchanges lines and ends with exit code 0 when its stdin closes", async () => {
    const lines: string[] = [];
    const child = await startChild(nodeChild(ECHO, {}, lines));
    expect(child.running).toBe(true);
    child.write("hello\u2028there\n");
    await expect.poll(() => lines).toEqual(["ready", "echo hello\u2028there"]);
    const exit = await child.stop();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(child.running).toBe(false);
  });

  it("gives up after the start timeout and kills the child", async () => {
    let pid = 0;
    const spec = nodeChild(`setInterval(() => {}, 1000); process.stdin.resume();`, {
      startTimeoutMs: 300,
      ready: async (child) => {
        pid = child.pid;
        await new Promise(() => {});
      },
    });
    const started = Date.now();
    const failure = await startChild(spec).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineProcessError);
    expect(failure).toMatchObject({ kind: "timeout", message: "fake did not start within 300 ms" });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
  });

  it("reports a crash while starting with its exit code and the end of stderr", async () => {
    const spec = nodeChild(
      `process.stderr.write("x".repeat(10000) + "\\nmodels.json is invalid\\n"); process.exit(3);`,
      {
        stderrTailBytes: 64,
      },
    );
    const failure = (await startChild(spec).catch((error: unknown) => error)) as EngineProcessError;
    expect(failure.kind).toBe("unavailable");
    expect(failure.exit).toMatchObject({ code: 3, signal: null });
    expect(failure.exit!.stderrTail.length).toBeLessThanOrEqual(64);
    expect(failure.message).toContain("fake exited with code 3; stderr ends: ");
    expect(failure.message).toContain("models.json is invalid");
  });

  it("escalates to SIGTERM, then SIGKILL, for a child that ignores its stdin and SIGTERM", async () => {
    const child = await startChild(
      nodeChild(
        `process.on("SIGTERM", () => {}); process.stdin.resume(); setInterval(() => {}, 1000); console.log("ready");`,
      ),
    );
    const started = Date.now();
    const exit = await child.stop();
    expect(exit.signal).toBe("SIGKILL");
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    expect(describeExit("fake", exit)).toBe("fake was killed by SIGKILL (no stderr)");
  });

  it("stops starting when the caller aborts, and kills the child", async () => {
    const controller = new AbortController();
    let pid = 0;
    const spec = nodeChild(`process.stdin.resume();`, {
      ready: async (child) => {
        pid = child.pid;
        controller.abort(new Error("the run was cancelled"));
        await new Promise(() => {});
      },
    });
    await expect(startChild(spec, controller.signal)).rejects.toThrow("the run was cancelled");
    expect(alive(pid)).toBe(false);
  });

  it("fails for a command that does not exist", async () => {
    const spec = nodeChild("", { command: "/nonexistent/engine-binary" });
    await expect(startChild(spec)).rejects.toMatchObject({ kind: "unavailable" });
  });
});
