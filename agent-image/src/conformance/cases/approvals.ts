/** Approval cases: a pod released while a call waits, resumed before or after the decision; a rejection. */
import { expect } from "vitest";
import {
  conversationOf,
  expectValidConversation,
  type Harness,
  resume,
  run,
  type World,
} from "../harness.ts";
import { receiptOf } from "../tool-executor.ts";
import { callEvents, turnEnds } from "./conversation.ts";

const steps = [
  { call: [{ tool: "plan_publish", arguments: { planId: "w49" }, id: "pub" }] },
  {
    wait: "previous",
    choose: [
      { when: { lastToolContains: "rejected" }, say: "Rejected: not published." },
      { say: "Published version {{last.version}}." },
    ],
  },
];
const plans = { plan_publish: { approval: "apr-pub" } };

/** The first pod: proposes the call, and is released (aborted, as run-agent's hold does) once it waits. */
async function release(world: World) {
  const session = world.session([]);
  const events = await run(world, session, "Publish the plan.", {
    onEvent: (event) => {
      if (event.type === "approval_required") session.abort();
    },
  });
  expect(callEvents(events, "pub")).toEqual(["tool_call pub", "approval_required pub"]);
  expect(events.find((e) => e.type === "approval_required")).toMatchObject({
    turn: 0,
    position: 0,
    approval: "apr-pub",
    name: "plan_publish",
  });
  expect(events.at(-1)).toMatchObject({ type: "error", kind: "aborted" });
  expect(world.executor.signals.at(-1)?.aborted).toBe(true);
  expect(world.executor.executions).toEqual([]);
}

export function approvalCases(h: Harness): void {
  h.it(
    "stops at a call that needs approval; a session resumed after the decision gives the outcome once",
    async () => {
      const world = h.world(steps, { plans });
      await release(world);
      world.executor.decide("apr-pub", { approve: true });
      expect(world.executor.executions).toHaveLength(1);
      const asked = h.requests().length;

      const events = await resume(world);
      expect(callEvents(events, "pub")).toEqual([]);
      expect(world.executor.invoked).toHaveLength(1);
      expect(world.executor.executions).toHaveLength(1);
      const requests = h.requests().slice(asked);
      expect(requests).toHaveLength(1);
      expectValidConversation(requests[0]!);
      expect(conversationOf(requests[0]!).results).toEqual([
        { id: "pub", content: receiptOf({ name: "plan_publish", callId: "pub" }) },
      ]);
      expect(turnEnds(events)).toMatchObject([{ turn: 1, final: true, text: "Published version 7." }]);
    },
  );

  h.it(
    "a session resumed before the decision proposes the same call again and waits for the same approval",
    async () => {
      const world = h.world(steps, { plans });
      await release(world);
      const session = world.session();
      const events = await run(world, session, world.platform.resume().next, {
        onEvent: (event) => {
          if (event.type === "approval_required")
            queueMicrotask(() => world.executor.decide(event.approval, { approve: true }));
        },
      });
      expect(callEvents(events, "pub")).toEqual([
        "tool_call pub",
        "approval_required pub",
        "tool_result pub",
      ]);
      expect(events.find((e) => e.type === "approval_required")).toMatchObject({
        turn: 0,
        position: 0,
        approval: "apr-pub",
      });
      const [first, again] = world.executor.invoked;
      expect(again).toEqual(first);
      expect(world.executor.executions).toHaveLength(1);
      const last = h.requests().at(-1)!;
      expectValidConversation(last);
      expect(conversationOf(last).results).toEqual([
        { id: "pub", content: receiptOf({ name: "plan_publish", callId: "pub" }) },
      ]);
      expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "Published version 7." });
    },
  );

  h.it("gives a rejection and its reason to the model; the call does not run", async () => {
    const world = h.world(steps, { plans });
    const reason = "the plan is frozen until Monday";
    const events = await run(world, world.session([]), "Publish the plan.", {
      onEvent: (event) => {
        if (event.type === "approval_required")
          queueMicrotask(() => world.executor.decide(event.approval, { reject: reason }));
      },
    });
    const result = events.find((e) => e.type === "tool_result");
    expect(result).toMatchObject({
      callId: "pub",
      status: "denied",
      content: expect.stringContaining(reason),
    });
    expect(world.executor.executions).toEqual([]);
    const results = conversationOf(h.requests().at(-1)!).results;
    expect(results).toHaveLength(1);
    expect(results[0]?.content).toContain(`rejected by carol: ${reason}`);
    expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "Rejected: not published." });
  });
}
