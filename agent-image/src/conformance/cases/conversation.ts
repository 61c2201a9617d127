/** Conversation cases: several user messages, the order of events, token usage. */
import { expect } from "vitest";
import type { RuntimeEvent } from "../../runtime.ts";
import { conversationOf, expectValidConversation, type Harness, resume, run } from "../harness.ts";
import { receiptOf } from "../tool-executor.ts";

/** The text deltas of `turn`, joined. */
export function textOf(events: RuntimeEvent[], turn: number): string {
  return events.map((e) => (e.type === "text" && e.turn === turn ? e.delta : "")).join("");
}

/** The `turn_end` events. */
export function turnEnds(events: RuntimeEvent[]) {
  return events.flatMap((e) => (e.type === "turn_end" ? [e] : []));
}

/** The events of one call, as `type callId`. */
export function callEvents(events: RuntimeEvent[], callId: string): string[] {
  return events.flatMap((e) => ("callId" in e && e.callId === callId ? [`${e.type} ${e.callId}`] : []));
}

export function conversationCases(h: Harness): void {
  h.it(
    "answers several user messages in one session and in a session resumed from the transcript",
    async () => {
      const world = h.world([{ say: "First answer." }, { say: "Second answer." }, { say: "Third answer." }], {
        messages: ["Question one."],
      });
      const session = world.session([]);
      const first = await run(world, session, "Question one.");
      expect(turnEnds(first)).toMatchObject([{ turn: 0, text: "First answer.", final: true, toolCalls: 0 }]);

      world.platform.messages.push("Question two.");
      const second = await run(world, session, "Question two.");
      expect(turnEnds(second)).toMatchObject([{ turn: 1, text: "Second answer.", final: true }]);
      const asked = conversationOf(h.requests()[1]!);
      expect(asked.users).toEqual(["Question one.", "Question two."]);
      expect(asked.messages.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual([
        "First answer.",
      ]);

      // A new pod, after the subject appended a third message.
      world.platform.messages.push("Question three.");
      const third = await resume(world);
      expect(turnEnds(third)).toMatchObject([{ turn: 2, text: "Third answer.", final: true }]);
      const resumed = conversationOf(h.requests()[2]!);
      expect(resumed.users).toEqual(["Question one.", "Question two.", "Question three."]);
      expect(resumed.messages.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual([
        "First answer.",
        "Second answer.",
      ]);
      expect(resumed.messages[0]).toMatchObject({ role: "system", content: "You schedule production." });
    },
  );

  h.it("yields text, each call's proposal, approval and result, then turn_end, turn by turn", async () => {
    const world = h.world(
      [
        {
          say: "Reading both weeks.",
          call: [
            { tool: "plan_read", arguments: { planId: "w49" }, id: "r1" },
            { tool: "plan_read", arguments: { planId: "w50" }, id: "r2" },
          ],
        },
        { wait: "previous", call: [{ tool: "plan_publish", arguments: { planId: "w49" }, id: "p1" }] },
        { wait: "previous", say: "Published." },
      ],
      { plans: { plan_publish: { approval: "apr-p1" } } },
    );
    const events = await run(world, world.session([]), "Publish.", {
      onEvent: (event) => {
        if (event.type === "approval_required")
          queueMicrotask(() => world.executor.decide(event.approval, { approve: true }));
      },
    });
    expect(callEvents(events, "r1")).toEqual(["tool_call r1", "tool_result r1"]);
    expect(callEvents(events, "r2")).toEqual(["tool_call r2", "tool_result r2"]);
    expect(callEvents(events, "p1")).toEqual(["tool_call p1", "approval_required p1", "tool_result p1"]);
    expect(events.find((e) => e.type === "approval_required")).toMatchObject({
      turn: 1,
      position: 0,
      approval: "apr-p1",
    });
    expect(turnEnds(events).map((e) => [e.turn, e.toolCalls, e.final])).toEqual([
      [0, 2, false],
      [1, 1, false],
      [2, 0, true],
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_end", turn: 2 });
    // The text of a turn comes before its calls, and turn_end repeats it whole.
    expect(events.findIndex((e) => e.type === "text")).toBeLessThan(
      events.findIndex((e) => e.type === "tool_call"),
    );
    for (const end of turnEnds(events)) expect(end.text).toBe(textOf(events, end.turn));
    expect(textOf(events, 0)).toBe("Reading both weeks.");
    const result = events.find((e) => e.type === "tool_result" && e.callId === "p1");
    expect(result).toMatchObject({
      turn: 1,
      position: 0,
      name: "plan_publish",
      status: "succeeded",
      content: receiptOf({ name: "plan_publish", callId: "p1" }),
    });
    for (const request of h.requests()) expectValidConversation(request);
  });

  h.it("reports each model answer's token usage on its turn_end", async () => {
    const world = h.world([
      {
        call: [{ tool: "plan_read", arguments: { planId: "w49" } }],
        usage: { promptTokens: 120, completionTokens: 30 },
      },
      { wait: "previous", say: "Read.", usage: { promptTokens: 210, completionTokens: 12 } },
    ]);
    const events = await run(world, world.session([]), "Read the plan.");
    expect(turnEnds(events).map((e) => e.usage)).toEqual([
      { inputTokens: 120, outputTokens: 30 },
      { inputTokens: 210, outputTokens: 12 },
    ]);
  });
}
