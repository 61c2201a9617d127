import type { HistoryEntry } from "@gatehouse/operator/agent-protocol";
import { describe, expect, it } from "vitest";
import { planResume } from "./transcript.ts";

const task = { text: "Push next week's production plan back by one day." };
let seq = 0;
function entry(source: HistoryEntry["source"], kind: string, payload: Record<string, unknown>): HistoryEntry {
  seq += 1;
  return { seq, source, kind, payload };
}
const call = (turn: number, position: number, tool: string) =>
  entry("core", "tool_call", { turn, position, callId: `c${turn}${position}`, tool, arguments: "{}" });
const result = (turn: number, position: number, content: string) =>
  entry("core", "tool_result", { turn, callId: `c${turn}${position}`, status: "succeeded", content });

describe("planResume", () => {
  it("starts a fresh session by sending the first message", () => {
    expect(planResume({ messages: [task], history: [] })).toEqual({
      history: [],
      next: task.text,
      done: false,
      skipped: 0,
    });
  });

  it("continues a session whose last turn waits for a tool result, keeping entries grouped by turn", () => {
    const plan = planResume({
      messages: [task],
      history: [
        call(0, 0, "aps_schedule_read"),
        entry("agent", "assistant_text", { turn: 0, text: "Reading." }),
        result(0, 0, "plan"),
        call(1, 1, "aps_schedule_draft"),
        call(1, 0, "aps_schedule_read"),
        result(1, 1, "draft"),
        result(1, 0, "plan again"),
        call(2, 0, "aps_schedule_publish"),
      ],
    });
    expect(plan.next).toBeUndefined();
    expect(plan.done).toBe(false);
    expect(
      plan.history.map((item) => (item.role === "tool" ? `tool ${item.turn}.${item.position}` : item.role)),
    ).toEqual(["user", "assistant", "tool 0.0", "assistant", "tool 1.0", "tool 1.1", "assistant"]);
    expect(plan.history[1]).toMatchObject({ role: "assistant", turn: 0, text: "Reading." });
  });

  it("places message k after the k-th final answer and sends the first unanswered message", () => {
    const plan = planResume({
      messages: [task, { text: "And the week after?" }, { text: "Thanks." }],
      history: [
        entry("agent", "final_answer", { turn: 0, text: "Done." }),
        entry("agent", "final_answer", { turn: 1, text: "Also done." }),
      ],
    });
    expect(plan.history).toEqual([
      { role: "user", text: task.text },
      { role: "assistant", turn: 0, text: "Done.", calls: [] },
      { role: "user", text: "And the week after?" },
      { role: "assistant", turn: 1, text: "Also done.", calls: [] },
    ]);
    expect(plan).toMatchObject({ next: "Thanks.", done: false });
  });

  it("treats a pending approval as no result until its approval_outcome arrives", () => {
    const history = [
      call(0, 0, "aps_schedule_publish"),
      entry("core", "tool_result", {
        turn: 0,
        callId: "c00",
        status: "pending_approval",
        content: "waiting",
        approval: "apr-1",
      }),
    ];
    const waiting = planResume({ messages: [task], history });
    expect(waiting.history.filter((item) => item.role === "tool")).toEqual([]);
    const decided = planResume({
      messages: [task],
      history: [
        ...history,
        entry("core", "approval_outcome", { approval: "apr-1", status: "succeeded", content: "ok" }),
      ],
    });
    expect(decided.history.at(-1)).toMatchObject({ role: "tool", turn: 0, position: 0, content: "ok" });
  });

  it("replays a person's resolution instead of the unknown outcome it settled", () => {
    const plan = planResume({
      messages: [task],
      history: [
        call(0, 0, "aps_schedule_publish"),
        entry("core", "tool_result", {
          turn: 0,
          callId: "c00",
          status: "unknown",
          content: "unknown",
          approval: "apr-1",
        }),
        entry("core", "approval_outcome", { approval: "apr-1", status: "succeeded", content: "resolved" }),
      ],
    });
    expect(plan.history.at(-1)).toMatchObject({ role: "tool", turn: 0, position: 0, content: "resolved" });
  });

  it("has nothing to do when every message has its final answer", () => {
    const plan = planResume({
      messages: [task],
      history: [entry("agent", "final_answer", { turn: 0, text: "Done." })],
    });
    expect(plan).toMatchObject({ next: undefined, done: true });
  });

  it("skips entries whose payload has an unexpected shape and counts them", () => {
    const plan = planResume({ messages: [task], history: [entry("core", "tool_call", { turn: "zero" })] });
    expect(plan.skipped).toBe(1);
  });
});
