/** Tool cases: a receipt, parallel calls, malformed calls, a denial and a business refusal. */
import { expect } from "vitest";
import { conversationOf, expectValidConversation, type Harness, run } from "../harness.ts";
import { receiptOf } from "../tool-executor.ts";
import { turnEnds } from "./conversation.ts";

const read = (planId: string, id?: string) => ({
  tool: "plan_read",
  arguments: { planId },
  ...(id ? { id } : {}),
});

export function toolCases(h: Harness): void {
  h.it("hands a call to the executor once and gives its receipt to the model byte for byte", async () => {
    const world = h.world([
      { call: [read("plan-2026-w49", "call_read")] },
      { wait: "previous", say: "Version {{last.version}}." },
    ]);
    const events = await run(world, world.session([]), "Which version is the plan?");
    expect(world.executor.invoked).toEqual([
      {
        turn: 0,
        position: 0,
        callId: "call_read",
        name: "plan_read",
        arguments: '{"planId":"plan-2026-w49"}',
      },
    ]);
    const receipt = receiptOf({ name: "plan_read", callId: "call_read" });
    expect(events).toContainEqual({
      type: "tool_result",
      turn: 0,
      position: 0,
      callId: "call_read",
      name: "plan_read",
      status: "succeeded",
      content: receipt,
    });
    expect(conversationOf(h.requests()[1]!).results).toEqual([{ id: "call_read", content: receipt }]);
    expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "Version 7." });
  });

  h.it("runs parallel calls (deltas interleaved) each once and answers every one", async () => {
    const world = h.world([
      {
        call: [
          read("w49", "a"),
          read("w50", "b"),
          { tool: "plan_draft", arguments: { planId: "w49", shiftDays: 1 }, id: "c" },
        ],
        faults: [{ kind: "interleave_calls" }],
      },
      { wait: "previous", say: "Done." },
    ]);
    const events = await run(world, world.session([]), "Read both weeks and draft.");
    expect(world.executor.invoked.map((c) => [c.position, c.callId, c.name, c.arguments]).sort()).toEqual([
      [0, "a", "plan_read", '{"planId":"w49"}'],
      [1, "b", "plan_read", '{"planId":"w50"}'],
      [2, "c", "plan_draft", '{"planId":"w49","shiftDays":1}'],
    ]);
    expect(world.executor.executions).toHaveLength(3);
    const next = conversationOf(h.requests()[1]!);
    expect(next.calls.map((c) => c.id)).toEqual(["a", "b", "c"]);
    expect(new Map(next.results.map((r) => [r.id, r.content]))).toEqual(
      new Map(
        ["a", "b", "c"].map((id, i) => [
          id,
          receiptOf({ name: i < 2 ? "plan_read" : "plan_draft", callId: id }),
        ]),
      ),
    );
    expectValidConversation(h.requests()[1]!);
    expect(turnEnds(events)).toMatchObject([
      { turn: 0, toolCalls: 3 },
      { turn: 1, final: true, text: "Done." },
    ]);
  });

  h.it(
    "answers a call cut off mid-arguments with an error, runs nothing, and lets the model correct it",
    async () => {
      const world = h.world([
        { call: [read("plan-2026-w49", "cut")], faults: [{ kind: "truncate_arguments", keepChars: 6 }] },
        {
          wait: "previous",
          choose: [
            { when: { lastToolContains: "Invalid" }, call: [read("plan-2026-w49", "fixed")] },
            { say: "No error came back." },
          ],
        },
        { wait: "previous", say: "Read it." },
      ]);
      const events = await run(world, world.session([]), "Read the plan.");
      expect(world.executor.invoked.map((c) => [c.callId, c.arguments])).toEqual([
        ["cut", '{"plan'],
        ["fixed", '{"planId":"plan-2026-w49"}'],
      ]);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["fixed"]);
      expect(events.find((e) => e.type === "tool_result" && e.callId === "cut")).toMatchObject({
        status: "invalid_arguments",
      });
      const second = h.requests()[1]!;
      expectValidConversation(second);
      expect(conversationOf(second).results).toEqual([
        { id: "cut", content: "Invalid arguments: not a JSON object." },
      ]);
      expect(turnEnds(events).at(-1)).toMatchObject({ turn: 2, final: true, text: "Read it." });
    },
  );

  h.it(
    "answers arguments the capability refuses with the reason and lets the model correct them",
    async () => {
      const world = h.world(
        [
          { call: [{ tool: "plan_draft", arguments: { shiftDays: 1 }, id: "d1" }] },
          {
            wait: "previous",
            choose: [
              {
                when: { lastToolContains: "planId is required" },
                call: [{ tool: "plan_draft", arguments: { planId: "w49", shiftDays: 1 }, id: "d2" }],
              },
              { say: "Gave up." },
            ],
          },
          { wait: "previous", say: "Drafted." },
        ],
        {
          plans: {
            plan_draft: (call) =>
              JSON.parse(call.arguments).planId
                ? { ok: receiptOf(call) }
                : { invalid: "Invalid arguments: planId is required." },
          },
        },
      );
      const events = await run(world, world.session([]), "Draft a one-day shift.");
      expect(events.filter((e) => e.type === "tool_result").map((e) => [e.callId, e.status])).toEqual([
        ["d1", "invalid_arguments"],
        ["d2", "succeeded"],
      ]);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["d2"]);
      expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "Drafted." });
    },
  );

  h.it("gives a denied call's reason to the model, runs nothing, and goes on", async () => {
    const reason = "Forbidden: alice may not publish plans (policy publish-needs-planner).";
    const world = h.world(
      [
        { call: [{ tool: "plan_publish", arguments: { planId: "w49" }, id: "p" }] },
        {
          wait: "previous",
          choose: [
            { when: { lastToolContains: "Forbidden" }, say: "I may not publish." },
            { say: "Published." },
          ],
        },
      ],
      { plans: { plan_publish: { denied: reason } } },
    );
    const events = await run(world, world.session([]), "Publish the plan.");
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({
      callId: "p",
      status: "denied",
      content: reason,
    });
    expect(world.executor.executions).toEqual([]);
    expect(conversationOf(h.requests()[1]!).results).toEqual([{ id: "p", content: reason }]);
    expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "I may not publish." });
  });

  h.it("gives the business system's refusal to the model as final: the call is not made again", async () => {
    const refusal = "APS refused: plan-2026-w49 is locked by the shift planner.";
    const world = h.world(
      [
        { call: [{ tool: "plan_publish", arguments: { planId: "w49" }, id: "p" }] },
        {
          wait: "previous",
          choose: [
            { when: { lastToolContains: "locked" }, say: "The APS refused: the plan is locked." },
            { say: "Published." },
          ],
        },
      ],
      { plans: { plan_publish: { refused: refusal } } },
    );
    const events = await run(world, world.session([]), "Publish the plan.");
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({
      status: "failed",
      content: refusal,
    });
    expect(world.executor.invoked).toHaveLength(1);
    expect(world.executor.executions).toHaveLength(1);
    expect(events.some((e) => e.type === "error")).toBe(false);
    expect(turnEnds(events).at(-1)).toMatchObject({
      final: true,
      text: "The APS refused: the plan is locked.",
    });
  });
}
