import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { declaredFailpoints, FAILPOINTS } from "./core/failpoints.ts";
// Loading both programs loads every module that declares a failpoint site.
import "./programs/controller.ts";
import "./programs/gateway.ts";

describe("the failpoint list", () => {
  it("has code reaching every listed point, and no site outside the list", () => {
    expect([...declaredFailpoints()].sort()).toEqual(Object.keys(FAILPOINTS).sort());
  });
});

/**
 * Starts a process that ticks every 50 ms and reaches `dispatch.after-claim` (armed with `action`) after
 * 200 ms. Resolves 500 ms after it said it reaches the point (or once it ended), with what it printed
 * and how it ended (`signal` null: still running, then killed here).
 */
async function reachInChild(action: "exit" | "block") {
  const trigger = new URL("./failpoints.ts", import.meta.url).href;
  const points = new URL("./core/failpoints.ts", import.meta.url).href;
  const program = `
    const { failpointTrigger } = await import(${JSON.stringify(trigger)});
    const { parseFailpoints } = await import(${JSON.stringify(points)});
    const log = { warn() {}, flush() {} };
    const reach = failpointTrigger(parseFailpoints("dispatch.after-claim=${action}"), log);
    let ticks = 0;
    setInterval(() => console.log("tick", ++ticks), 50);
    setTimeout(() => { console.log("reaching"); reach("dispatch.after-claim"); console.log("passed"); }, 200);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", program], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ended = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("exit", (_code, signal) => resolve(signal)),
  );
  const reached = new Promise<void>((resolve) =>
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes("reaching")) resolve();
    }),
  );
  await Promise.race([reached, ended]);
  const signal = await Promise.race([
    ended,
    new Promise<null>((resolve) => setTimeout(() => resolve(null), 500)),
  ]);
  child.kill("SIGKILL");
  return { signal, stdout, stderr };
}

describe("an armed failpoint", () => {
  it("exit: SIGKILLs the process at the point, saying which", async () => {
    const run = await reachInChild("exit");
    expect(run.signal).toBe("SIGKILL");
    expect(run.stdout).toContain("reaching");
    expect(run.stdout).not.toContain("passed");
    expect(run.stderr).toContain("gatehouse: failpoint dispatch.after-claim reached; SIGKILL");
  });

  it("block: stops the whole process at the point — it lives on, and no timer fires after it", async () => {
    const run = await reachInChild("block");
    expect(run.signal).toBeNull();
    expect(run.stdout.slice(run.stdout.indexOf("reaching"))).toBe("reaching\n");
    expect(run.stderr).toContain("gatehouse: failpoint dispatch.after-claim reached; blocking");
  });
});
