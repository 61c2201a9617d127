/**
 * Core's invocation path on the real control plane and local node, part 1 (DESIGN §2 Approval, §4,
 * §5, §7). The test is the agent: every session's pod only sleeps
 * (`AGENT_IMAGE=gatehouse/sleeper:dev`); the test mints that pod's token with the TokenRequest API and
 * calls the gateway's /v1 endpoints with it, exactly as an agent pod would. The business side is the
 * counting provider (test/cluster/images/provider-counter.ts), whose ledger every test reads to show
 * at most one effect per action — usually none.
 *
 * Covered: what only the cluster shows — pod authentication (what the gateway refuses before Core
 * sees anything, a finished session's token included); admission refusing a made-up Approval, and the
 * controller marking one the gateway made up Failed (Conflict, RequesterMismatch, RequestNotRecorded);
 * the approval wait and a rejection seen through the operator's caches; two Capabilities of one
 * spec.id, each given a condition naming the other; and, in a namespace of their own, the limits and
 * unstorable input of `invoke-limits-cases.ts`. Core's own refusals (malformed arguments, reused call
 * ids, a rejection's finality, spec.policy.subjects, a squat's spec) are shown in memory:
 * `operator/src/core/invoke-refusals.test.ts`, `operator/src/core/execute.test.ts`.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { canonicalJson, sha256Hex } from "../../operator/src/core/canonical.ts";
import { executionIdentity } from "../../operator/src/core/execution-identity.ts";
import { clusterInfo } from "./cluster-info.ts";
import {
  coreNamespace,
  createAliceSession,
  type GatewayReply,
  gatewayRequest,
  getSession,
  getSessionView,
  invokeAs,
  podToken,
  postEventAs,
  SLEEPER_IMAGE,
  type SleepingSession,
  sleepingSession,
  staticUserToken,
  waitAs,
} from "./core-agent.ts";
import { capabilityName, deployCounter, type Ledger, type LedgerMark, toolName } from "./core-counter.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { describeInvokeLimits } from "./invoke-limits-cases.ts";
import { decisionPatch, eventually } from "./story.ts";

/** A user admission lets create Approvals: the gateway, which a squatter impersonates. */
const OPERATOR_USER = "system:serviceaccount:gatehouse-system:gatehouse-gateway";

/** What the counter offers here: two writes (approval Required by default) and a read (Auto). */
const PLACE = "ct.order.place"; // write, no required field
const PUBLISH = "ct.plan.publish"; // write, requires planId and version (a plan target)
const READ = "ct.stock.read"; // read, no required field
const RESERVED = "ct.stock.audit"; // read, but spec.policy.subjects admits only bob (not alice)

interface ApprovalObject {
  metadata: { name: string; ownerReferences?: Array<{ uid: string; controller?: boolean }> };
  spec: { sessionRef: { uid: string }; executionId: string; arguments: string; capabilityId: string };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason: string }> };
}

interface AuditRow {
  kind: string;
  execution_id: string | null;
  payload: Record<string, unknown>;
}

/**
 * How long an approved Approval without its request record waits for it (`APPROVAL_REQUEST_GRACE_MS`;
 * a minute by default): short here, so a made-up Approval's refusal is seen in seconds. Core appends
 * the record before it answers the agent, so no call of these tests is decided inside the grace.
 */
const REQUEST_GRACE_MS = 3_000;

let env: Environment;
let namespace: string;
let counter: Ledger;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), {
    componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE, APPROVAL_REQUEST_GRACE_MS: String(REQUEST_GRACE_MS) },
  });
  namespace = await coreNamespace(env, "invoke");
  counter = await deployCounter(
    env,
    namespace,
    "counter",
    [
      { id: PLACE, effect: "write" },
      { id: PUBLISH, effect: "write", target: true },
      { id: READ, effect: "read" },
      { id: RESERVED, effect: "read" },
    ],
    { [RESERVED]: { subjects: { users: ["bob"] } } },
  );
}, 600_000);

