/**
 * The agent runtime end to end (DESIGN §4, §5, §9): real agent pods running the builtin
 * engine on the local node, talking to the real operator's gateway (Core, the model proxy) and, through
 * the proxy, to the scripted model, whose recorded requests show exactly what the runtime sent.
 * Each session opens its conversation with a task text of its own, so its requests are told apart.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Plan, PlanVersion } from "../fakes/src/aps/index.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import {
  conversationProblems,
  conversationRequests,
  decide,
  executionsWithReceipts,
  killedWhileAwaiting,
  podOf,
  type RuntimeSession,
  runningPod,
  sessionInPhase,
  sessionOf,
  startSession,
  toolMessages,
  transcriptOf,
} from "./runtime-sessions.ts";
import { eventually, pendingApprovalOf } from "./story.ts";

let env: Environment;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

/** The one recorded request at `step` of the conversation of `session` (asserting there is exactly one). */
function requestAtStep(session: RuntimeSession, step: number) {
  const requests = conversationRequests(env, session.text).filter((request) => request.step === step);
  expect(requests.map((request) => request.status)).toEqual([200]);
  return requests[0]!;
}

describe("an agent pod killed while it waits for an approval", () => {
  it("is replaced by a pod that resumes the session; once approved, the model's next request holds the receipt as the call's one tool message", async () => {
    const publishesBefore = env.aps.publishes().length;
    const { session, ended, killed, replacement } = await killedWhileAwaiting(env, "killed-approved", {
      verdict: "Approve",
    });
    expect(replacement.metadata?.uid).not.toBe(killed.metadata?.uid);
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.result).toMatch(/published as version \d+/);
    expect(env.aps.publishes()).toHaveLength(publishesBefore + 1);

    const next = requestAtStep(session, 3);
    const messages = next.chat!.messages;
    expect(conversationProblems(messages)).toEqual([]);
    const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
    const answers = toolMessages(messages);
    expect(calls.map((call) => call.function.name)).toEqual([
      "aps_schedule_read",
      "aps_schedule_draft",
      "aps_schedule_publish",
    ]);
    expect(answers.map(([id]) => id)).toEqual(calls.map((call) => call.id));
    const receipt = JSON.parse(answers.at(-1)![1]) as { result: { status: string; publicationId: string } };
    expect(receipt.result).toMatchObject({ status: "published", publicationId: expect.any(String) });
    // Every request of the conversation, before and after the kill, was one a real endpoint accepts.
    for (const request of conversationRequests(env, session.text)) {
      expect(request.status).toBe(200);
      expect(conversationProblems(request.chat!.messages)).toEqual([]);
    }
  });

  it("once rejected, the model's next request holds the person's decision as the call's one tool message", async () => {
    const publishesBefore = env.aps.publishes().length;
    const reason = "press-1 is booked for maintenance that week";
    const { session, ended } = await killedWhileAwaiting(env, "killed-rejected", {
      verdict: "Reject",
      reason,
    });
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.result).toContain(`rejected by alice: ${reason}`);
    expect(env.aps.publishes()).toHaveLength(publishesBefore);

    const messages = requestAtStep(session, 3).chat!.messages;
    expect(conversationProblems(messages)).toEqual([]);
    const answers = toolMessages(messages);
    const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
    expect(answers.map(([id]) => id)).toEqual(calls.map((call) => call.id));
    const [publishId, decision] = answers.at(-1)!;
    expect(publishId).toBe(calls.at(-1)?.id);
    expect(decision).toMatch(
      new RegExp(`^rejected by alice: ${reason}\\. This is a person's decision, not an error`),
    );
  });
});

describe("an agent pod held for a decision", () => {
  // Fails today (not the runtime): the runtime releases its pod after `limits.holdPodForSeconds` of
  // GET /v1/session, which the gateway does not send yet; and the AgentSession controller reports a
  // pod that exited 0 without a final answer as Failed (NoAnswer) even while an Approval is Pending,
  // and starts no new pod when that Approval settles.
  it("exits cleanly after holdPodForSeconds while the session stays AwaitingApproval, and a new pod finishes once it is approved", async () => {
    const session = await startSession(env, "held", "scripted/reference-story", {
      approval: { holdPodForSeconds: 5 },
    });
    const approval = await pendingApprovalOf(env, session.uid);
    const held = await runningPod(env, session);
    const released = await eventually("the held pod to exit", 60_000, async () => {
      const pod = await podOf(env, held.metadata!.name!);
      const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
      return terminated ? { phase: pod?.status?.phase, exitCode: terminated.exitCode } : undefined;
    });
    expect(released).toEqual({ phase: "Succeeded", exitCode: 0 });
    expect((await sessionOf(env, session.name)).status?.phase).toBe("AwaitingApproval");

    await decide(env, approval.metadata.name, "Approve");
    const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"], 240_000);
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.podUID).not.toBe(held.metadata?.uid);
    expect(conversationProblems(requestAtStep(session, 3).chat!.messages)).toEqual([]);
  });
});

