import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, Approval } from "../../api/kinds.ts";
import { defaultSessionCeilings } from "../../core/limits.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import { limitsOf } from "../../kube/session-context.ts";
import { agentPodName } from "./pod.ts";
import { continuationDue, resumeDue } from "./reconciler.ts";
import {
  databaseUnavailableStatus,
  limitLoweredEvent,
  modelEndpointNotFoundMessage,
  phaseFrom,
  statusFrom,
} from "./status.ts";

const session = {
  metadata: { name: "s", namespace: "n", uid: "u", generation: 1 },
  spec: { subject: { user: "alice", groups: [] }, model: { name: "m" }, messages: [{ text: "t" }] },
} as unknown as AgentSession;
const empty: SessionRecord = {
  finalAnswers: 0,
  turns: 0,
  toolCalls: 0,
  writes: 0,
  releases: 0,
  compactions: 0,
  agentEvents: 0,
  agentEventBytes: 0,
  usage: { inputTokens: 0, outputTokens: 0 },
};
const podIn = (phase: string, extra: Partial<V1Pod["status"]> = {}): V1Pod => ({
  metadata: { name: "p", uid: "pu" },
  status: { phase, ...extra },
});
const pending = { metadata: { name: "apr-1" }, status: { phase: "Pending" } } as unknown as Approval;

describe("phaseFrom", () => {
  it("is Pending until the agent pod runs", () => {
    expect(phaseFrom(session, undefined, [], empty).phase).toBe("Pending");
    expect(phaseFrom(session, podIn("Pending"), [], empty).phase).toBe("Pending");
  });

  it("is AwaitingApproval while a running session has a Pending Approval", () => {
    expect(phaseFrom(session, podIn("Running"), [pending], empty).phase).toBe("AwaitingApproval");
    expect(phaseFrom(session, podIn("Running"), [], empty).phase).toBe("Running");
  });

  it("is Completed only with a posted answer, and Failed when the agent exits without one", () => {
    expect(
      phaseFrom(session, podIn("Succeeded"), [], { ...empty, finalAnswer: "done", finalAnswers: 1 }).phase,
    ).toBe("Completed");
    expect(phaseFrom(session, podIn("Succeeded"), [], empty)).toMatchObject({
      phase: "Failed",
      reason: "NoAnswer",
    });
  });

  it("reports a session that ended on the model proxy's budget refusal as TokenBudgetExceeded", () => {
    const record = {
      ...empty,
      budgetExceeded: "Token budget exhausted: this session used 12 of its 10 tokens",
    };
    expect(phaseFrom(session, podIn("Failed"), [], record)).toEqual({
      phase: "Failed",
      reason: "TokenBudgetExceeded",
      message: "Token budget exhausted: this session used 12 of its 10 tokens.",
    });
    expect(phaseFrom(session, podIn("Running"), [], record).phase).toBe("Running");
    expect(
      phaseFrom(session, podIn("Succeeded"), [], { ...record, finalAnswer: "stopped", finalAnswers: 1 })
        .phase,
    ).toBe("Completed");
  });

  it("reports a pod past its deadline as TimedOut", () => {
    expect(phaseFrom(session, podIn("Failed", { reason: "DeadlineExceeded" }), [], empty)).toMatchObject({
      phase: "Failed",
      reason: "TimedOut",
    });
  });
});

