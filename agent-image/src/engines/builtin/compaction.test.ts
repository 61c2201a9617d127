/**
 * The compaction planner: table tests of its choices, and a property test over random growing
 * conversations (parallel calls, reused call ids, huge results, an Approval pending at the end, user
 * messages between answers) planned turn after turn as the engine does: every view pairs each call
 * with its result, keeps the pending call, fits its budget, and summarizes the task.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type ApprovalNote,
  type ChatMessage,
  CUT_MARKER,
  estimateMessage,
  pairingProblems,
  planContext,
  SUMMARY_HEADER,
} from "./compaction.ts";

const system: ChatMessage = { role: "system", content: "You schedule production." };
const user = (content: string): ChatMessage => ({ role: "user", content });
const call = (id: string, name = "aps_schedule_read", args = "{}") => ({
  id,
  type: "function" as const,
  function: { name, arguments: args },
});
const assistant = (content: string | null, ...calls: ReturnType<typeof call>[]): ChatMessage => ({
  role: "assistant",
  content,
  ...(calls.length > 0 ? { tool_calls: calls } : {}),
});
const result = (id: string, content: string): ChatMessage => ({ role: "tool", tool_call_id: id, content });
const total = (messages: ChatMessage[]) => messages.reduce((sum, m) => sum + estimateMessage(m), 0);

function turns(count: number, size = 200): ChatMessage[] {
  return Array.from({ length: count }, (_, index) => [
    assistant(`step ${index}`, call(`c${index}`, "aps_schedule_read", `{"week":${index}}`)),
    result(`c${index}`, `result ${index} `.repeat(size / 10)),
  ]).flat();
}

describe("pairingProblems", () => {
  it("names a result without its call and a call without its result", () => {
    expect(pairingProblems([user("go"), result("x", "orphan")])).toEqual([
      "result x answers no call before it",
    ]);
    expect(pairingProblems([assistant(null, call("a"), call("b")), result("a", "1"), user("next")])).toEqual([
      "call b has no result",
    ]);
  });

  it("counts reused ids, and lets the last turn wait only when asked", () => {
    const reused = [assistant(null, call("a"), call("a")), result("a", "1")];
    expect(pairingProblems([...reused, result("a", "2")])).toEqual([]);
    expect(pairingProblems(reused)).toEqual(["call a has no result"]);
    expect(pairingProblems(reused, { openTail: true })).toEqual([]);
  });
});

describe("planContext", () => {
  it("sends everything unchanged while it fits", () => {
    const messages = [system, user("Push the plan."), ...turns(3)];
    const plan = planContext({ messages, boundary: 0, budget: 10_000, estimate: estimateMessage });
    expect(plan).toMatchObject({ compacted: false, fits: true, boundary: 1, summarizedUnits: 0 });
    expect(plan.messages).toEqual(messages);
  });

  it("summarizes whole older turns, keeps the recent ones, and keeps the boundary while it fits", () => {
    const messages = [system, user("Push the plan back by one day."), ...turns(40)];
    const budget = Math.floor(total(messages) / 3);
    const plan = planContext({ messages, boundary: 0, budget, estimate: estimateMessage });
    expect(plan).toMatchObject({ compacted: true, fits: true });
    expect(plan.tokens).toBeLessThanOrEqual(budget / 2 + budget * 0.2);
    expect(messages[plan.boundary]?.role).toBe("assistant");
    const summary = String(plan.messages[1]?.content);
    expect(summary.startsWith(SUMMARY_HEADER)).toBe(true);
    expect(summary).toContain("Push the plan back by one day.");
    expect(plan.messages.slice(2)).toEqual(messages.slice(plan.boundary));
    // Two more turns still fit: the same boundary, the same summary (a stable prefix).
    const grown = [...messages, ...turns(2)];
    const next = planContext({ messages: grown, boundary: plan.boundary, budget, estimate: estimateMessage });
    expect(next).toMatchObject({ compacted: false, boundary: plan.boundary });
    expect(next.messages[1]).toEqual(plan.messages[1]);
  });

  it("keeps a turn whose Approval is pending whole, and lists decided Approvals in the summary", () => {
    const approvals = new Map<string, ApprovalNote>([
      ["c1", { approval: "apr-early", decided: true, status: "succeeded" }],
      ["p1", { approval: "apr-late", decided: false }],
    ]);
    const messages = [
      system,
      user("Publish it."),
      ...turns(30),
      assistant(
        "Publishing.",
        call("p0", "aps_schedule_publish"),
        call("p1", "aps_schedule_publish", '{"v":2}'),
      ),
      result("p0", "published"),
    ];
    const budget = Math.floor(total(messages) / 4);
    const plan = planContext({ messages, boundary: 0, budget, estimate: estimateMessage, approvals });
    expect(plan.fits).toBe(true);
    expect(plan.messages.slice(-2)).toEqual(messages.slice(-2));
    expect(pairingProblems(plan.messages, { openTail: true })).toEqual([]);
    expect(String(plan.messages[1]?.content)).toContain("decided (succeeded): Approval apr-early");
  });

  it("keeps the latest result per tool and arguments in the summary", () => {
    const messages = [
      system,
      user("Read twice."),
      ...turns(20),
      assistant(null, call("a", "aps_schedule_read", '{"w":1}')),
      result("a", "first read"),
      assistant(null, call("b", "aps_schedule_read", '{"w":1}')),
      result("b", "second read"),
      ...turns(5, 6000),
    ];
    const plan = planContext({ messages, boundary: 0, budget: 8000, estimate: estimateMessage });
    expect(plan.boundary).toBeGreaterThan(messages.length - 10);
    const summary = String(plan.messages[1]?.content);
    expect(summary).toContain("second read");
    expect(summary).not.toContain("first read");
  });

  it("cuts a huge result of the last turn, with a marker, rather than drop it", () => {
    const messages = [
      system,
      user("Read the year."),
      assistant(null, call("y")),
      result("y", "x".repeat(100_000)),
    ];
    const plan = planContext({ messages, boundary: 0, budget: 2000, estimate: estimateMessage });
    expect(plan).toMatchObject({ fits: true, cutResults: 1 });
    expect(String(plan.messages.at(-1)?.content)).toContain(CUT_MARKER);
    expect(pairingProblems(plan.messages)).toEqual([]);
  });

  it("says it does not fit when the latest turn alone is too large", () => {
    const messages = [system, user("Go."), assistant("y".repeat(20_000), call("z")), result("z", "ok")];
    expect(planContext({ messages, boundary: 0, budget: 500, estimate: estimateMessage }).fits).toBe(false);
  });
});

/** One unit of a random conversation. */
type UnitSpec =
  | { kind: "user"; text: string }
  | { kind: "turn"; text: string; calls: { reuse: boolean; size: number; approval: boolean }[] };

