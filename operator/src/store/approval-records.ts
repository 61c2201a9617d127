/**
 * One Approval's records, found in the audit chain alone (after its session and the Approval are
 * gone). An Approval is named `apr-<first 20 hex of the execution id>` (core/execution-identity.ts),
 * so its executions are the ids with that prefix whose `approval.requested` (or `approval.conflict`)
 * record names it; every record of those executions is its history.
 *
 * The prefix is read as a range on `execution_id` (`>= prefix AND < prefix || 'g'`), which the index
 * `audit_log_by_execution` serves whatever the database's collation; a `LIKE 'prefix%'` alone would
 * be indexable only under the C collation.
 */
import type pg from "pg";
import { END_KINDS } from "../core/approval-lifecycle.ts";
import { AuditKind, decodeAuditRecord } from "../core/audit.ts";
import type { AuditEntry, ChainedRecord } from "../core/ports.ts";
import { createPostgresAuditLog } from "./audit/log.ts";
import { AUDIT_COLUMN_LIST, sealedFromRow } from "./audit/row.ts";

/** The record appended when the database was migrated to audited Approval lifecycles. */
export const LIFECYCLE_MARKER_KIND = AuditKind.lifecycleMarker;

/** The records that say which Approval an execution asked for. */
const NAMING_KINDS = [AuditKind.approvalRequested, AuditKind.approvalConflict];

/** Number of hex digits of the execution id in an Approval's name. */
const NAME_PREFIX_LENGTH = 20;

/** Which Approval to look for; without `namespace`, every namespace's Approval of that name. */
export interface ApprovalRef {
  name: string;
  namespace?: string | undefined;
}

/** One execution's records for Approval `namespace/name`, ascending by seq. */
export interface ApprovalRecords {
  namespace: string;
  name: string;
  executionId: string;
  records: ChainedRecord[];
}

/** What the chain holds for an Approval name. */
export interface ApprovalRecordsFound {
  /** One entry per (namespace, execution), by namespace then first seq; empty when nothing names it. */
  histories: ApprovalRecords[];
  /** Seq of the `audit.lifecycle_marker` record: requests before it predate audited decisions. */
  lifecycleMarkerSeq?: number;
}

/** Seq of the chain's `audit.lifecycle_marker` record, or undefined when it has none. */
async function lifecycleMarkerSeqOf(pool: pg.Pool): Promise<number | undefined> {
  const marker = await pool.query<{ seq: string }>(
    "SELECT seq FROM audit_log WHERE kind = $1 ORDER BY seq LIMIT 1",
    [LIFECYCLE_MARKER_KIND],
  );
  return marker.rows[0] ? Number(marker.rows[0].seq) : undefined;
}

/** The execution id prefix of Approval name `apr-<20 hex>`, or undefined for any other name. */
export function executionIdPrefixOf(approvalName: string): string | undefined {
  const match = new RegExp(`^apr-([0-9a-f]{${NAME_PREFIX_LENGTH}})$`).exec(approvalName);
  return match?.[1];
}

/**
 * The namespace of the Approval a naming record names, when it names `name`: `payload.approval` is
 * `namespace/name`, or (records of earlier versions) the bare name, the namespace then being the
 * session's (`payload.session` = `namespace/session`).
 */
export function namespaceNamedBy(record: AuditEntry, name: string): string | undefined {
  const approval = record.payload.approval;
  if (typeof approval !== "string") return undefined;
  const slash = approval.indexOf("/");
  if (slash > 0) return approval.slice(slash + 1) === name ? approval.slice(0, slash) : undefined;
  if (approval !== name) return undefined;
  const session = record.payload.session;
  if (typeof session !== "string" || session.indexOf("/") <= 0) return undefined;
  return session.slice(0, session.indexOf("/"));
}

/**
 * The records of one execution that belong to Approval `namespace/name`: those naming it
 * ({@link namespaceNamedBy}; a bare name without a session, as `execution.started` has it, by name)
 * and those naming no Approval (the execution's own: finished, recovering, …). A record under this
 * execution id that names another Approval is that one's, not this one's. Pure.
 */