describe("statusFrom", () => {
  it("carries the answer, counters, pod identity and pending approvals", () => {
    const status = statusFrom(
      session,
      podIn("Running"),
      [pending],
      { ...empty, toolCalls: 3, turns: 2, compactions: 4 },
      new Date("2026-11-29T10:00:00Z"),
    );
    expect(status).toMatchObject({
      phase: "AwaitingApproval",
      podName: "p",
      podUID: "pu",
      toolCalls: 3,
      turns: 2,
      compactions: 4,
      pendingApprovals: ["apr-1"],
      observedGeneration: 1,
    });
    const done = statusFrom(
      session,
      podIn("Succeeded"),
      [],
      { ...empty, finalAnswer: "published v2", finalAnswers: 1 },
      new Date("2026-11-29T10:01:00Z"),
    );
    expect(done).toMatchObject({
      phase: "Completed",
      result: "published v2",
      completionTime: "2026-11-29T10:01:00Z",
    });
    expect(done.conditions?.find((c) => c.type === "Complete")?.status).toBe("True");
  });

  it("shows a cancelled session with a Pending Approval as awaiting nothing", () => {
    const cancelled = { ...session, spec: { ...session.spec, cancel: true } };
    const status = statusFrom(
      cancelled,
      podIn("Running"),
      [pending],
      empty,
      new Date("2026-11-29T10:00:00Z"),
    );
    expect(status.phase).toBe("Cancelled");
    expect(status.pendingApprovals).toEqual([]);
    expect(status.conditions?.find((c) => c.type === "AwaitingApproval")).toMatchObject({
      status: "False",
      reason: "SessionEnded",
      message: expect.stringMatching(/^The session is Cancelled; nothing waits for a decision/),
    });
  });

  it("says which names in spec.capabilities match no Capability", () => {
    const naming = { ...session, spec: { ...session.spec, capabilities: ["aps-read", "aps-typo"] } };
    const now = new Date("2026-11-29T10:00:00Z");
    const status = statusFrom(naming, podIn("Running"), [], empty, now, ["aps-typo"]);
    expect(status.conditions?.find((c) => c.type === "CapabilitiesResolved")).toMatchObject({
      status: "False",
      reason: "CapabilityNotFound",
      message: expect.stringContaining("aps-typo"),
    });
    const fixed = statusFrom(naming, podIn("Running"), [], empty, now, []);
    expect(fixed.conditions?.find((c) => c.type === "CapabilitiesResolved")).toMatchObject({
      status: "True",
      reason: "AllFound",
    });
    expect(
      statusFrom(session, podIn("Running"), [], empty, now).conditions?.map((c) => c.type),
    ).not.toContain("CapabilitiesResolved");
  });
});

describe("a pod released while awaiting approval", () => {
  const released = { ...empty, releases: 1 };
  const waiting = { metadata: { name: "apr-1" }, status: { phase: "Pending" } } as unknown as Approval;
  const decided = { metadata: { name: "apr-1" }, status: { phase: "Succeeded" } } as unknown as Approval;

  it("keeps the session AwaitingApproval, not Failed, while the decision is pending", () => {
    expect(phaseFrom(session, podIn("Succeeded"), [waiting], released)).toMatchObject({
      phase: "AwaitingApproval",
      reason: "PodReleased",
    });
  });

  it("shows the session resuming once decided, and a pod that exited without releasing as NoAnswer", () => {
    expect(phaseFrom(session, podIn("Succeeded"), [], released)).toMatchObject({ reason: "Resuming" });
    expect(phaseFrom(session, podIn("Succeeded"), [], empty)).toMatchObject({
      phase: "Failed",
      reason: "NoAnswer",
    });
  });

  it("is resumed only when every Approval is settled, and once per release", () => {
    const pod = podIn("Succeeded");
    expect(resumeDue(pod, released, 0, [waiting], false)).toBe(false);
    expect(resumeDue(pod, released, 0, [decided], false)).toBe(true);
    expect(resumeDue(pod, released, 1, [decided], false)).toBe(false);
    expect(resumeDue(podIn("Running"), released, 0, [decided], false)).toBe(false);
    expect(resumeDue(pod, released, 0, [decided], true)).toBe(false);
  });
});

