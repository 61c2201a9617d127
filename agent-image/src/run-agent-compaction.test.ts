/**
 * `runAgent` reports an engine's compaction to the gateway as a `compaction` event (so the transcript
 * marks where it happened), and a refused report does not end the run.
 */
import type { AgentEvent } from "@gatehouse/operator/agent-protocol";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { AgentSessionView, GatewayClient } from "./gateway-client.ts";
import { runAgent } from "./run-agent.ts";
import type { AgentRuntime, RuntimeEvent } from "./runtime.ts";

const view: AgentSessionView = {
  namespace: "plant-a",
  name: "s1",
  uid: "uid-1",
  subject: { user: "alice", groups: [] },
  instructions: "",
  messages: [{ text: "Read every week." }],
  model: { name: "m", contextWindow: 4_000 },
  tools: [],
  history: [],
  historyComplete: true,
  limits: { maxTurns: 10, maxToolCalls: 10, holdPodForSeconds: 60 },
};

const compaction = {
  reason: "window" as const,
  summarizedTurns: 12,
  keptTurns: 3,
  tokensBefore: 3_900,
  tokensAfter: 1_700,
  window: 4_000,
};

/** A runtime whose engine compacts before its final answer; a gateway that refuses what `refuse` names. */
async function runWith(refuse: (event: AgentEvent) => boolean) {
  const posted: AgentEvent[] = [];
  const gateway: GatewayClient = {
    getSession: async () => view,
    postEvent: async (event) => {
      if (refuse(event)) throw Object.assign(new Error("over the intake limit"), { kind: "limit_exceeded" });
      posted.push(event);
    },
    invoke: async () => {
      throw new Error("no tools here");
    },
    waitApproval: async () => {
      throw new Error("no approvals here");
    },
  };
  const events: RuntimeEvent[] = [
    { type: "compaction", turn: 4, ...compaction },
    {
      type: "turn_end",
      turn: 4,
      text: "Done.",
      toolCalls: 0,
      final: true,
      usage: { inputTokens: 1, outputTokens: 1 },
    },
  ];
  const runtime: AgentRuntime = {
    createSession: () => ({
      async *send() {
        yield* events;
      },
      abort() {},
    }),
  };
  const code = await runAgent({
    gateway,
    createRuntime: () => runtime,
    logger: pino({ level: "silent" }),
    signal: new AbortController().signal,
  });
  return { code, posted };
}

describe("runAgent and compaction", () => {
  it("posts a compaction event before the final answer", async () => {
    const { code, posted } = await runWith(() => false);
    expect(code).toBe(0);
    expect(posted.map((event) => event.kind)).toEqual(["compaction", "final_answer"]);
    expect(posted[0]).toEqual({ kind: "compaction", turn: 4, compaction });
  });

  it("goes on when the gateway refuses the report", async () => {
    const { code, posted } = await runWith((event) => event.kind === "compaction");
    expect(code).toBe(0);
    expect(posted.map((event) => event.kind)).toEqual(["final_answer"]);
  });
});
