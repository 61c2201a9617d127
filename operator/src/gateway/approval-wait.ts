/**
 * Waiting for an Approval to be decided and executed, as the agent-facing routes do it: the long-poll
 * `GET /v1/approvals/{name}/wait` and the MCP endpoint's `tools/call` that keeps its request open.
 * One loop for both, so their bounds, their view of the cache and their cancellation are the same.
 */
import type { ApprovalWait } from "../api/agent-protocol.ts";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { GatehouseError } from "../core/errors.ts";
import type { CoreDeps } from "../core/ports.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import { answerOfApproval, isSettled, recordApprovalOutcome } from "../transcripts/approval-outcome.ts";

/** How long a wait lets the informer catch up with an Approval created a moment ago, in milliseconds. */
export const APPROVAL_ARRIVAL_MS = 5_000;
/** How often the cache is read again while the Approval is unsettled, in milliseconds. */
const POLL_MS = 250;
const ARRIVAL_POLL_MS = 50;

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

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Waits until `request.name` is settled (isSettled), the time is up, the signal aborts or the replica
 * stops, and returns the Approval as last read (settled or not). Reads the informer cache only.
 * Errors: `not_found` when the Approval is not the session's (after APPROVAL_ARRIVAL_MS) or is gone.
 */
export async function waitForApproval(caches: Caches, request: ApprovalWaitRequest): Promise<Approval> {
  const { session, signal } = request;
  const read = (): Approval | undefined => {
    const approval = caches.approvals.get(request.name, session.metadata.namespace);
    return approval?.spec.sessionRef.uid === session.metadata.uid ? approval : undefined;
  };
  // The agent asks right after its invoke created the Approval — on this replica or another — and
  // the informer may not have delivered it yet: the cache gets a bounded moment to catch up.
  let approval = read();
  const arrival = Date.now() + APPROVAL_ARRIVAL_MS;
  while (!approval && Date.now() < arrival && !signal.aborted) {
    await pause(ARRIVAL_POLL_MS, signal);
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
    await pause(Math.min(POLL_MS, Math.max(0, deadline - Date.now())), signal);
    approval = read();
  }
  if (!approval) throw new GatehouseError("not_found", `Approval ${request.name} is gone.`);
  return approval;
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