describe("a tool call cut off by the model's token limit", () => {
  it("gets Core's invalid_arguments result, and the next request replays the call with valid arguments: no 400 loop", async () => {
    const session = await startSession(env, "cut-off", "scripted/fault-truncated-arguments");
    const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"]);
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.result).toMatch(/^The plan reads:/);

    const requests = conversationRequests(env, session.text);
    expect(requests.map((request) => [request.step, request.status])).toEqual([
      [0, 200],
      [1, 200],
      [2, 200],
    ]);
    const messages = requests[1]!.chat!.messages;
    expect(conversationProblems(messages)).toEqual([]);
    const cut = messages.find((m) => m.role === "assistant")?.tool_calls?.[0];
    expect(cut).toMatchObject({ id: "call_cut", function: { name: "aps_schedule_read", arguments: "{}" } });
    expect(toolMessages(messages)).toEqual([["call_cut", expect.stringMatching(/^Invalid arguments:/)]]);

    // The cut-off call went through Core as the model sent it, and Core's answer is in the transcript.
    const transcript = await transcriptOf(env, session.uid);
    const call = transcript.find((row) => row.kind === "tool_call" && row.payload.callId === "call_cut");
    expect(() => JSON.parse(String(call?.payload.arguments))).toThrow();
    const result = transcript.find((row) => row.kind === "tool_result" && row.payload.callId === "call_cut");
    expect(result).toMatchObject({ source: "core", payload: { status: "invalid_arguments" } });
  });
});

describe("a read whose result is 5 MB", () => {
  it("reaches the model truncated with a marker naming the execution, whose row keeps the whole result", async () => {
    const planId = "plan-2026-huge";
    const lines = Array.from({ length: 5_000 }, (_, index) => ({
      lineId: `L${index + 1}`,
      resource: "press-1",
      product: `bracket-${"x".repeat(1_000)}`,
      quantity: 1,
      start: "2026-11-30",
      end: "2026-12-01",
    }));
    const version: PlanVersion = {
      id: planId,
      week: "2026-W49",
      version: 1,
      status: "published",
      basedOnVersion: null,
      createdBy: "scheduler",
      lines,
    };
    const plan: Plan = {
      id: planId,
      week: "2026-W49",
      publishedVersion: 1,
      versions: new Map([[1, version]]),
    };
    env.aps.state.plans.set(planId, plan);
    const fullBytes = Buffer.byteLength(JSON.stringify(version));
    expect(fullBytes).toBeGreaterThan(5_000_000);

    const session = await startSession(env, "oversized", "scripted/runtime-oversized-read");
    const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"]);
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.result).toMatch(/too large to read whole/);

    const [execution] = await executionsWithReceipts(env, session.uid);
    expect(execution).toMatchObject({ capability: "aps.schedule.read", state: "succeeded" });
    expect(execution!.receiptBytes).toBeGreaterThan(fullBytes);
    expect(execution!.receipt).toMatchObject({ result: { id: planId, lines: expect.any(Array) } });
    expect((execution!.receipt as { result: { lines: unknown[] } }).result.lines).toHaveLength(lines.length);

    const [[callId, content]] = toolMessages(requestAtStep(session, 1).chat!.messages) as [[string, string]];
    expect(callId).toBe("call_huge");
    expect(Buffer.byteLength(content)).toBeLessThanOrEqual(16_384);
    expect(content).toMatch(
      new RegExp(
        `\\[truncated by Gatehouse: \\d+ of \\d+ bytes shown; the full result is kept with execution ${execution!.id}\\]$`,
      ),
    );
  });
});

describe("the deltas of two parallel calls interleaved in the stream", () => {
  it("become two well-formed calls, each invoked once and answered once, in order", async () => {
    const session = await startSession(env, "interleaved", "scripted/fault-interleaved-deltas");
    const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"]);
    expect(ended.status?.phase).toBe("Completed");
    expect(ended.status?.result).toMatch(/^Week 49: .*; week 50: /);

    const transcript = await transcriptOf(env, session.uid);
    const calls = transcript
      .filter((row) => row.kind === "tool_call")
      .map((row) => [row.payload.position, row.payload.callId, JSON.parse(String(row.payload.arguments))]);
    expect(calls).toEqual([
      [0, "call_w49", { planId: "plan-2026-w49" }],
      [1, "call_w50", { planId: "plan-2026-w50" }],
    ]);
    const messages = requestAtStep(session, 1).chat!.messages;
    expect(conversationProblems(messages)).toEqual([]);
    expect(toolMessages(messages).map(([id]) => id)).toEqual(["call_w49", "call_w50"]);
  });
});

