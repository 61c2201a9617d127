/**
 * The extension's compactor over requests as Pi sends them: the whole conversation every time. The
 * boundary only moves forward while the requests continue one conversation (also across a reload of
 * the same transcript), a compaction is reported only when it moves, and another conversation starts
 * again from the start.
 */
import { describe, expect, it } from "vitest";
import { type ChatMessage, pairingProblems, SUMMARY_HEADER } from "../builtin/compaction.ts";
import { RequestCompactor } from "./compaction.ts";

const context = { window: 2_000, reserve: 250 };

/** A conversation of `turns` answers, each a call and its result, after the system prompt and task. */
function conversation(turns: number, task = "Read every week of the plan."): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: "system", content: "You check production plans." },
    { role: "user", content: task },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({
      role: "assistant",
      content: `Reading week ${turn}.`,
      tool_calls: [
        { id: `c${turn}`, type: "function", function: { name: "read", arguments: `{"week":${turn}}` } },
      ],
    });
    messages.push({
      role: "tool",
      tool_call_id: `c${turn}`,
      content: `week ${turn}: ${"order ".repeat(40)}`,
    });
  }
  return messages;
}

describe("RequestCompactor", () => {
  it("moves the boundary forward only, reports each move, and keeps calls with their results", () => {
    const compactor = new RequestCompactor();
    let summarized = 0;
    let reports = 0;
    for (let turns = 1; turns <= 80; turns += 1) {
      const { messages, compaction } = compactor.plan(conversation(turns), [], context);
      expect(pairingProblems(messages)).toEqual([]);
      if (compaction) {
        reports += 1;
        expect(compaction.summarizedTurns).toBeGreaterThan(summarized);
        expect(compaction.tokensAfter).toBeLessThanOrEqual(context.window - context.reserve);
        summarized = compaction.summarizedTurns;
        expect(String(messages[1]?.content)).toContain(SUMMARY_HEADER);
      }
    }
    expect(reports).toBeGreaterThan(2);
    // Far fewer compactions than turns: the boundary stays while the view fits.
    expect(reports).toBeLessThan(20);
  });

  it("keeps the boundary when the same conversation comes again (a reload) and restarts for another", () => {
    const compactor = new RequestCompactor();
    let compacted: ChatMessage[] = [];
    for (let turns = 1; turns <= 40; turns += 1)
      compacted = compactor.plan(conversation(turns), [], context).messages;
    expect(String(compacted[1]?.content)).toContain(SUMMARY_HEADER);
    const again = compactor.plan(conversation(40), [], context);
    expect(again.compaction).toBeUndefined();
    expect(again.messages).toEqual(compacted);

    // Another conversation as long: its own summary, not the first one's.
    const other = compactor.plan(conversation(40, "Another session's task."), [], context);
    expect(other.compaction).toBeDefined();
    expect(String(other.messages[1]?.content)).toContain("Another session's task.");
  });

  it("compacts sooner once the endpoint counts more tokens than estimated", () => {
    const first = new RequestCompactor();
    const scaled = new RequestCompactor();
    const at = (compactor: RequestCompactor, observe: boolean) => {
      for (let turns = 1; turns <= 80; turns += 1) {
        const { compaction } = compactor.plan(conversation(turns), [], context);
        if (compaction) return turns;
        if (observe) compactor.observeUsage(10_000);
      }
      return Infinity;
    };
    expect(at(scaled, true)).toBeLessThan(at(first, false));
  });
});
