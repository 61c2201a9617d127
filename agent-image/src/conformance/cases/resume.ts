/**
 * Resume cases: the pod dies at each point of a turn, and a new session resumes from the transcript
 * the platform holds then (`Platform.resume`, the path a new pod takes). Whatever the point: no call
 * reaches the business system twice, a recorded result reaches the model as recorded, every model
 * request is a valid conversation, and the session ends with its final answer.
 */
import { expect } from "vitest";
import type { RuntimeEvent } from "../../runtime.ts";
import {
  conversationOf,
  expectValidConversation,
  type Harness,
  resume,
  run,
  type World,
} from "../harness.ts";
import type { Plans } from "../tool-executor.ts";
import { turnEnds } from "./conversation.ts";

const steps = [
  {
    call: [
      { tool: "plan_read", arguments: { planId: "w49" }, id: "r1" },
      { tool: "plan_read", arguments: { planId: "w50" }, id: "r2" },
    ],
  },
  { wait: "previous", call: [{ tool: "plan_draft", arguments: { planId: "w49", shiftDays: 1 }, id: "d1" }] },
  { wait: "previous", say: "Drafted." },
];

/** Kills the first pod right after the event `stop` picks, resumes, and checks what holds at every point. */
async function killAndResume(h: Harness, stop: (event: RuntimeEvent) => boolean, plans: Plans = {}) {
  const world = h.world(steps, { plans });
  const first = await run(world, world.session([]), "Draft a one-day shift.", { stop });
  const recorded = recordedResults(world);
  const asked = h.requests().length;
  const events = await resume(world);
  const ids = world.executor.executions.map((c) => `${c.turn}:${c.position}`);
  expect(new Set(ids).size, `executed twice: ${ids}`).toBe(ids.length);
  const requests = h.requests();
  for (const request of requests) expectValidConversation(request);
  // Each result the platform held reaches the model as recorded, once, in the resumed session.
  for (const request of requests.slice(asked)) {
    const results = conversationOf(request).results;
    for (const [id, content] of recorded)
      expect(results.filter((r) => r.id === id)).toEqual([{ id, content }]);
  }
  expect(turnEnds(events).at(-1)).toMatchObject({ final: true, text: "Drafted." });
  return { world, first, events };
}

/** The results the platform holds, by call id. */
function recordedResults(world: World): Map<string, string> {
  const results = new Map<string, string>();
  for (const entry of world.platform.entries) {
    const { callId, content, status } = entry.payload as Record<string, string>;
    if (entry.kind === "tool_result" && status !== "pending_approval") results.set(callId!, content!);
  }
  return results;
}

export function resumeCases(h: Harness): void {
  h.it("resumes after the model answered but before any of its calls ran: the calls run once", async () => {
    const { world, first, events } = await killAndResume(h, (e) => e.type === "tool_call");
    expect(first.at(-1)).toMatchObject({ type: "tool_call", callId: "r1" });
    expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1", "r2", "d1"]);
    expect(turnEnds(events).map((e) => e.turn)).toEqual([0, 1, 2]);
  });

  h.it("resumes after some of a turn's tool results: a call with a result does not run again", async () => {
    const { world } = await killAndResume(h, (e) => e.type === "tool_result");
    expect(world.executor.invoked.filter((c) => c.callId === "r1")).toHaveLength(1);
    // The platform holds only the calls Core saw: r2 was never proposed, so the model is told of r1 only.
    expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1", "d1"]);
  });

  h.it(
    "resumes after all of a turn's tool results: the model is asked next, nothing runs again",
    async () => {
      let results = 0;
      const { world, events } = await killAndResume(h, (e) => e.type === "tool_result" && ++results === 2);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1", "r2", "d1"]);
      expect(events.filter((e) => e.type === "tool_call").map((e) => e.callId)).toEqual(["d1"]);
      expect(turnEnds(events).map((e) => e.turn)).toEqual([1, 2]);
    },
  );

  h.it(
    "resumes after a call ran but its answer was lost: the recorded answer is used, the call does not run again",
    async () => {
      const world = h.world(steps, { plans: { plan_read: { lost: true } } });
      const session = world.session([]);
      world.executor.onStall = () => session.abort();
      const first = await run(world, session, "Draft a one-day shift.");
      expect(first.at(-1)).toMatchObject({ type: "error", kind: "aborted" });
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1"]);
      const events = await resume(world);
      // r1's answer is in the transcript; r2 was never proposed, so it runs in no session.
      expect(events.filter((e) => e.type === "tool_call").map((e) => e.callId)).toEqual(["d1"]);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1", "d1"]);
      const resumed = h.requests().at(-1)!;
      expect(conversationOf(resumed).results.filter((r) => r.id === "r1")).toEqual([
        { id: "r1", content: recordedResults(world).get("r1") },
      ]);
    },
  );

  h.it(
    "resumes after a call was proposed but has no result yet: only it is proposed again, as it was, and runs once",
    async () => {
      // r1 is answered, r2 waits for an approval when the pod dies: the turn is half answered.
      const plans: Plans = {
        plan_read: (call) => (call.callId === "r2" ? { approval: "apr-r2" } : { ok: `read ${call.callId}` }),
      };
      const world = h.world(steps, { plans });
      await run(world, world.session([]), "Draft a one-day shift.", {
        stop: (e) => e.type === "approval_required",
      });
      const events = await run(world, world.session(), world.platform.resume().next, {
        onEvent: (event) => {
          if (event.type === "approval_required")
            queueMicrotask(() => world.executor.decide(event.approval, { approve: true }));
        },
      });
      expect(world.executor.invoked.filter((c) => c.callId === "r1")).toHaveLength(1);
      const again = world.executor.invoked.filter((c) => c.callId === "r2");
      expect(again).toHaveLength(2);
      expect(again[1]).toEqual(again[0]);
      expect(events.filter((e) => e.type === "tool_call").map((e) => [e.turn, e.callId])).toEqual([
        [0, "r2"],
        [1, "d1"],
      ]);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["r1", "r2", "d1"]);
      const afterDecision = conversationOf(h.requests().at(-2)!);
      expect(afterDecision.results.filter((r) => r.id === "r1")).toEqual([{ id: "r1", content: "read r1" }]);
      expectValidConversation(h.requests().at(-2)!);
      expect(turnEnds(events).map((e) => [e.turn, e.final])).toEqual([
        [1, false],
        [2, true],
      ]);
    },
  );
}