afterAll(async () => {
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

function call(turn: number, position: number, id: string, args: string): InvokeCall {
  return { turn, position, callId: `call_${position}`, tool: toolName(id), arguments: args };
}

/** The session's Approvals (by spec.sessionRef.uid, so a squatted one without owner is listed too). */
async function approvalsOf(session: SleepingSession): Promise<ApprovalObject[]> {
  const list = await env.kubectl.json<{ items: ApprovalObject[] }>("admin", [
    "get",
    "approvals",
    "-n",
    session.namespace,
  ]);
  return list.items.filter((a) => a.spec.sessionRef.uid === session.uid);
}

function getApproval(namespace: string, name: string): Promise<ApprovalObject> {
  return env.kubectl.json<ApprovalObject>("admin", ["get", "approval", name, "-n", namespace]);
}

function approvalInPhase(namespace: string, name: string, phase: string): Promise<ApprovalObject> {
  return eventually(`Approval ${name} to be ${phase}`, 120_000, async () => {
    const approval = await getApproval(namespace, name);
    return approval.status?.phase === phase ? approval : undefined;
  });
}

async function decide(namespace: string, name: string, verdict: "Approve" | "Reject"): Promise<void> {
  await env.kubectl.ok("alice", [
    "patch",
    "approval",
    name,
    "-n",
    namespace,
    "--type",
    "json",
    "-p",
    decisionPatch("alice", verdict),
  ]);
}

async function auditOf(sessionUid: string): Promise<AuditRow[]> {
  const result = await env.pool.query<AuditRow>(
    "SELECT kind, execution_id, convert_from(canonical, 'UTF8')::jsonb -> 'payload' AS payload FROM audit_log WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return result.rows;
}

async function executionsOf(
  sessionUid: string,
): Promise<Array<{ id: string; state: string; arguments_canonical: string }>> {
  const result = await env.pool.query<{ id: string; state: string; arguments_canonical: string }>(
    "SELECT id, state, arguments_canonical FROM executions WHERE session_uid = $1 ORDER BY created_at_us",
    [sessionUid],
  );
  return result.rows;
}

async function transcriptOf(sessionUid: string): Promise<Array<{ kind: string; source: string }>> {
  const result = await env.pool.query<{ kind: string; source: string }>(
    "SELECT kind, source FROM session_events WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return result.rows;
}

/** The reply as its status class and body, so a failed expectation shows what the gateway said. */
function classOf(reply: GatewayReply): { class: string; body: unknown } {
  return { class: `${Math.floor(reply.status / 100)}xx`, body: reply.body };
}

describe("pod authentication", () => {
  const ORDER = '{"orderId":"AUTH-1"}';

  /** Both /v1 endpoints refuse `token` with a 4xx. */
  async function expectRefused(token: string): Promise<void> {
    const view = await getSessionView(env, token);
    expect(classOf(view)).toMatchObject({ class: "4xx" });
    const invoked = await invokeAs(env, token, call(0, 0, PLACE, ORDER));
    expect(classOf(invoked)).toMatchObject({ class: "4xx" });
  }

  /** alice cancels `session`: the controller deletes its pod and creates no other. */
  async function cancel(session: SleepingSession): Promise<void> {
    await env.kubectl.ok("alice", [
      "patch",
      "agentsession",
      session.name,
      "-n",
      session.namespace,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { cancel: true } }),
    ]);
  }

  async function podGone(session: SleepingSession): Promise<boolean> {
    const result = await env.kubectl.run("admin", ["get", "pod", session.podName, "-n", session.namespace]);
    return result.code !== 0 && /NotFound/.test(result.stderr);
  }

  /**
   * Presents `token` to the gateway about every 300 ms until `done()`, answers ignored. While the pod still
   * exists (even terminating) each TokenReview succeeds, so the gateway's review cache (≤ 10 s by token
   * hash) still holds the pod's identity when `done()` turns true: the refusal that follows is then
   * the binding to status.podUID and the pod cache at work, not a fresh TokenReview.
   */
  async function presentUntil(token: string, done: () => Promise<boolean>): Promise<void> {
    await eventually("the change the token is presented through", 180_000, async () => {
      await getSessionView(env, token);
      return (await done()) ? true : undefined;
    });
  }

  /** Nothing about `session` reached the transcript, the audit log, the executions, the Approvals or the provider. */
  async function expectNothingRecorded(session: SleepingSession, mark: LedgerMark): Promise<void> {
    expect(await transcriptOf(session.uid)).toEqual([]);
    expect(await auditOf(session.uid)).toEqual([]);
    expect(await executionsOf(session.uid)).toEqual([]);
    expect(await approvalsOf(session)).toEqual([]);
    expect(await mark.calls()).toEqual([]);
    expect(await mark.effects()).toEqual([]);
  }

  it("refuses a token of the session's own pod minted for another audience", async () => {
    const session = await sleepingSession(env, namespace, "auth-aud");
    const mark = await counter.mark();
    // The same pod's token for audience gatehouse is accepted: the audience alone makes the difference.
    expect((await getSessionView(env, await podToken(env, session))).status).toBe(200);
    await expectRefused(await podToken(env, session, ["gatehouse-not"]));
    // The API server's own audience (what a pod's default ServiceAccount token carries).
    await expectRefused(await podToken(env, session, []));
    await expectNothingRecorded(session, mark);
  });

  it("refuses a static-token user: alice's own token from the kubeconfig", async () => {
    const session = await sleepingSession(env, namespace, "auth-user");
    const mark = await counter.mark();
    await expectRefused(await staticUserToken(env, "alice"));
    await expectNothingRecorded(session, mark);
  });

  it("refuses the token of a deleted pod, though its session still names the pod", async () => {
    const session = await sleepingSession(env, namespace, "auth-gone");
    const token = await podToken(env, session);
    const mark = await counter.mark();
    expect((await getSessionView(env, token)).status).toBe(200);
    await cancel(session);
    await presentUntil(token, () => podGone(session));
    expect((await getSession(env, session.namespace, session.name)).status?.podUID).toBe(session.podUID);
    // A 4xx, not Core's 200 "session inactive" answer: the gateway refused before Core was asked.
    await expectRefused(token);
    await expectNothingRecorded(session, mark);
  });

  it("refuses the token of a pod recreated under the same name with a new uid, and that new pod's token", async () => {
    const session = await sleepingSession(env, namespace, "auth-again");
    const original = await env.kubectl.json<{
      metadata: { labels?: Record<string, string>; ownerReferences?: unknown[] };
      spec: Record<string, unknown>;
    }>("admin", ["get", "pod", session.podName, "-n", session.namespace]);
    const token = await podToken(env, session);
    const mark = await counter.mark();
    expect((await getSessionView(env, token)).status).toBe(200);
    // Cancelled, the session's pod is deleted and not replaced, so the name is free for ours.
    await cancel(session);
    await presentUntil(token, () => podGone(session));
    // A faithful copy of the session's pod — same name, labels, owner, ServiceAccount, sleeper image —
    // as anyone who may create pods in the namespace could make it; only its uid differs.
    const { nodeName: _node, ...spec } = original.spec;
    await env.kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: session.podName,
          namespace: session.namespace,
          labels: original.metadata.labels,
          ownerReferences: original.metadata.ownerReferences,
        },
        spec,
      }),
    );
    const copy = await env.kubectl.json<{ metadata: { uid: string } }>("admin", [
      "get",
      "pod",
      session.podName,
      "-n",
      session.namespace,
    ]);
    expect(copy.metadata.uid).not.toBe(session.podUID);
    await expectRefused(token);
    await expectRefused(await podToken(env, { ...session, podUID: copy.metadata.uid }));
    await expectNothingRecorded(session, mark);
  });

  it("refuses the old pod's token once the session's pod was replaced, and accepts the new pod's", async () => {
    const session = await sleepingSession(env, namespace, "auth-replaced");
    const token = await podToken(env, session);
    const mark = await counter.mark();
    expect((await getSessionView(env, token)).status).toBe(200);
    await env.kubectl.ok("admin", [
      "delete",
      "pod",
      session.podName,
      "-n",
      session.namespace,
      "--wait=false",
    ]);
    // The controller creates the pod again under the same name; the session's status.podUID moves on.
    const replacedUid = async () => {
      const s = await getSession(env, session.namespace, session.name);
      return s.status?.podUID && s.status.podUID !== session.podUID && s.status.phase === "Running"
        ? s
        : undefined;
    };
    await presentUntil(token, async () => (await replacedUid()) !== undefined);
    const replaced = (await replacedUid())!;
    expect(replaced.status?.podName).toBe(session.podName);
    await expectRefused(token);
    const fresh = await podToken(env, { ...session, podUID: replaced.status?.podUID ?? "" });
    expect((await getSessionView(env, fresh)).status).toBe(200);
    await expectNothingRecorded(session, mark);
  });

  it("never adopts a pod made in advance under the session's pod name: the session fails PodNameTaken, that pod's token is refused", async () => {
    const name = `auth-early-${Date.now().toString(36)}`;
    const podName = `${name}-agent-1`;
    // Anyone who may create pods in the namespace could make it before the session exists.
    await env.kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: podName, namespace },
        spec: {
          serviceAccountName: "gatehouse-agent",
          containers: [{ name: "agent", image: SLEEPER_IMAGE }],
        },
      }),
    );
    const early = await eventually(`pod ${podName} to run`, 120_000, async () => {
      const pod = await env.kubectl.json<{ metadata: { uid: string }; status?: { phase?: string } }>(
        "admin",
        ["get", "pod", podName, "-n", namespace],
      );
      return pod.status?.phase === "Running" ? pod : undefined;
    });
    await createAliceSession(env, namespace, name);
    const failed = await eventually(`session ${name} to fail`, 120_000, async () => {
      const session = await env.kubectl.json<{
        status?: { phase?: string; podUID?: string; conditions?: Array<{ type: string; reason: string }> };
      }>("admin", ["get", "agentsession", name, "-n", namespace]);
      return session.status?.phase === "Failed" ? session : undefined;
    });
    expect(failed.status?.conditions?.find((c) => c.type === "Failed")?.reason).toBe("PodNameTaken");
    expect(failed.status?.podUID).toBeUndefined();
    await expectRefused(await podToken(env, { namespace, podName, podUID: early.metadata.uid }));
  });

  it("refuses the token of a session that has finished, though its pod and token live on, and accepts a running session's", async () => {
    const running = await sleepingSession(env, namespace, "auth-run");
    // A session whose time runs out ends Failed while its pod object stays (DeadlineExceeded): the
    // API server still honours the pod's token — the attacker's case, a leaked token of a finished session.
    const finishing = await sleepingSession(env, namespace, "auth-end", { limits: { timeoutSeconds: 15 } });
    const token = await podToken(env, finishing);
    const mark = await counter.mark();
    expect((await getSessionView(env, token)).status).toBe(200);
    expect((await postEventAs(env, token)).status).toBe(200);
    // Presented until the session has ended: the review cache then still holds the token's acceptance,
    // so the refusal below is the per-request check of the session's phase.
    await presentUntil(
      token,
      async () => (await getSession(env, namespace, finishing.name)).status?.phase === "Failed",
    );
    expect((await getSession(env, namespace, finishing.name)).status?.podUID).toBe(finishing.podUID);
    const refusal = await eventually("the finished session's token to be refused", 30_000, async () => {
      const reply = await getSessionView(env, token);
      return reply.status === 200 ? undefined : reply;
    });
    expect(refusal.status).toBe(403);
    expect(refusal.body).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining(`AgentSession ${finishing.name} has finished (Failed)`),
    });
    const posted = await postEventAs(env, token);
    expect(posted.status).toBe(403);
    expect(JSON.stringify(posted.body)).toContain("has finished");
    await expectRefused(token);
    // The pod is still there under the same uid: a token bound to it can still be minted.
    await podToken(env, finishing);
    expect(await mark.calls()).toEqual([]);

    const runningToken = await podToken(env, running);
    expect((await getSessionView(env, runningToken)).status).toBe(200);
    expect((await postEventAs(env, runningToken)).status).toBe(200);
  });
});

