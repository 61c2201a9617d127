/** What the gateway stores of an agent's event, and the model window it tells the agent. */
import { describe, expect, it } from "vitest";
import { AgentEvent, DEFAULT_CONTEXT_WINDOW, SessionView } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import { ModelEndpoint } from "../config-environment.ts";
import { auditedAgentEvent, modelView, storedAgentEvent } from "./agent-events.ts";

const compaction = {
  reason: "window" as const,
  summarizedTurns: 40,
  keptTurns: 6,
  tokensBefore: 3_900,
  tokensAfter: 1_800,
  window: 4_000,
};

describe("storedAgentEvent", () => {
  it("stores a compaction with its report, once per turn, reason and size", () => {
    const event = AgentEvent.parse({ kind: "compaction", turn: 12, compaction });
    expect(storedAgentEvent(event)).toEqual({
      payload: { turn: 12, compaction },
      dedupeKey: "compaction:12:window:3900",
    });
    const later = storedAgentEvent({ ...event, turn: 30 });
    expect(later.dedupeKey).not.toBe(storedAgentEvent(event).dedupeKey);
  });

  it("stores other events as before, without a dedupe key", () => {
    const event = AgentEvent.parse({
      kind: "final_answer",
      turn: 3,
      text: "Done.",
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    expect(storedAgentEvent(event)).toEqual({
      payload: { turn: 3, text: "Done.", inputTokens: 10, outputTokens: 2 },
    });
  });
});

describe("modelView", () => {
  const endpoint = (extra: object) =>
    ModelEndpoint.parse({ name: "e", baseURL: "https://models.example/v1", ...extra });

  it("names the endpoint's context window, else the default", () => {
    expect(modelView("m", endpoint({ contextWindow: 32_768 }))).toEqual({ name: "m", contextWindow: 32_768 });
    expect(modelView("m", endpoint({}))).toEqual({ name: "m", contextWindow: DEFAULT_CONTEXT_WINDOW });
    expect(modelView("m", undefined).contextWindow).toBe(DEFAULT_CONTEXT_WINDOW);
  });

  it("an older gateway's view without a window reads as the default at the agent", () => {
    const older = {
      namespace: "n",
      name: "s",
      uid: "u",
      subject: { user: "alice", groups: [] },
      instructions: "",
      messages: [],
      model: { name: "m" },
      tools: [],
      history: [],
      historyComplete: true,
      limits: { maxTurns: 1, maxToolCalls: 1, holdPodForSeconds: 0 },
    };
    expect(SessionView.parse(older).model.contextWindow).toBe(DEFAULT_CONTEXT_WINDOW);
  });

  it("refuses a window too small to hold a conversation", () => {
    expect(() => endpoint({ contextWindow: 100 })).toThrow();
  });
});

const session = {
  metadata: { name: "plan-week", namespace: "team-a", uid: "uid-1" },
  spec: { subject: { user: "alice", groups: [] }, engine: "codex" },
} as unknown as AgentSession;

describe("an agent's report of a request its engine raised and it declined", () => {
  it("is kept in the transcript and becomes engine.approval_declined in the subject's name, naming only the request", () => {
    const event = AgentEvent.parse({
      kind: "approval_declined",
      turn: 3,
      declined: { request: "item/fileChange/requestApproval" },
    });
    expect(storedAgentEvent(event).payload).toEqual({
      turn: 3,
      declined: { request: "item/fileChange/requestApproval" },
    });
    expect(auditedAgentEvent(event, session, 42)).toEqual({
      kind: "engine.approval_declined",
      actor: "alice",
      outcome: "failure",
      sessionUid: "uid-1",
      atMicros: 42,
      payload: {
        session: "team-a/plan-week",
        engine: "codex",
        request: "item/fileChange/requestApproval",
        turn: 3,
      },
    });
  });

  it("is the only agent event the chain keeps", () => {
    const text = AgentEvent.parse({ kind: "assistant_text", turn: 0, text: "Reading the plan." });
    expect(auditedAgentEvent(text, session, 42)).toBeUndefined();
  });

  it.each([
    [{ kind: "approval_declined", turn: 0 }],
    [{ kind: "approval_declined", turn: 0, declined: { request: "run `rm -rf /`" } }],
    [{ kind: "approval_declined", turn: 0, declined: { request: "a".repeat(129) } }],
    [{ kind: "approval_declined", turn: 0, declined: { request: "x", command: "curl evil" } }],
    [{ kind: "assistant_text", turn: 0, declined: { request: "x" } }],
  ])("refuses %j", (body) => {
    expect(AgentEvent.safeParse(body).success).toBe(false);
  });
});