describe("model errors", () => {
  it("after a 429 with Retry-After: 1, asks again no sooner than a second later", async () => {
    const session = await startSession(env, "rate-limited", "scripted/fault-rate-limit");
    const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"]);
    expect(ended.status?.phase).toBe("Completed");
    const [limited, retried, ...rest] = conversationRequests(env, session.text);
    expect(limited).toMatchObject({ step: 0, status: 429, responseHeaders: { "retry-after": "1" } });
    expect(retried).toMatchObject({ step: 0, status: 200 });
    expect(Date.parse(retried!.time) - Date.parse(limited!.time)).toBeGreaterThanOrEqual(1_000);
    expect(rest.map((request) => [request.step, request.status])).toEqual([[1, 200]]);
  });

  it("does not retry a 400: the one agent pod asks once, no pod is started again, and the session fails naming it", async () => {
    const session = await startSession(env, "bad-request", "scripted/runtime-bad-request");
    const ended = await sessionInPhase(env, session.name, ["Failed", "Completed"], 240_000);
    expect(ended.status?.phase).toBe("Failed");
    const failed = ended.status?.conditions?.find((c) => c.type === "Failed");
    expect(failed?.message).toMatch(/400/);
    const requests = conversationRequests(env, session.text);
    expect(requests.every((request) => request.status === 400)).toBe(true);
    // A 400 is final: the agent exits 2 and the operator starts no second pod that would ask again.
    expect(ended.status?.attempt ?? 1).toBe(1);
    expect(requests).toHaveLength(1);
  });
});

describe("limits", () => {
  it("ends the session at the model proxy's token-budget refusal, with its reason, without asking the model again", async () => {
    const session = await startSession(env, "budget", "scripted/reference-story", {
      limits: { tokenBudget: 1 },
    });
    const ended = await sessionInPhase(env, session.name, ["Failed", "Completed"]);
    expect(ended.status?.phase).toBe("Failed");
    expect(ended.status?.conditions?.find((c) => c.type === "Failed")?.reason).toBe("TokenBudgetExceeded");
    // The first request was allowed (nothing was used yet); the refused one never reached the model.
    expect(conversationRequests(env, session.text).map((request) => request.step)).toEqual([0]);
    const errors = (await transcriptOf(env, session.uid)).filter((row) => row.kind === "error");
    expect(errors.map((row) => row.payload.text)).toEqual([
      expect.stringMatching(/^limit_exceeded: Token budget exhausted/),
    ]);
    expect(ended.status?.attempt ?? 1).toBe(1);
  });

  it("stops at maxTurns with a reason", async () => {
    const session = await startSession(env, "max-turns", "scripted/reference-story", {
      limits: { maxTurns: 1 },
    });
    const ended = await sessionInPhase(env, session.name, ["Failed", "Completed"], 240_000);
    expect(ended.status?.phase).toBe("Failed");
    expect(ended.status?.conditions?.find((c) => c.type === "Failed")?.message).toMatch(/maxTurns \(1\)/);
    expect(conversationRequests(env, session.text).every((request) => request.step === 0)).toBe(true);
  });
});

describe("a Completed session whose subject appends a message", () => {
  const FIRST = "Nothing to change; the plan stands.";
  const SECOND = "The week after stands too; nothing to change there either.";
  const FOLLOW_UP = "And the week after that?";

  it("goes back to work: a new agent pod answers the message from the stored conversation, then the session completes again", async () => {
    const session = await startSession(env, "continued", "scripted/two-answers");
    const first = await sessionInPhase(env, session.name, ["Completed"]);
    expect(first.status?.result).toBe(FIRST);
    expect(first.status?.continuations).toBeUndefined();

    await env.kubectl.ok("alice", [
      "patch",
      "agentsession",
      session.name,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      JSON.stringify([{ op: "add", path: "/spec/messages/-", value: { text: FOLLOW_UP } }]),
    ]);
    const second = await eventually(
      `session ${session.name} to complete its continuation`,
      180_000,
      async () => {
        const current = await sessionOf(env, session.name);
        return current.status?.phase === "Completed" && current.status.continuations === 1
          ? current
          : undefined;
      },
    );
    expect(second.status?.result).toBe(SECOND);
    expect(second.status?.podName).toBe(`${session.name}-agent-1-m1`);
    expect(second.status?.conditions?.find((c) => c.type === "Complete")).toMatchObject({
      status: "True",
      reason: "AnswerPosted",
    });
    expect(Date.parse(second.status!.runStartTime!)).toBeGreaterThanOrEqual(
      Date.parse(first.status!.startTime!),
    );

    // The continuation's one model request holds the whole conversation: task, first answer, follow-up.
    const next = requestAtStep(session, 1);
    const said = next
      .chat!.messages.filter((m) => m.role === "user" || m.role === "assistant")
      .map((m) => [m.role, m.content]);
    expect(said).toEqual([
      ["user", session.text],
      ["assistant", FIRST],
      ["user", FOLLOW_UP],
    ]);
    expect(conversationRequests(env, session.text).map((r) => r.step)).toEqual([0, 1]);
  });
});