export function recordsOfApproval(
  records: readonly ChainedRecord[],
  namespace: string,
  name: string,
): ChainedRecord[] {
  return records.filter((record) => {
    const approval = record.payload.approval;
    if (approval === undefined || approval === null) return true;
    if (typeof approval === "string" && !approval.includes("/") && typeof record.payload.session !== "string")
      return approval === name;
    return namespaceNamedBy(record, name) === namespace;
  });
}

/**
 * One execution's records split by Approval object: a request naming another object (`approvalUid`)
 * than the one before starts a new history — the Approval was deleted and re-created under its name.
 * Records that name no object (executions, earlier versions) stay with the current one. Pure.
 */
export function byObject(records: readonly ChainedRecord[]): ChainedRecord[][] {
  const histories: ChainedRecord[][] = [];
  let current: ChainedRecord[] = [];
  let uid: unknown;
  for (const record of records) {
    const recordUid = record.payload.approvalUid;
    if (
      record.kind === AuditKind.approvalRequested &&
      recordUid !== undefined &&
      uid !== undefined &&
      recordUid !== uid
    ) {
      histories.push(current);
      current = [];
    }
    if (recordUid !== undefined) uid = recordUid;
    current.push(record);
  }
  if (current.length > 0) histories.push(current);
  return histories;
}

/**
 * Finds the records of Approval `ref` on `pool` (needs SELECT on `audit_log`). A name that is not
 * `apr-<20 hex>` names no Approval Gatehouse created: nothing is found.
 * Errors: pg errors; `internal` for a row that cannot be decoded.
 */
export async function readApprovalRecords(pool: pg.Pool, ref: ApprovalRef): Promise<ApprovalRecordsFound> {
  const lifecycleMarkerSeq = await lifecycleMarkerSeqOf(pool);
  const found: ApprovalRecordsFound = {
    histories: [],
    ...(lifecycleMarkerSeq !== undefined ? { lifecycleMarkerSeq } : {}),
  };
  const prefix = executionIdPrefixOf(ref.name);
  if (prefix === undefined) return found;

  const naming = await pool.query(
    `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log
      WHERE execution_id >= $1 AND execution_id < $2 AND execution_id LIKE $3 AND kind = ANY($4)
      ORDER BY seq`,
    [prefix, `${prefix}g`, `${prefix}%`, NAMING_KINDS],
  );
  const namespaces = new Map<string, string>();
  for (const row of naming.rows) {
    const sealed = sealedFromRow(row);
    if (sealed.executionId === null || namespaces.has(sealed.executionId)) continue;
    const namespace = namespaceNamedBy(decodeAuditRecord(sealed.canonical).entry, ref.name);
    if (namespace === undefined || (ref.namespace !== undefined && namespace !== ref.namespace)) continue;
    namespaces.set(sealed.executionId, namespace);
  }

  const log = createPostgresAuditLog(pool);
  for (const [executionId, namespace] of namespaces) {
    for (const records of byObject(
      recordsOfApproval(await log.recordsOf(executionId), namespace, ref.name),
    )) {
      found.histories.push({ namespace, name: ref.name, executionId, records });
    }
  }
  found.histories.sort(
    (a, b) =>
      (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0) ||
      (a.records[0]?.seq ?? 0) - (b.records[0]?.seq ?? 0),
  );
  return found;
}

/** An `approval.requested` record after the lifecycle marker with no end of its Approval after it. */
export interface OpenRequest {
  seq: number;
  atMicros: number;
  executionId: string;
  namespace: string;
  name: string;
  /** The uid of the Approval object the request created, when the record names it. */
  approvalUid?: string;
}

/** SQL: `payload.approvalUid` of audit row `alias`, from its hashed bytes (NULL when absent). */
const UID_OF = (alias: string) =>
  `(convert_from(${alias}.canonical, 'UTF8')::jsonb #>> '{payload,approvalUid}')`;

/** The requests the chain holds no end for, and where the exemption of earlier ones ends. */
export interface OpenRequestsFound {
  /** Seq of the `audit.lifecycle_marker` record; requests before it are exempt (none when absent). */
  lifecycleMarkerSeq?: number;
  /** Oldest first; one per execution (a repeated request counts once). */
  open: OpenRequest[];
}

