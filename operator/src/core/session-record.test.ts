import { describe, expect, it } from "vitest";
import { EMPTY_SESSION_RECORD_STATE, foldEvents, sessionRecordOf } from "./session-record.ts";

describe("sessionRecordOf", () => {
  it("counts tool calls, successful writes and usage, and keeps the last final answer", () => {
    const record = sessionRecordOf([
      { seq: 1, source: "agent", kind: "tool_call", payload: { turn: 0 } },
      {
        seq: 2,
        source: "core",
        kind: "tool_result",
        payload: { turn: 0, status: "succeeded", effect: "read" },
      },
      { seq: 3, source: "agent", kind: "tool_call", payload: { turn: 1 } },
      {
        seq: 4,
        source: "core",
        kind: "approval_outcome",
        payload: { turn: 1, status: "succeeded", effect: "write" },
      },
      { seq: 5, source: "core", kind: "usage", payload: { inputTokens: 10, outputTokens: 4 } },
      { seq: 6, source: "agent", kind: "final_answer", payload: { turn: 2, text: "done" } },
      { seq: 7, source: "agent", kind: "compaction", payload: { turn: 2 } },
      // Only the agent reports compactions.
      { seq: 8, source: "core", kind: "compaction", payload: { turn: 2 } },
    ]);
    expect(record).toEqual({
      turns: 3,
      toolCalls: 2,
      writes: 1,
      releases: 0,
      compactions: 1,
      // The agent's four events: {"turn":0}, {"turn":1}, {"turn":2,"text":"done"}, {"turn":2}.
      agentEvents: 4,
      agentEventBytes: 10 + 10 + 24 + 10,
      usage: { inputTokens: 10, outputTokens: 4 },
      finalAnswer: "done",
      finalAnswers: 1,
    });
  });

  it("counts final answers by turn: a final_answer posted twice (a retried POST) answers one message", () => {
    const answer = (seq: number, turn: number) => ({
      seq,
      source: "agent" as const,
      kind: "final_answer",
      payload: { turn, text: `answer ${turn}` },
    });
    const record = sessionRecordOf([answer(1, 0), answer(2, 0), answer(3, 1)]);
    expect(record).toMatchObject({ finalAnswers: 2, finalAnswer: "answer 1" });
    const split = foldEvents(foldEvents(EMPTY_SESSION_RECORD_STATE, [answer(1, 0)]), [
      answer(2, 0),
      answer(3, 1),
    ]);
    expect(split.record).toEqual(record);
  });

  it("counts only the usage the model proxy metered, never what the agent reports", () => {
    const record = sessionRecordOf([
      { seq: 1, source: "core", kind: "usage", payload: { inputTokens: 100, outputTokens: 20 } },
      { seq: 2, source: "agent", kind: "usage", payload: { turn: 0, inputTokens: 1, outputTokens: 1 } },
      {
        seq: 3,
        source: "agent",
        kind: "final_answer",
        payload: { turn: 0, text: "done", inputTokens: 1, outputTokens: 1 },
      },
      { seq: 4, source: "core", kind: "usage", payload: { inputTokens: 50, outputTokens: 5 } },
    ]);
    expect(record.usage).toEqual({ inputTokens: 150, outputTokens: 25 });
    expect(record.turns).toBe(1);
  });

  it("keeps the proxy's budget refusal", () => {
    const record = sessionRecordOf([
      { seq: 1, source: "agent", kind: "budget_exceeded", payload: { message: "forged" } },
      { seq: 2, source: "core", kind: "budget_exceeded", payload: { message: "Token budget exhausted" } },
    ]);
    expect(record.budgetExceeded).toBe("Token budget exhausted");
  });

  it("ignores a final answer that does not come from the agent", () => {
    expect(
      sessionRecordOf([{ seq: 1, source: "core", kind: "final_answer", payload: { text: "x" } }]).finalAnswer,
    ).toBeUndefined();
  });
});

describe("folding in parts", () => {
  it("gives the same record as folding everything at once, and skips events already folded", () => {
    const events = [
      { seq: 1, source: "agent" as const, kind: "tool_call", payload: { turn: 0 } },
      {
        seq: 2,
        source: "core" as const,
        kind: "tool_result",
        payload: { turn: 0, status: "pending_approval", effect: "write", executionId: "e1" },
      },
      {
        seq: 3,
        source: "core" as const,
        kind: "approval_outcome",
        payload: { status: "succeeded", effect: "write", executionId: "e1" },
      },
      {
        seq: 4,
        source: "agent" as const,
        kind: "usage",
        payload: { turn: 1, inputTokens: 3, outputTokens: 2 },
      },
    ];
    const first = foldEvents(EMPTY_SESSION_RECORD_STATE, events.slice(0, 2));
    const second = foldEvents(first, events.slice(1));
    expect(second.record).toEqual(sessionRecordOf(events));
    expect(second.lastSeq).toBe(4);
    expect(first.record.turns).toBe(1);
  });
});

describe("releases", () => {
  it("count the agent's released events, and only the agent's", () => {
    const record = sessionRecordOf([
      { seq: 1, source: "agent", kind: "released", payload: { turn: 2 } },
      { seq: 2, source: "core", kind: "released", payload: { turn: 2 } },
      { seq: 3, source: "agent", kind: "released", payload: { turn: 3 } },
    ]);
    expect(record.releases).toBe(2);
  });
});