describe("a message appended after the agent's final answer", () => {
  const twoMessages = {
    ...session,
    spec: { ...session.spec, messages: [{ text: "t" }, { text: "and then?" }] },
  } as AgentSession;
  const continued = { ...twoMessages, status: { continuations: 1 } } as AgentSession;
  const first = { ...empty, finalAnswer: "one", finalAnswers: 1 };
  const second = { ...empty, finalAnswer: "two", finalAnswers: 2 };

  it("keeps the session open once the run answered and another message waits, and starts a continuation", () => {
    expect(phaseFrom(twoMessages, podIn("Succeeded"), [], first)).toMatchObject({
      phase: "Pending",
      reason: "MessageAppended",
      message: "The agent answered 1 of 2 messages; a new agent pod answers the next.",
    });
    expect(continuationDue(podIn("Succeeded"), twoMessages, first)).toBe(true);
    expect(continuationDue(podIn("Running"), twoMessages, first)).toBe(false);
    expect(continuationDue(podIn("Succeeded"), twoMessages, empty)).toBe(false);
  });

  it("is Pending while the continuation's pod starts, Completed once every message has its answer", () => {
    expect(phaseFrom(continued, undefined, [], first).phase).toBe("Pending");
    expect(phaseFrom(continued, podIn("Running"), [], first).phase).toBe("Running");
    expect(phaseFrom(continued, podIn("Succeeded"), [], second).phase).toBe("Completed");
    expect(continuationDue(podIn("Succeeded"), continued, second)).toBe(false);
  });

  it("fails a continuation whose pod exits without answering, instead of starting another", () => {
    expect(phaseFrom(continued, podIn("Succeeded"), [], first)).toMatchObject({
      phase: "Failed",
      reason: "NoAnswer",
    });
    expect(continuationDue(podIn("Succeeded"), continued, first)).toBe(false);
  });

  it("once a continuation fails, its Complete condition says why instead of 'continuing'", () => {
    const reopened = {
      ...continued,
      status: {
        continuations: 1,
        conditions: [
          {
            type: "Complete",
            status: "False",
            reason: "MessageAppended",
            message: "starting a new agent pod for message 2",
            lastTransitionTime: "2026-12-01T10:00:00Z",
          },
        ],
      },
    } as AgentSession;
    const failed = statusFrom(reopened, podIn("Succeeded"), [], first, new Date("2026-12-01T10:01:00Z"));
    expect(failed.phase).toBe("Failed");
    expect(failed.conditions?.find((c) => c.type === "Complete")).toMatchObject({
      status: "False",
      reason: "NoAnswer",
    });
  });

  it("names the continuation's pod apart from every earlier one, within 253 characters", () => {
    expect(agentPodName(session, 1, 0, 1)).toBe("s-agent-1-m1");
    expect(agentPodName(session, 2, 1, 3)).toBe("s-agent-2-1-m3");
    const long = { ...session, metadata: { ...session.metadata, name: "a".repeat(253) } } as AgentSession;
    expect(agentPodName(long, 16, 9999, 9999).length).toBeLessThanOrEqual(253);
    expect(agentPodName(long, 16, 9999).length).toBeLessThanOrEqual(253);
  });
});

describe("modelEndpointNotFoundMessage", () => {
  it("names spec.model.endpointRef, the endpoints the operator has and where they are configured", () => {
    expect(modelEndpointNotFoundMessage("nope", [{ name: "openai" }, { name: "local" }])).toBe(
      "spec.model.endpointRef nope: the operator has no model endpoint of that name; it has openai, local. Use one of them, or ask the platform team to add it to the chart value modelEndpoints (the operator's MODEL_ENDPOINTS).",
    );
  });

  it("says when the operator has no model endpoint at all", () => {
    expect(modelEndpointNotFoundMessage(undefined, [])).toBe(
      "spec.model.endpointRef (unset): the operator has no model endpoint configured; the platform team configures them with the chart value modelEndpoints (the operator's MODEL_ENDPOINTS).",
    );
  });
});

