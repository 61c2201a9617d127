/**
 * The codex engine as the conformance suite starts it: one `codex app-server` per model endpoint,
 * started before the first case and shared by the cases (each run is its own thread, so cases stay
 * independent while Codex starts once). Retries are short but bounded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import type { AgentRuntime, ToolExecutor } from "../../runtime.ts";
import { createCodexRuntime } from "./engine.ts";
import { CodexHost } from "./host.ts";

/** Starts the engine against `modelUrl`; `create` builds a runtime per case. */
export async function startCodexForConformance(modelUrl: string): Promise<{
  create(setup: { model: string; tools: ToolExecutor }): AgentRuntime;
  close(): Promise<void>;
}> {
  const dir = mkdtempSync(path.join(tmpdir(), "gatehouse-codex-conformance-"));
  const host = new CodexHost({
    dir,
    model: { baseUrl: modelUrl, auth: { apiKey: "unused" }, timeoutMs: 10_000, maxRetries: 2 },
    logger: pino({ level: "silent" }),
  });
  // Every case's model is `scripted/<script>`.
  host.catalog = { slugPrefix: "scripted", contextWindow: 128_000 };
  await host.warm();
  return {
    create: ({ model, tools }) =>
      createCodexRuntime({
        host,
        model,
        tools,
        maxTurns: 20,
        maxToolCalls: 20,
        logger: pino({ level: "silent" }),
      }),
    async close() {
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
