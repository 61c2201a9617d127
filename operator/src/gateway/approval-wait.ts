/**
 * Waiting for an Approval to be decided and executed, as the agent-facing routes do it: the long-poll
 * `GET /v1/approvals/{name}/wait` and the MCP endpoint's `tools/call` that keeps its request open.
 * One loop for both, so their bounds, their view of the cache and their cancellation are the same.
 * The wait wakes on the cache's change events for its Approval, so a decision is answered as soon as
 * the informer delivers it; a slow check besides notices a replica that began to stop.
 */
import type { ApprovalWait } from "../api/agent-protocol.ts";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { GatehouseError } from "../core/errors.ts";
import type { CoreDeps } from "../core/ports.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import { answerOfApproval, isSettled, recordApprovalOutcome } from "../transcripts/approval-outcome.ts";
import { changesOf, watchOf } from "./cache-changes.ts";

/** How long a wait lets the informer catch up with an Approval created a moment ago, in milliseconds. */
export const APPROVAL_ARRIVAL_MS = 5_000;
/**
 * How often a wait with no change to its Approval looks whether the replica is stopping (and reports
 * progress through onPending), in milliseconds. A change wakes it at once.
 */
export const APPROVAL_CHECK_MS = 1_000;

export interface ApprovalWaitRequest {
  /** The Approval's name; only one of `session`'s own Approvals is ever waited on. */
  name: string;
  session: AgentSession;
  /** How long to wait for a decision and its execution, in milliseconds. */
  timeoutMs: number;
  /** Aborted when the client hung up or cancelled: the wait ends, the Approval is left as it is. */
  signal: AbortSignal;
  /** True once this replica is stopping: the wait ends early so the client asks a live replica. */
  stopping: () => boolean;
  /** Called on every look at the Approval while it is unsettled (the MCP endpoint's progress). */
  onPending?: (approval: Approval) => void | Promise<void>;
}

/**
 * Waits until `request.name` is settled (isSettled), the time is up, the signal aborts or the replica
 * stops, and returns the Approval as last read (settled or not). Reads the informer cache only, again
 * at each of its change events for the Approval, and every APPROVAL_CHECK_MS otherwise.
 * Errors: `not_found` when the Approval is not the session's (after APPROVAL_ARRIVAL_MS) or is gone.
 */
export async function waitForApproval(caches: Caches, request: ApprovalWaitRequest): Promise<Approval> {
  const { session, signal } = request;
  const read = (): Approval | undefined => {
    const approval = caches.approvals.get(request.name, session.metadata.namespace);
    return approval?.spec.sessionRef.uid === session.metadata.uid ? approval : undefined;
  };
  // Subscribed before the first read, so no change between the read and the wait is missed.
  const changes = changesOf(
    [
      watchOf(
        caches.approvals,
        (object) =>
          object.metadata.name === request.name && object.metadata.namespace === session.metadata.namespace,
      ),
    ],
    signal,
  );
  try {
    // The agent asks right after its invoke created the Approval — on this replica or another — and
    // the informer may not have delivered it yet: the cache gets a bounded moment to catch up.
    let approval = read();
    const arrival = Date.now() + APPROVAL_ARRIVAL_MS;
    while (!approval && Date.now() < arrival && !signal.aborted) {
      await changes.next(arrival - Date.now());
      approval = read();
    }
    if (!approval)
      throw new GatehouseError("not_found", `Approval ${request.name} does not belong to this session.`);
    const deadline = Date.now() + request.timeoutMs;
    while (
      approval &&
      !isSettled(approval) &&
      Date.now() < deadline &&
      !signal.aborted &&
      !request.stopping()
    ) {
      await request.onPending?.(approval);
      await changes.next(Math.min(APPROVAL_CHECK_MS, Math.max(0, deadline - Date.now())));
      approval = read();
    }
    if (!approval) throw new GatehouseError("not_found", `Approval ${request.name} is gone.`);
    return approval;
  } finally {
    changes.close();
  }
}

/**
 * The wait's answer for `approval` as last read: its phase, and once it is settled the tool result
 * (from Core's records), which is then appended to the transcript as `approval_outcome` (once).
 * Errors: Postgres errors.
 */
export async function approvalWaitAnswer(
  core: CoreDeps,
  transcripts: TranscriptStore,
  approval: Approval,
  atMicros: number,
): Promise<ApprovalWait> {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  const body: ApprovalWait = { name: approval.metadata.name, phase, done: isSettled(approval) };
  if (body.done) {
    body.answer = await answerOfApproval(core, approval);
    await recordApprovalOutcome(core, transcripts, approval, atMicros);
  }
  return body;
}

/** An AbortSignal that aborts when the HTTP response closes (answered or the client gone). */
export function signalOfResponse(response: NodeJS.EventEmitter): AbortSignal {
  const controller = new AbortController();
  response.once("close", () => controller.abort());
  return controller.signal;
}
