import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, ToolExecutor } from "../../runtime.ts";
import { alive } from "../subprocess/test-support.ts";
import { createCodexRuntime } from "./engine.ts";
import { CodexHost } from "./host.ts";

/** Codex as a process: it dies with the agent, and a Codex that dies mid-run ends the run, not the pod. */
const dir = mkdtempSync(path.join(tmpdir(), "gatehouse-codex-process-"));
let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
});
afterAll(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function collect(events: AsyncIterable<RuntimeEvent>): Promise<RuntimeEvent[]> {
  const all: RuntimeEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe("the codex process", { timeout: 40_000 }, () => {
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
      parent.once("exit", (code) => reject(new Error(`the parent exited (${code}) before starting codex`)));
    });
    expect(alive(pid)).toBe(true);
    parent.kill("SIGKILL");
    await expect.poll(() => alive(pid), { timeout: 10_000, interval: 100 }).toBe(false);
  });

  it("ends a run whose Codex was killed with a retryable error naming how, and starts a new Codex for the next run", async () => {
    writeFileSync(
      path.join(dir, "killed.yaml"),
      JSON.stringify({
        steps: [
          { call: [{ tool: "plan_read", arguments: { planId: "plan-1" }, id: "read_1" }] },
          { wait: "previous", say: "Read it." },
        ],
      }),
    );
    const host = new CodexHost({
      dir: path.join(dir, "killed"),
      model: { baseUrl: model.url, auth: { apiKey: "k" }, timeoutMs: 10_000, maxRetries: 0 },
      logger: pino({ level: "silent" }),
      restart: { initialDelayMs: 10, maxDelayMs: 10, resetAfterMs: 60_000 },
    });
    // The first call waits for an approval; Codex is killed meanwhile.
    let first = true;
    const executor: ToolExecutor = {
      invoke: async () => {
        if (!first) return { kind: "done", status: "succeeded", content: '{"planId":"plan-1"}' };
        first = false;
        return {
          kind: "pending_approval",
          approval: "apr-1",
          wait: (signal) =>
            new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
        };
      },
    };
    const runtime = createCodexRuntime({
      host,
      model: "scripted/killed",
      tools: executor,
      maxTurns: 5,
      maxToolCalls: 5,
      logger: pino({ level: "silent" }),
    });
    const session = () =>
      runtime.createSession({
        subject: { user: "alice", groups: [] },
        system: "You schedule production.",
        tools: [{ name: "plan_read", description: "read a plan", parameters: { type: "object" } }],
        history: [],
      });
    try {
      const events: RuntimeEvent[] = [];
      for await (const event of session().send("Read the plan.")) {
        events.push(event);
        if (event.type === "approval_required") process.kill(host.pid!, "SIGKILL");
      }
      expect(events.at(-1)).toMatchObject({
        type: "error",
        kind: "unavailable",
        message: expect.stringMatching(/^codex was killed by SIGKILL/),
      });
      expect(events.at(-1)).not.toHaveProperty("final");
      const again = await collect(session().send("Read the plan."));
      expect(again.at(-1)).toMatchObject({ type: "turn_end", final: true, text: "Read it." });
    } finally {
      await host.close();
    }
  });
});