describe("a squatted Approval", () => {
  const ARGS = '{"planId":"P-7","version":1}';

  /** The Approval name Core derives for call(0, 0, PUBLISH, ARGS) of `session` (execution-identity.ts). */
  function derivedName(session: SleepingSession): { approvalName: string; executionId: string } {
    const digest = sha256Hex(canonicalJson(JSON.parse(ARGS)));
    return executionIdentity({
      sessionUid: session.uid,
      turn: 0,
      position: 0,
      capability: PUBLISH,
      argumentsDigest: digest,
    });
  }

  /**
   * A plausible Approval body of call(0, 0, PUBLISH, ARGS) for `session` under `name`; `owned`: the
   * session is its controller owner.
   */
  async function squatBody(session: SleepingSession, name: string, executionId: string, owned: boolean) {
    const capability = await env.kubectl.json<{ status?: { schemaDigest?: string } }>("admin", [
      "get",
      "capability",
      capabilityName(PUBLISH),
      "-n",
      session.namespace,
    ]);
    const canonical = canonicalJson(JSON.parse(ARGS));
    return {
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "Approval",
      metadata: {
        name,
        namespace: session.namespace,
        labels: { "app.kubernetes.io/managed-by": "gatehouse", "gatehouse.dev/session-uid": session.uid },
        ...(owned
          ? {
              ownerReferences: [
                {
                  apiVersion: "gatehouse.dev/v1alpha1",
                  kind: "AgentSession",
                  name: session.name,
                  uid: session.uid,
                  controller: true,
                },
              ],
            }
          : {}),
      },
      spec: {
        executionId,
        sessionRef: { name: session.name, uid: session.uid },
        capability: capabilityName(PUBLISH),
        capabilityId: PUBLISH,
        providerRef: { name: "counter" },
        arguments: canonical,
        argumentsDigest: sha256Hex(canonical),
        schemaDigest: capability.status?.schemaDigest ?? "",
        requester: { user: "alice", groups: [] },
        approvers: { users: ["alice"], groups: [] },
        requiredApprovals: 1,
        allowSelfApproval: true,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
        decisions: [],
      },
    };
  }

  /**
   * Creates the squat. Admission (crds/admission-policies.yaml, gatehouse-approval-create) admits an
   * Approval CREATE only from the gateway's and the controller's ServiceAccounts, so the squatter is
   * someone who may impersonate one: admin with `--as` the gateway. Waits until the operator has seen it (its reconciler writes
   * status.phase Pending), so Core's lookup finds it.
   */
  async function squat(body: Awaited<ReturnType<typeof squatBody>>): Promise<void> {
    await env.kubectl.ok("admin", ["create", "--as", OPERATOR_USER, "-f", "-"], JSON.stringify(body));
    await approvalInPhase(body.metadata.namespace, body.metadata.name, "Pending");
  }

  /** Core's answer is a `conflict` error, the squat is Failed with reason Conflict, nothing executes. */
  async function expectRefusedAsConflict(session: SleepingSession, approvalName: string, mark: LedgerMark) {
    const token = await podToken(env, session);
    const reply = await invokeAs(env, token, call(0, 0, PUBLISH, ARGS));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: "denied", errorKind: "conflict" });
    const failed = await approvalInPhase(session.namespace, approvalName, "Failed");
    expect(failed.status?.conditions).toContainEqual(expect.objectContaining({ reason: "Conflict" }));
    expect((await auditOf(session.uid)).map((r) => r.kind)).toContain("approval.conflict");
    expect((await approvalsOf(session)).map((a) => a.metadata.name)).toEqual([approvalName]);
    expect(await executionsOf(session.uid)).toEqual([]);
    expect(await mark.calls()).toEqual([]);
    expect(await mark.effects()).toEqual([]);
  }

  it("cannot be created by admin in its own name: admission admits only the operator", async () => {
    const session = await sleepingSession(env, namespace, "squat-admin");
    const { approvalName, executionId } = derivedName(session);
    const body = await squatBody(session, approvalName, executionId, true);
    const result = await env.kubectl.run("admin", ["create", "-f", "-"], JSON.stringify(body));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /approval-create: only the Gatehouse gateway and controller create Approvals/,
    );
  });

  it("with the derived name and the same action but without the session as controller owner is marked Failed Conflict and the call refused", async () => {
    const session = await sleepingSession(env, namespace, "squat-owner");
    const mark = await counter.mark();
    const { approvalName, executionId } = derivedName(session);
    await squat(await squatBody(session, approvalName, executionId, false));
    await expectRefusedAsConflict(session, approvalName, mark);
  });

  it("made up by the gateway for another requester on a live session fails RequesterMismatch before anyone can approve it, and never runs", async () => {
    const session = await sleepingSession(env, namespace, "impostor");
    const mark = await counter.mark();
    const name = `apr-impostor-${Date.now().toString(36)}`;
    const body = await squatBody(session, name, derivedName(session).executionId, true);
    // Another user's request on alice's session: her session never proposes for bob.
    body.spec.requester = { user: "bob", groups: [] };
    await env.kubectl.ok("admin", ["create", "--as", OPERATOR_USER, "-f", "-"], JSON.stringify(body));
    const failed = await approvalInPhase(session.namespace, name, "Failed");
    expect(failed.status?.conditions).toContainEqual(
      expect.objectContaining({ type: "Decided", reason: "RequesterMismatch" }),
    );
    expect(await executionsOf(session.uid)).toEqual([]);
    expect(await mark.calls()).toEqual([]);
    expect(await mark.effects()).toEqual([]);
  });

  it("made up by the gateway with the call's name and spec for its session's own subject is approved but never runs: the chain holds no approval.requested for it (RequestNotRecorded)", async () => {
    const session = await sleepingSession(env, namespace, "unrequested");
    const mark = await counter.mark();
    const { approvalName, executionId } = derivedName(session);
    await squat(await squatBody(session, approvalName, executionId, true));
    await decide(session.namespace, approvalName, "Approve");
    // Younger than the request grace it waits for the record the gateway appends after creating an
    // Approval; then it ends for good.
    const failed = await approvalInPhase(session.namespace, approvalName, "Failed");
    expect(failed.status?.conditions).toContainEqual(
      expect.objectContaining({ type: "Executed", reason: "RequestNotRecorded" }),
    );
    const kinds = (await auditOf(session.uid)).map((r) => r.kind);
    expect(kinds).not.toContain("approval.requested");
    expect(kinds).toEqual(expect.arrayContaining(["approval.approved", "approval.failed"]));
    expect(await executionsOf(session.uid)).toEqual([]);
    expect(await mark.calls()).toEqual([]);
    expect(await mark.effects()).toEqual([]);
  });
});

