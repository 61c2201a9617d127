/**
 * Approvals as Core's e2e tests read and decide them: the object from the API server, waiting for the
 * operator to move it on, and an approver's decision appended with a JSON patch (DESIGN §2).
 */
import type { Environment } from "./environment.ts";
import type { KubectlResult } from "./kubectl.ts";
import { decisionPatch, eventually } from "./story.ts";

/** The fields of an Approval these tests look at. */
export interface ApprovalObject {
  metadata: { name: string; namespace: string; creationTimestamp?: string };
  spec: {
    executionId: string;
    sessionRef: { name: string; uid: string };
    capabilityId: string;
    arguments: string;
    target?: { kind: string; id: string; version?: string };
    expiresAt: string;
    decisions: Array<{ approver: string; verdict: string }>;
  };
  status?: {
    phase?: string;
    execution?: { id: string; state: string; errorKind?: string; resultSummary?: string };
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

/** Reads Approval `name` as admin. */
export function getApproval(env: Environment, namespace: string, name: string): Promise<ApprovalObject> {
  return env.kubectl.json<ApprovalObject>("admin", ["get", "approval", name, "-n", namespace]);
}

/** The Approvals of one session in `namespace`. */
export async function approvalsOfSession(
  env: Environment,
  namespace: string,
  sessionUid: string,
): Promise<ApprovalObject[]> {
  const list = await env.kubectl.json<{ items: ApprovalObject[] }>("admin", [
    "get",
    "approvals",
    "-n",
    namespace,
  ]);
  return list.items.filter((a) => a.spec.sessionRef.uid === sessionUid);
}

/**
 * Waits until Approval `name` has a phase outside `passing` (phases it only moves through), and
 * returns it — so an unexpected final phase fails the test with that phase, not with a timeout.
 * Throws after `timeoutMs` with the last status seen.
 */
export async function approvalPast(
  env: Environment,
  namespace: string,
  name: string,
  passing: readonly string[],
  timeoutMs = 180_000,
): Promise<ApprovalObject> {
  return eventually(`Approval ${name} to leave ${passing.join("/")}`, timeoutMs, async () => {
    const approval = await getApproval(env, namespace, name);
    const phase = approval.status?.phase;
    if (phase && !passing.includes(phase)) return approval;
    // Reported on timeout as the last error: where the Approval stood.
    throw new Error(`last status ${JSON.stringify(approval.status)}`);
  });
}

/** Phases an Approval passes through on its way from a decision to an outcome. */
export const DISPATCHING = ["Pending", "Approved", "Executing"] as const;

/** Waits until the operator has written the Approval's first status, and returns it. */
export function approvalWithStatus(
  env: Environment,
  namespace: string,
  name: string,
): Promise<ApprovalObject> {
  return approvalPast(env, namespace, name, [], 60_000);
}

/** `who` appends their decision with a JSON patch; returns kubectl's result (never throws). */
export function decide(
  env: Environment,
  namespace: string,
  name: string,
  who: string,
  verdict: "Approve" | "Reject" = "Approve",
): Promise<KubectlResult> {
  return env.kubectl.run(who, [
    "patch",
    "approval",
    name,
    "-n",
    namespace,
    "--type",
    "json",
    "-p",
    decisionPatch(who, verdict),
  ]);
}