describe("databaseUnavailableStatus", () => {
  const now = new Date("2026-12-03T08:00:00Z");

  it("gives a session with no status yet a Pending phase and Progressing=False DatabaseUnavailable naming its pod", () => {
    const status = databaseUnavailableStatus(session, now);
    expect(status.phase).toBe("Pending");
    expect(status.startTime).toBeUndefined();
    expect(status.conditions).toEqual([
      expect.objectContaining({
        type: "Progressing",
        status: "False",
        reason: "DatabaseUnavailable",
        observedGeneration: 1,
      }),
    ]);
    expect(status.conditions?.[0]?.message).toContain("its agent pod is started once it answers again");
  });

  it("keeps a running session's phase and other conditions, and statusFrom replaces it once the record reads", () => {
    const running = { ...session, status: statusFrom(session, podIn("Running"), [pending], empty, now) };
    const waiting = databaseUnavailableStatus(running, now);
    expect(waiting.phase).toBe("AwaitingApproval");
    expect(waiting.conditions?.find((c) => c.type === "AwaitingApproval")?.status).toBe("True");
    expect(waiting.conditions?.find((c) => c.type === "Progressing")?.message).toContain(
      "its status is brought up to date",
    );
    const recovered = statusFrom({ ...running, status: waiting }, podIn("Running"), [pending], empty, now);
    expect(recovered.conditions?.find((c) => c.type === "Progressing")).toMatchObject({
      status: "True",
      reason: "ApprovalPending",
    });
  });
});

describe("the limits a session runs under", () => {
  const ceilings = { ...defaultSessionCeilings, holdPodForSeconds: 60, maxTurns: 10 };
  const asking = (spec: Partial<AgentSession["spec"]>, status?: AgentSession["status"]): AgentSession =>
    ({ ...session, spec: { ...session.spec, ...spec }, ...(status ? { status } : {}) }) as AgentSession;
  const now = new Date("2026-11-29T10:00:00Z");

  it("records every limit in status.effectiveLimits: asked for, capped, or the ceiling when unset", () => {
    const s = asking({ limits: { maxTurns: 50, maxWrites: 2 }, approval: { holdPodForSeconds: 900 } });
    const status = statusFrom(s, podIn("Running"), [], empty, now, [], limitsOf(s, ceilings));
    expect(status.effectiveLimits).toEqual({
      ...defaultSessionCeilings,
      maxTurns: 10,
      maxWrites: 2,
      holdPodForSeconds: 60,
    });
  });

  it("warns LimitLowered naming each lowered field, what it asked, the ceiling and who sets it", () => {
    const s = asking({ limits: { maxTurns: 50, maxWrites: 2 }, approval: { holdPodForSeconds: 900 } });
    expect(limitLoweredEvent(s, ceilings)).toEqual({
      reason: "LimitLowered",
      message:
        "spec.limits.maxTurns asks for 50, but the operator's ceiling is 10, so the session runs with 10; spec.approval.holdPodForSeconds asks for 900, but the operator's ceiling is 60, so the session runs with 60. The platform team sets the ceilings with the chart value sessionCeilings (the operator's SESSION_CEILINGS); status.effectiveLimits shows every limit the session runs under.",
    });
  });

  it("warns once: not when the status already records the lowered limits", () => {
    const asked = { approval: { holdPodForSeconds: 900 } };
    const recorded = statusFrom(
      asking(asked),
      podIn("Running"),
      [],
      empty,
      now,
      [],
      limitsOf(asking(asked), ceilings),
    );
    expect(limitLoweredEvent(asking(asked, recorded), ceilings)).toBeUndefined();
  });

  it("warns again when the ceilings change what the session runs with", () => {
    const asked = { approval: { holdPodForSeconds: 900 } };
    const recorded = statusFrom(
      asking(asked),
      podIn("Running"),
      [],
      empty,
      now,
      [],
      limitsOf(asking(asked), ceilings),
    );
    const lower = { ...ceilings, holdPodForSeconds: 30 };
    expect(limitLoweredEvent(asking(asked, recorded), lower)?.message).toMatch(
      /^spec\.approval\.holdPodForSeconds asks for 900, but the operator's ceiling is 30/,
    );
  });

  it("is silent when nothing asked for is above its ceiling", () => {
    expect(limitLoweredEvent(asking({ limits: { maxTurns: 10 } }), ceilings)).toBeUndefined();
    expect(limitLoweredEvent(session, ceilings)).toBeUndefined();
  });
});
