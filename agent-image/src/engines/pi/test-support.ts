/**
 * What the Pi engine's tests share: a scripted model (real HTTP) with scripts written per test into a
 * folder of the file's own, one Pi host per file, and an in-memory executor that records what it was
 * handed and answers like Core.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type RecordedRequest, type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { pino } from "pino";
import type {
  RuntimeEvent,
  RuntimeTool,
  ToolAnswer,
  ToolCallRequest,
  ToolExecutor,
  ToolInvocation,
} from "../../runtime.ts";
import { createPiRuntime, type PiRuntimeOptions } from "./engine.ts";
import { PiHost, type PiHostOptions } from "./host.ts";

export const SYSTEM = "You schedule production.";

export const tools: RuntimeTool[] = ["plan_read", "plan_draft", "plan_publish"].map((name) => ({
  name,
  description: `${name} of the production plan`,
  parameters: { type: "object", properties: { planId: { type: "string" } } },
}));

/** An executor that answers every call `succeeded` (or as `decide` says); `pending` tools need an approval. */
export function memoryExecutor(
  options: { pending?: string[]; decide?: (call: ToolCallRequest) => ToolAnswer } = {},
) {
  const invoked: ToolCallRequest[] = [];
  const waits: string[] = [];
  const executor: ToolExecutor = {
    async invoke(call, { signal }): Promise<ToolInvocation> {
      invoked.push(call);
      const answer = options.decide?.(call) ?? {
        status: "succeeded",
        content: `{"result":"${call.name} ${call.callId}"}`,
      };
      if (!options.pending?.includes(call.name)) return { kind: "done", ...answer };
      const approval = `apr-${call.turn}-${call.position}`;
      return {
        kind: "pending_approval",
        approval,
        wait: async (waitSignal) => {
          waits.push(approval);
          if (waitSignal.aborted || signal.aborted) throw new Error("aborted");
          return answer;
        },
      };
    },
  };
  return { executor, invoked, waits };
}

/** A scripted model and a Pi host for one test file: call in the file's top level. */
export function piWorld(
  hooks: { beforeAll(fn: () => Promise<void>): void; afterAll(fn: () => Promise<void>): void },
  hostOptions: Partial<PiHostOptions> = {},
) {
  let model: ScriptedModel | undefined;
  let host: PiHost | undefined;
  let dir = "";
  let scripts = 0;
  hooks.beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "gatehouse-pi-"));
    model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
    host = new PiHost({
      dir: path.join(dir, "pi"),
      model: {
        baseUrl: model.url,
        auth: { apiKey: "test-key" },
        timeoutMs: 10_000,
        maxRetries: 1,
        maxRetryDelayMs: 5000,
      },
      logger: pino({ level: "silent" }),
      ...hostOptions,
    });
  });
  hooks.afterAll(async () => {
    await host?.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const running = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the world is not started");
    return value;
  };
  return {
    model: () => running(model),
    host: () => running(host),
    dir: () => dir,
    /** Writes a script of `steps` and returns its model name. */
    script(steps: unknown[]): string {
      scripts += 1;
      writeFileSync(path.join(dir, `pi-${scripts}.yaml`), JSON.stringify({ steps }));
      return `scripted/pi-${scripts}`;
    },
    runtime(model: string, executor: ToolExecutor, overrides: Partial<PiRuntimeOptions> = {}) {
      return createPiRuntime({
        host: running(host),
        model,
        tools: executor,
        maxTurns: 20,
        maxToolCalls: 20,
        logger: pino({ level: "silent" }),
        ...overrides,
      });
    },
    requests(): RecordedRequest[] {
      return running(model)
        .requests()
        .filter((request) => request.path === "/v1/chat/completions");
    },
  };
}

export async function collect(events: AsyncIterable<RuntimeEvent>): Promise<RuntimeEvent[]> {
  const all: RuntimeEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** `type` and, where there is one, `callId` of each event but text deltas. */
export function shape(events: RuntimeEvent[]): string[] {
  return events.flatMap((e) =>
    e.type === "text"
      ? []
      : [`${e.type}${"callId" in e ? ` ${e.callId}` : ""}${"turn" in e ? ` @${e.turn}` : ""}`],
  );
}