describe("an Approval, through the operator's caches", () => {
  it("is waited on at once by its session and by no other; once Rejected, it leaves the session's status and the identical call in a later turn is refused naming it", async () => {
    const [session, other] = await Promise.all([
      sleepingSession(env, namespace, "rejected"),
      sleepingSession(env, namespace, "other"),
    ]);
    const token = await podToken(env, session);
    const mark = await counter.mark();
    const ORDER = '{"orderId":"R-1"}';
    const first = await invokeAs(env, token, call(0, 0, PLACE, ORDER));
    expect(first.body).toMatchObject({ status: "pending_approval" });
    const rejected = first.body.approval?.name ?? "";
    // Waited on at once, as the agent does: the gateway's cache may not hold the new Approval yet.
    const waited = await waitAs(env, token, rejected);
    expect(waited).toMatchObject({ status: 200, body: { phase: "Pending", done: false } });
    const foreign = await waitAs(env, await podToken(env, other), rejected);
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).toContain(`Approval ${rejected} does not belong to this session.`);

    // The operator's caches drive both the session's status.pendingApprovals and Core's look-up of
    // rejections: seeing the Approval listed, then no longer listed, shows the operator knows it Rejected.
    const listed = async (want: boolean) =>
      eventually(`session to ${want ? "list" : "drop"} ${rejected}`, 60_000, async () => {
        const s = await getSession(env, session.namespace, session.name);
        return (s.status?.pendingApprovals ?? []).includes(rejected) === want ? true : undefined;
      });
    await listed(true);
    await decide(session.namespace, rejected, "Reject");
    await approvalInPhase(session.namespace, rejected, "Rejected");
    await listed(false);

    const again = await invokeAs(env, token, call(1, 0, PLACE, ORDER));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "denied", errorKind: "forbidden" });
    expect(again.body.content).toContain(rejected);
    expect((await approvalsOf(session)).map((a) => a.metadata.name)).toEqual([rejected]);
    expect(await mark.calls()).toEqual([]);
  });
});

