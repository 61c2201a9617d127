/**
 * `gatehouse-audit lifecycle`'s verdict: every Approval request after the lifecycle marker has an end
 * in the chain, or its Approval is still in the cluster (it is Pending, or its end is on its way). A
 * request with neither lost its end — e.g. its finalizer was removed by hand while no operator ran.
 * And no approved call ran without a request: an `execution.started` naming an Approval with no
 * `approval.requested` of its execution before it is flagged (no tool call asked for it).
 * Pure: the open requests come from `store/approval-records.ts`, the Approvals from the API server.
 */
import type { OpenRequest, OpenRequestsFound, UnrequestedDispatch } from "../store/approval-records.ts";

/** What the API server holds for an open request's Approval: its phase, or nothing. */
export type ApprovalLookup = { found: true; phase: string; uid?: string } | { found: false };

/** The verdict, by request. */
export interface LifecycleReport {
  ok: boolean;
  lifecycleMarkerSeq?: number;
  /** Open requests whose Approval is still in the cluster. */
  waiting: Array<OpenRequest & { phase: string }>;
  /** Open requests whose Approval is gone: their end is lost. */
  lost: OpenRequest[];
  /** Approved calls that started with no `approval.requested` before them. */
  unrequested: UnrequestedDispatch[];
}

/** The key of an open request's Approval in `lookups`. */
export function approvalKey(request: Pick<OpenRequest, "namespace" | "name">): string {
  return `${request.namespace}/${request.name}`;
}

/**
 * The verdict on `found` given what the cluster holds (a request without a lookup counts as lost) and
 * the dispatches the chain holds no request for.
 */
export function lifecycleReportOf(
  found: OpenRequestsFound,
  lookups: ReadonlyMap<string, ApprovalLookup>,
  unrequested: readonly UnrequestedDispatch[] = [],
): LifecycleReport {
  const waiting: LifecycleReport["waiting"] = [];
  const lost: OpenRequest[] = [];
  for (const request of found.open) {
    const lookup = lookups.get(approvalKey(request));
    // The object of that name must be the one the request created, not one re-created since.
    const same = lookup?.found && (request.approvalUid === undefined || lookup.uid === request.approvalUid);
    if (lookup?.found && same) waiting.push({ ...request, phase: lookup.phase });
    else lost.push(request);
  }
  return {
    ok: lost.length === 0 && unrequested.length === 0,
    ...(found.lifecycleMarkerSeq !== undefined ? { lifecycleMarkerSeq: found.lifecycleMarkerSeq } : {}),
    waiting,
    lost,
    unrequested: [...unrequested],
  };
}

function time(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** The report as lines for a terminal. */
export function lifecycleReportLines(report: LifecycleReport): string[] {
  const lines = [
    report.lifecycleMarkerSeq !== undefined
      ? `lifecycle marker at seq ${report.lifecycleMarkerSeq}: requests before it predate recorded decisions and are not checked`
      : "no lifecycle marker: every request in the chain is checked",
  ];
  for (const w of report.waiting) {
    lines.push(
      `  seq ${w.seq}  ${time(w.atMicros)}  Approval ${approvalKey(w)} has no end yet; it is ${w.phase} in the cluster`,
    );
  }
  for (const l of report.lost) {
    lines.push(
      `  seq ${l.seq}  ${time(l.atMicros)}  Approval ${approvalKey(l)} (execution ${l.executionId}) has no end in the chain and is gone from the cluster (or re-created as another object): its end was lost (was its finalizer removed by hand?)`,
    );
  }
  for (const u of report.unrequested) {
    lines.push(
      `  seq ${u.seq}  ${time(u.atMicros)}  execution ${u.executionId} of Approval ${u.approval} started with no approval.requested before it: no tool call asked for it (who created the Approval? see the API server's audit log)`,
    );
  }
  const open = report.waiting.length + report.lost.length;
  const lostLine = `${report.lost.length} Approval request${report.lost.length === 1 ? "" : "s"} without an end`;
  const unrequestedLine = `${report.unrequested.length} approved call${report.unrequested.length === 1 ? "" : "s"} run without a request`;
  const problems = [
    ...(report.lost.length > 0 ? [lostLine] : []),
    ...(report.unrequested.length > 0 ? [unrequestedLine] : []),
  ];
  lines.push(
    report.ok
      ? `every Approval request has an end in the chain${open > 0 ? `, or its Approval is still in the cluster (${open} waiting)` : ""}`
      : `${problems.join("; ")}: gatehouse-audit show --approval NAME prints what the chain holds`,
  );
  return lines;
}
