/**
 * The pi engine as the conformance suite starts it: two Pi processes per model endpoint, started
 * before the first case and shared by the cases (each run loads its own session file, so cases stay
 * independent while Pi starts once). Two, so a case never waits for the previous case's aborted run
 * to settle. Retries are short but bounded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import type { AgentRuntime, ToolExecutor } from "../../runtime.ts";
import { createPiRuntime } from "./engine.ts";
import { PiHost } from "./host.ts";
import { piHostPool } from "./pool.ts";

/** Starts the engine against `modelUrl`; `create` builds a runtime per case. */
export async function startPiForConformance(modelUrl: string): Promise<{
  create(setup: { model: string; tools: ToolExecutor }): AgentRuntime;
  close(): Promise<void>;
}> {
  const dir = mkdtempSync(path.join(tmpdir(), "gatehouse-pi-conformance-"));
  const hosts = ["a", "b"].map(
    (name) =>
      new PiHost({
        dir: path.join(dir, name),
        model: {
          baseUrl: modelUrl,
          auth: { apiKey: "unused" },
          timeoutMs: 10_000,
          maxRetries: 2,
          maxRetryDelayMs: 60_000,
        },
        logger: pino({ level: "silent" }),
      }),
  );
  await Promise.all(hosts.map((host) => host.warm()));
  const pool = piHostPool(hosts);
  return {
    create: ({ model, tools }) =>
      createPiRuntime({
        host: pool,
        model,
        tools,
        maxTurns: 20,
        maxToolCalls: 20,
        logger: pino({ level: "silent" }),
      }),
    async close() {
      await Promise.all(hosts.map((host) => host.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