describe("two Capabilities with the same spec.id in one namespace", () => {
  interface CapabilityObject {
    status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> };
  }
  const readyOf = async (name: string) =>
    (
      await env.kubectl.json<CapabilityObject>("admin", ["get", "capability", name, "-n", namespace])
    ).status?.conditions?.find((c) => c.type === "Ready");
  const COPY = `${capabilityName(READ)}-copy`;

  it("offers neither, refuses the call naming DuplicateId, gives each a condition naming the other, and offers the one left once the copy goes", async () => {
    await env.kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gatehouse.dev/v1alpha1",
        kind: "Capability",
        metadata: { name: COPY, namespace },
        spec: { id: READ, providerRef: { name: "counter" }, policy: { approval: "Forbidden" } },
      }),
    );
    for (const [name, other] of [
      [capabilityName(READ), COPY],
      [COPY, capabilityName(READ)],
    ] as const) {
      const ready = await eventually(`${name} to be Ready=False DuplicateId`, 60_000, async () => {
        const condition = await readyOf(name);
        return condition?.reason === "DuplicateId" ? condition : undefined;
      });
      expect(ready.status).toBe("False");
      expect(ready.message).toContain(
        `Capability ${other} in this namespace also defines the tool ${toolName(READ)}`,
      );
    }

    const session = await sleepingSession(env, namespace, "duplicate");
    const token = await podToken(env, session);
    const view = await getSessionView(env, token);
    const offered = (view.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    expect(offered).not.toContain(toolName(READ));
    expect(offered).toContain(toolName(PLACE));
    // The gateway offers tools by the session's subject too: RESERVED admits only bob.
    expect(offered).not.toContain(toolName(RESERVED));
    // The catalog reads the duplicate from the caches at once; Core's refusal of it is shown in memory.
    const reply = await invokeAs(env, token, call(0, 0, READ, "{}"));
    expect(reply.body).toMatchObject({ status: "denied", errorKind: "unavailable" });
    expect(reply.body.content).toContain("(DuplicateId)");

    await env.kubectl.ok("admin", ["delete", "capability", COPY, "-n", namespace]);
    await eventually(`${capabilityName(READ)} to be Ready again`, 60_000, async () =>
      (await readyOf(capabilityName(READ)))?.status === "True" ? true : undefined,
    );
    const again = await invokeAs(env, token, call(0, 1, READ, "{}"));
    expect(again.body).toMatchObject({ status: "succeeded" });
  });
});

