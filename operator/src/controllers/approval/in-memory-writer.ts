/**
 * An {@link ApprovalWriter} in memory, for table tests of the applier: it keeps every write in order,
 * bumps the resourceVersion on each status write as the API server does, and dispatches and resolves
 * through functions the test gives (Core on the in-memory ports, or a fixed result).
 */
import { isDeepStrictEqual } from "node:util";
import type { Approval } from "../../api/kinds.ts";
import type { ExecuteApprovedResult } from "../../core/execute-approved.ts";
import type { AppendedRecord, AuditEntry, AuditLog } from "../../core/ports.ts";
import type { ResolutionEntry, ResolveResult } from "../../core/resolution.ts";
import type { ApprovalStatus, PlannedEvent } from "./plan.ts";
import type { ApprovalWriter, DispatchRequest } from "./writer.ts";

/** One side effect, as the fake saw it. */
export type WriterCall =
  | { kind: "appendAudit"; entries: AuditEntry[] }
  | { kind: "writeStatus"; status: ApprovalStatus; resourceVersion: string | undefined }
  | { kind: "addFinalizer" | "removeFinalizer" | "recordOutcome"; phase: string | undefined }
  | { kind: "event"; event: PlannedEvent }
  | { kind: "observeDecided"; outcome: string }
  | { kind: "dispatch"; request: DispatchRequest }
  | { kind: "resolve"; resolution: ResolutionEntry };

/** The fake and what it recorded. */
export interface InMemoryApprovalWriter extends ApprovalWriter {
  calls: WriterCall[];
  /** Only the status writes (the writes to the API server that move the resourceVersion). */
  statusWrites(): ApprovalStatus[];
}

/**
 * Builds the fake. `audit` receives the appends (default: a counter that only numbers them);
 * `dispatch` answers dispatches (default: throws, so a test that did not expect one fails).
 */
export function inMemoryApprovalWriter(
  options: {
    audit?: Pick<AuditLog, "appendAll">;
    dispatch?: (request: DispatchRequest) => Promise<ExecuteApprovedResult>;
    resolve?: (approval: Approval, resolution: ResolutionEntry) => Promise<ResolveResult>;
  } = {},
): InMemoryApprovalWriter {
  const calls: WriterCall[] = [];
  let seq = 0;
  const numbered = async (entries: readonly AuditEntry[]): Promise<AppendedRecord[]> =>
    entries.map(() => ({ seq: ++seq, hash: seq.toString(16).padStart(64, "0") }));
  return {
    calls,
    statusWrites: () => calls.flatMap((c) => (c.kind === "writeStatus" ? [c.status] : [])),
    async appendAudit(entries) {
      calls.push({ kind: "appendAudit", entries: [...entries] });
      return options.audit ? options.audit.appendAll(entries) : numbered(entries);
    },
    async writeStatus(approval: Approval, status) {
      if (isDeepStrictEqual(approval.status ?? {}, status)) return approval;
      const resourceVersion = String(Number(approval.metadata.resourceVersion ?? "0") + 1);
      calls.push({ kind: "writeStatus", status: structuredClone(status), resourceVersion });
      return {
        ...approval,
        metadata: { ...approval.metadata, resourceVersion },
        status: structuredClone(status),
      };
    },
    async addFinalizer(approval) {
      calls.push({ kind: "addFinalizer", phase: approval.status?.phase });
    },
    async removeFinalizer(approval) {
      calls.push({ kind: "removeFinalizer", phase: approval.status?.phase });
    },
    event(_approval, event) {
      calls.push({ kind: "event", event });
    },
    observeDecided(outcome) {
      calls.push({ kind: "observeDecided", outcome });
    },
    async recordOutcome(approval) {
      calls.push({ kind: "recordOutcome", phase: approval.status?.phase });
    },
    async resolve(approval, resolution) {
      calls.push({ kind: "resolve", resolution });
      if (!options.resolve) throw new Error("in-memory writer: no resolution expected");
      return options.resolve(approval, resolution);
    },
    async dispatch(request) {
      calls.push({ kind: "dispatch", request });
      if (!options.dispatch) throw new Error("in-memory writer: no dispatch expected");
      return options.dispatch(request);
    },
  };
}