const unitArb: fc.Arbitrary<UnitSpec> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("user" as const), text: fc.string({ maxLength: 300 }) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("turn" as const),
      text: fc.string({ maxLength: 200 }),
      calls: fc.array(
        fc.record({
          reuse: fc.boolean(),
          size: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 5_000, max: 60_000 })),
          approval: fc.boolean(),
        }),
        { maxLength: 3 },
      ),
    }),
  },
);

describe("planContext, turn after turn (property)", () => {
  it("never orphans a call or a result, keeps the pending call, fits the budget", () => {
    fc.assert(
      fc.property(
        fc.array(unitArb, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1_500, max: 20_000 }),
        fc.boolean(),
        fc.double({ min: 1, max: 2, noNaN: true }),
        (units, budget, pendingTail, scale) => {
          // Each turn re-plans the whole conversation: estimating a message once (as the engine's
          // own estimate cache does) keeps the 150 runs' CPU time, and so their wall time, small.
          const estimates = new WeakMap<ChatMessage, number>();
          const estimate = (message: ChatMessage) => {
            let tokens = estimates.get(message);
            if (tokens === undefined) {
              tokens = Math.ceil(estimateMessage(message) * scale);
              estimates.set(message, tokens);
            }
            return tokens;
          };
          const messages: ChatMessage[] = [system, user("The task: push the plan back by one day.")];
          const approvals = new Map<string, ApprovalNote>();
          let boundary = 0;
          units.forEach((unit, index) => {
            const last = index === units.length - 1;
            if (unit.kind === "user") messages.push(user(unit.text));
            else {
              const ids = unit.calls.map((spec, position) =>
                spec.reuse ? `t${index}` : `t${index}_${position}`,
              );
              messages.push(
                assistant(
                  unit.text || null,
                  ...ids.map((id) => call(id, "aps_schedule_read", `{"i":${index}}`)),
                ),
              );
              unit.calls.forEach((spec, position) => {
                const id = ids[position]!;
                const pending = last && pendingTail && spec.approval;
                if (spec.approval)
                  approvals.set(id, { approval: `apr-${index}-${position}`, decided: !pending });
                if (!pending) messages.push(result(id, "r".repeat(spec.size)));
              });
            }
            const plan = planContext({ messages, boundary, budget, estimate, approvals });
            expect(pairingProblems(plan.messages, { openTail: true })).toEqual([]);
            expect(plan.fits).toBe(true);
            expect(plan.messages.reduce((sum, m) => sum + estimate(m), 0)).toBeLessThanOrEqual(budget);
            expect(plan.boundary).toBeGreaterThanOrEqual(boundary);
            // The kept part is the conversation's tail, message for message (results maybe cut).
            const kept = plan.messages.slice(plan.messages.length - (messages.length - plan.boundary));
            kept.forEach((message, offset) => {
              const original = messages[plan.boundary + offset]!;
              if (message.role === "tool" && message !== original)
                expect(String(message.content)).toContain(CUT_MARKER);
              else expect(message).toBe(original);
            });
            // A turn still waiting for an Approval is kept, its assistant message included.
            const waiting = [...approvals].filter(([, note]) => !note.decided).map(([id]) => id);
            for (const id of waiting) {
              const sent = plan.messages.some(
                (m) => m.role === "assistant" && (m.tool_calls ?? []).some((c) => c.id === id),
              );
              expect(sent).toBe(true);
            }
            if (plan.boundary > 1) expect(String(plan.messages[1]?.content)).toContain("push the plan back");
            boundary = plan.boundary;
          });
        },
      ),
      { numRuns: 150 },
    );
  });
});