describeInvokeLimits(() => env);

describe("an engine's request for a person, declined by the agent (POST /v1/session/events)", () => {
  const REQUEST = "item/commandExecution/requestApproval";
  const report = (declined: unknown, kind = "approval_declined") => ({ kind, turn: 2, declined });

  it("is kept in the transcript and appended to the audit chain as engine.approval_declined, in the subject's name", async () => {
    const session = await sleepingSession(env, namespace, "declined");
    const token = await podToken(env, session);
    expect(
      (await gatewayRequest(env, token, "POST", "/v1/session/events", report({ request: REQUEST }))).status,
    ).toBe(200);
    expect(await auditOf(session.uid)).toEqual([
      {
        kind: "engine.approval_declined",
        execution_id: null,
        payload: {
          session: `${session.namespace}/${session.name}`,
          engine: "builtin",
          request: REQUEST,
          turn: 2,
        },
      },
    ]);
    const actor = await env.pool.query<{ actor: string; outcome: string }>(
      "SELECT actor, outcome FROM audit_log WHERE session_uid = $1",
      [session.uid],
    );
    expect(actor.rows).toEqual([{ actor: "alice", outcome: "failure" }]);
    const stored = await env.pool.query<{ kind: string; payload: unknown }>(
      "SELECT kind, payload FROM session_events WHERE session_uid = $1 AND source = 'agent'",
      [session.uid],
    );
    expect(stored.rows).toEqual([
      { kind: "approval_declined", payload: { turn: 2, declined: { request: REQUEST } } },
    ]);
  });

  it("refuses a report that carries more than a request's name, or a declined request under another kind: nothing reaches the chain", async () => {
    const session = await sleepingSession(env, namespace, "declined-forged");
    const token = await podToken(env, session);
    for (const body of [
      report({ request: "rm -rf / please approve" }),
      report({ request: "x".repeat(129) }),
      report({ request: REQUEST, command: "curl attacker.example" }),
      report(undefined),
      report({ request: REQUEST }, "assistant_text"),
    ]) {
      const refused = await gatewayRequest(env, token, "POST", "/v1/session/events", body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
    }
    expect(await auditOf(session.uid)).toEqual([]);
  });
});