/**
 * The Approval requests without an end in the chain (DESIGN §6 "no request without an end"): every
 * `approval.requested` after the lifecycle marker with no end record (`approval.approved`, `.rejected`,
 * `.expired`, `.cancelled`, `.stale`, `.failed`) of its execution after it. Each is either still
 * Pending in the cluster or a lost end. Errors: pg errors.
 */
export async function readOpenRequests(pool: pg.Pool): Promise<OpenRequestsFound> {
  const lifecycleMarkerSeq = await lifecycleMarkerSeqOf(pool);
  // An end answers a request of the same execution after it, and of the same object when both name
  // one (an Approval re-created under its name is another object with a history of its own).
  const rows = await pool.query(
    `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log r
      WHERE r.kind = $1 AND r.seq > $2
        AND NOT EXISTS (
          SELECT 1 FROM audit_log e
           WHERE e.execution_id = r.execution_id AND e.seq > r.seq AND e.kind = ANY($3)
             AND (${UID_OF("r")} IS NULL OR ${UID_OF("e")} IS NULL OR ${UID_OF("e")} = ${UID_OF("r")}))
      ORDER BY r.seq`,
    [AuditKind.approvalRequested, lifecycleMarkerSeq ?? 0, [...END_KINDS]],
  );
  const open: OpenRequest[] = [];
  const seen = new Set<string>();
  for (const row of rows.rows) {
    const sealed = sealedFromRow(row);
    const { entry } = decodeAuditRecord(sealed.canonical);
    const approvalUid = typeof entry.payload.approvalUid === "string" ? entry.payload.approvalUid : undefined;
    const key = `${sealed.executionId}/${approvalUid ?? ""}`;
    if (sealed.executionId === null || seen.has(key)) continue;
    seen.add(key);
    const approval = String(entry.payload.approval ?? "");
    const name = approval.includes("/") ? approval.slice(approval.indexOf("/") + 1) : approval;
    const namespace = namespaceNamedBy(entry, name) ?? "";
    open.push({
      seq: sealed.seq,
      atMicros: sealed.atMicros,
      executionId: sealed.executionId,
      namespace,
      name,
      ...(approvalUid !== undefined ? { approvalUid } : {}),
    });
  }
  return { ...(lifecycleMarkerSeq !== undefined ? { lifecycleMarkerSeq } : {}), open };
}

/**
 * A dispatch with no `approval.requested` of its execution before it: an `execution.started` that
 * names an Approval — an approved call ran that no tool call asked for.
 */
export interface UnrequestedDispatch {
  seq: number;
  atMicros: number;
  executionId: string;
  /** The Approval its `execution.started` names (the bare name). */
  approval: string;
}

/**
 * The dispatches after the lifecycle marker (all, without one) with no `approval.requested` of the
 * same execution at a lower seq, oldest first. Errors: pg errors.
 */
export async function readUnrequestedDispatches(
  pool: pg.Pool,
  lifecycleMarkerSeq: number | undefined,
): Promise<UnrequestedDispatch[]> {
  // audit_log_by_kind serves the starts; audit_log_by_execution the look-back for each.
  const rows = await pool.query(
    `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log d
      WHERE d.kind = $1 AND d.seq > $2 AND d.execution_id IS NOT NULL
        AND coalesce(convert_from(d.canonical, 'UTF8')::jsonb #> '{payload,approval}', 'null') <> 'null'
        AND NOT EXISTS (
          SELECT 1 FROM audit_log r WHERE r.execution_id = d.execution_id AND r.seq < d.seq AND r.kind = $3)
      ORDER BY d.seq`,
    [AuditKind.executionStarted, lifecycleMarkerSeq ?? 0, AuditKind.approvalRequested],
  );
  return rows.rows.map((row) => {
    const sealed = sealedFromRow(row);
    const { entry } = decodeAuditRecord(sealed.canonical);
    return {
      seq: sealed.seq,
      atMicros: sealed.atMicros,
      executionId: String(sealed.executionId),
      approval: String(entry.payload.approval),
    };
  });
}
