/**
 * One approval's way from the API server's answer to the provider, cut into stages with the API
 * server's own timestamps (its audit log, test/bench/api-audit-log.ts) and the host clock of every
 * process of the harness: the decision seen by a watcher, the controller's first request of its pass
 * (the admission check's reads), the end of that check, the controller's status writes, and the
 * provider's handler receiving the call. Pure, so the bench's arithmetic has a unit test.
 */
import type { ApiRequest } from "./api-audit-log.ts";

/** When (epoch ms) one approval's milestones happened, as the bench saw them. */
export interface ApprovalMarks {
  approval: string;
  /** The API server answered the decision's patch (its audit log's stage timestamp). */
  answeredMs: number;
  /** A watch of Approvals opened by the bench saw the decision (undefined: not seen). */
  watchedMs: number | undefined;
  /** The provider's handler got the call. */
  providerMs: number;
}

/** The stages of one approval, in milliseconds; undefined where the requests do not show it. */
export interface ApprovalStages {
  /** The API server's answer → a watcher on this host sees the decision. */
  watch: number | undefined;
  /**
   * The answer → the controller's first request of its pass, an admission-check read or a write of
   * this Approval (watch, work queue, reconcile start).
   */
  toFirstRequest: number | undefined;
  /** The admission check's reads: the first one received → the last one answered. */
  admissionCheck: number | undefined;
  /** The controller's requests about this Approval (status writes) before the provider's call, summed. */
  statusWrites: number;
  /** How many of them ran before the provider's call. */
  statusWritesBefore: number;
  /** The admission check answered → the provider's handler (Postgres, status write, target check, call). */
  checkToProvider: number | undefined;
}

/** Resources the admission check reads (kube/admission/guard.ts). */
const ADMISSION_RESOURCES = new Set(["validatingadmissionpolicies", "validatingadmissionpolicybindings"]);

/**
 * The stages of `marks` from `requests` (the API server's log around it): the controller's
 * (`controllerUser`) admission-check reads and requests about the Approval between the answer and the
 * provider's call.
 */
export function approvalStages(
  marks: ApprovalMarks,
  requests: readonly ApiRequest[],
  controllerUser: string,
): ApprovalStages {
  const within = requests.filter(
    (r) => r.user === controllerUser && r.receivedMs >= marks.answeredMs && r.receivedMs <= marks.providerMs,
  );
  const checks = within.filter((r) => ADMISSION_RESOURCES.has(r.resource));
  const checkStart = checks.length > 0 ? Math.min(...checks.map((r) => r.receivedMs)) : undefined;
  const checkEnd = checks.length > 0 ? Math.max(...checks.map((r) => r.completedMs)) : undefined;
  const writes = within.filter(
    (r) => r.resource === "approvals" && r.name === marks.approval && r.completedMs <= marks.providerMs,
  );
  // The pass's own requests only: the controller's lease renewals and other objects' writes are not it.
  const first = [...checks, ...writes].reduce<ApiRequest | undefined>(
    (a, r) => (a === undefined || r.receivedMs < a.receivedMs ? r : a),
    undefined,
  );
  return {
    watch: marks.watchedMs === undefined ? undefined : marks.watchedMs - marks.answeredMs,
    toFirstRequest: first ? first.receivedMs - marks.answeredMs : undefined,
    admissionCheck: checkStart !== undefined && checkEnd !== undefined ? checkEnd - checkStart : undefined,
    statusWrites: writes.reduce((sum, r) => sum + (r.completedMs - r.receivedMs), 0),
    statusWritesBefore: writes.length,
    checkToProvider: checkEnd === undefined ? undefined : marks.providerMs - checkEnd,
  };
}
