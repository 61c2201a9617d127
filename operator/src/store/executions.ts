/**
 * Execution rows in Postgres (DESIGN §4 step 8, §6): the `ExecutionStore` port. A row is claimed with
 * `INSERT … ON CONFLICT DO NOTHING`, so of any number of concurrent claims for one execution identity
 * (or one idempotency key) exactly one is told it owns the row; the others get the existing row.
 */
import { ErrorKind, Idempotency, InvokeRequest, InvokeResponse } from "@gatehouse/provider-sdk";
import type pg from "pg";
import { GatehouseError } from "../core/errors.ts";
import type {
  ExecutionOutcome,
  ExecutionRecord,
  ExecutionState,
  ExecutionStore,
  NewExecution,
} from "../core/ports.ts";
import { toOptionalSafeInteger, toOptionalString, toSafeInteger } from "./sql-values.ts";
import { storableJson, storableText } from "./storable-json.ts";

/** The Postgres execution store: the port plus lookups used by the gateway and controllers. */
export interface PostgresExecutionStore extends ExecutionStore {
  findByIdempotencyKey(idempotencyKey: string): Promise<ExecutionRecord | undefined>;
  /** A session's executions, oldest first. */
  listBySession(sessionUid: string): Promise<ExecutionRecord[]>;
}

const COLUMNS = `id, idempotency_key, session_uid, session_namespace, session_name, capability,
  provider_namespace, provider_name, approval_name, state, request_digest, request, arguments_canonical,
  receipt, error_kind, message, lease_until_us, created_at_us, updated_at_us, finish_audit_seq, fencing_token,
  idempotency, never_sent, settle_attempts, next_settle_us, resolved_by, resolution_reason`;

// The hot path's statements are named (prepared once per connection, then only bound and run).
const SELECT_BY_ID = `SELECT ${COLUMNS} FROM executions WHERE id = $1`;

/** A Postgres-backed execution store on `pool` (connect as `gatehouse_operator` in production). */
export function createPostgresExecutionStore(pool: pg.Pool): PostgresExecutionStore {
  async function selectOne(where: string, params: unknown[]): Promise<ExecutionRecord | undefined> {
    const result = await pool.query(`SELECT ${COLUMNS} FROM executions WHERE ${where}`, params);
    return result.rows[0] ? recordFromRow(result.rows[0]) : undefined;
  }

  return {
    async claim(row: NewExecution) {
      const inserted = await pool.query({
        name: "executions.claim",
        text: `INSERT INTO executions (id, idempotency_key, session_uid, session_namespace, session_name, capability,
           provider_namespace, provider_name, approval_name, state, request_digest, request, arguments_canonical,
           lease_until_us, created_at_us, updated_at_us, idempotency)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'started', $10, $11, $12, $13, $14, $14, $15)
         ON CONFLICT DO NOTHING
         RETURNING ${COLUMNS}`,
        values: [
          row.id,
          row.idempotencyKey,
          row.session.uid,
          row.session.namespace,
          row.session.name,
          row.capability,
          row.providerRef.namespace,
          row.providerRef.name,
          row.approvalName ?? null,
          row.requestDigest,
          JSON.stringify(row.request),
          row.argumentsCanonical,
          row.leaseUntilMicros,
          row.atMicros,
          row.idempotency,
        ],
      });
      if (inserted.rows[0]) return { owned: true, execution: recordFromRow(inserted.rows[0]) };
      // The conflicting row is committed (ON CONFLICT waited for its transaction), so it is visible now.
      const existing = await selectOne(
        // A never-sent failure may share the key with its re-run: name the row that holds it.
        "id = $1 OR idempotency_key = $2 ORDER BY (id = $1) DESC, (state = 'failed' AND never_sent) LIMIT 1",
        [row.id, row.idempotencyKey],
      );
      if (!existing) {
        throw new GatehouseError("internal", `execution ${row.id}: claim conflicted but no row is visible`);
      }
      if (existing.id !== row.id) {
        throw new GatehouseError(
          "conflict",
          `idempotency key ${row.idempotencyKey} already belongs to execution ${existing.id}, not ${row.id}`,
        );
      }
      return { owned: false, execution: existing };
    },

    async get(id) {
      const result = await pool.query({ name: "executions.get", text: SELECT_BY_ID, values: [id] });
      return result.rows[0] ? recordFromRow(result.rows[0]) : undefined;
    },

    findByIdempotencyKey(idempotencyKey) {
      return selectOne("idempotency_key = $1", [idempotencyKey]);
    },

    async listBySession(sessionUid) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions WHERE session_uid = $1 ORDER BY created_at_us, id`,
        [sessionUid],
      );
      return result.rows.map(recordFromRow);
    },

    async recordReceipt(id: string, outcome: ExecutionOutcome, fencingToken: number) {
      const updated = await pool.query({
        name: "executions.recordReceipt",
        text: `UPDATE executions
            SET state = $2, receipt = $3, error_kind = $4, message = $5, updated_at_us = $6,
                finish_audit_seq = NULL, never_sent = $8, next_settle_us = $9
          WHERE id = $1 AND fencing_token = $7
            AND (state = 'started' OR (state = 'unknown' AND $2 IN ('succeeded', 'failed')))
          RETURNING ${COLUMNS}`,
        values: [
          id,
          outcome.state,
          // A provider's result may hold U+0000, which jsonb and text refuse: a refused UPDATE would
          // leave a call that ran without its outcome, so the row keeps U+FFFD there.
          outcome.receipt === undefined ? null : JSON.stringify(storableJson(outcome.receipt)),
          outcome.errorKind ?? null,
          outcome.message === undefined ? null : storableText(outcome.message),
          outcome.atMicros,
          fencingToken,
          outcome.state === "failed" && outcome.neverSent === true,
          outcome.state === "unknown" ? (outcome.nextSettleMicros ?? null) : null,
        ],
      });
      if (updated.rows[0]) return { recorded: true, execution: recordFromRow(updated.rows[0]) };
      const current = await selectOne("id = $1", [id]);
      if (!current) throw new GatehouseError("not_found", `execution ${id} does not exist`);
      return { recorded: false, execution: current };
    },

    async renewLease(id, fencingToken, leaseUntilMicros, nowMicros) {
      const result = await pool.query(
        `UPDATE executions SET lease_until_us = $3, updated_at_us = $4
          WHERE id = $1 AND fencing_token = $2 AND state = 'started'`,
        [id, fencingToken, leaseUntilMicros, nowMicros],
      );
      return result.rowCount === 1;
    },

    async takeOverExpired(id, leaseUntilMicros, nowMicros) {
      // One UPDATE decides the race: row locks make concurrent callers re-check the WHERE clause.
      const result = await pool.query(
        `UPDATE executions SET lease_until_us = $2, updated_at_us = $3, fencing_token = fencing_token + 1
          WHERE id = $1 AND state = 'started' AND lease_until_us < $3
          RETURNING ${COLUMNS}`,
        [id, leaseUntilMicros, nowMicros],
      );
      return result.rows[0] ? recordFromRow(result.rows[0]) : undefined;
    },

    async takeUnknownForSettling(id, leaseUntilMicros, nowMicros, nextSettleMicros) {
      const result = await pool.query(
        `UPDATE executions
            SET lease_until_us = $2, fencing_token = fencing_token + 1,
                settle_attempts = settle_attempts + 1, next_settle_us = $4
          WHERE id = $1 AND state = 'unknown' AND next_settle_us < $3 AND lease_until_us < $3
          RETURNING ${COLUMNS}`,
        [id, leaseUntilMicros, nowMicros, nextSettleMicros ?? null],
      );
      return result.rows[0] ? recordFromRow(result.rows[0]) : undefined;
    },

    async listUnsettled(nowMicros, limit) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions
          WHERE state = 'unknown' AND next_settle_us < $1 AND lease_until_us < $1
          ORDER BY next_settle_us, id LIMIT $2`,
        [nowMicros, limit],
      );
      return result.rows.map(recordFromRow);
    },

    async listExpired(nowMicros, limit) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions WHERE state = 'started' AND lease_until_us < $1
          ORDER BY lease_until_us, id LIMIT $2`,
        [nowMicros, limit],
      );
      return result.rows.map(recordFromRow);
    },

    async markFinishAudited(id, seq) {
      const result = await pool.query({
        name: "executions.markFinishAudited",
        text: `UPDATE executions SET finish_audit_seq = $2
          WHERE id = $1 AND state <> 'started' AND finish_audit_seq IS NULL`,
        values: [id, seq],
      });
      return result.rowCount === 1;
    },

    async listUnknownWithoutApproval(sinceMicros, limit) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions
          WHERE state = 'unknown' AND approval_name IS NULL AND updated_at_us > $1
          ORDER BY updated_at_us DESC, id LIMIT $2`,
        [sinceMicros, limit],
      );
      return result.rows.map(recordFromRow);
    },

    async findByAction(action) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions
          WHERE session_uid = $1 AND capability = $2 AND request_digest = $3
          ORDER BY created_at_us, id`,
        [action.sessionUid, action.capability, action.argumentsDigest],
      );
      return result.rows.map(recordFromRow);
    },

    async recordResolution(id, resolution) {
      // The receipt and error kind stay as the unknown outcome left them: the person's word is the
      // resolution, not a receipt.
      const updated = await pool.query(
        `UPDATE executions
            SET state = $2, message = $3, resolved_by = $4, resolution_reason = $5, updated_at_us = $6,
                finish_audit_seq = NULL, next_settle_us = NULL
          WHERE id = $1 AND state = 'unknown'
          RETURNING ${COLUMNS}`,
        [
          id,
          resolution.state,
          resolution.message,
          resolution.resolver,
          resolution.reason,
          resolution.atMicros,
        ],
      );
      if (updated.rows[0]) return { recorded: true, execution: recordFromRow(updated.rows[0]) };
      const current = await selectOne("id = $1", [id]);
      if (!current) throw new GatehouseError("not_found", `execution ${id} does not exist`);
      return { recorded: false, execution: current };
    },

    async listUnauditedFinishes(finishedBeforeMicros, limit) {
      const result = await pool.query(
        `SELECT ${COLUMNS} FROM executions
          WHERE finish_audit_seq IS NULL AND state <> 'started' AND updated_at_us < $1
          ORDER BY updated_at_us, id LIMIT $2`,
        [finishedBeforeMicros, limit],
      );
      return result.rows.map(recordFromRow);
    },
  };
}

const STATES: readonly ExecutionState[] = ["started", "succeeded", "failed", "unknown"];

/** Maps a row to a record, parsing the JSON columns with the provider contract's zod schemas. */
function recordFromRow(row: Record<string, unknown>): ExecutionRecord {
  const state = String(row.state) as ExecutionState;
  if (!STATES.includes(state))
    throw new GatehouseError("internal", `execution ${row.id}: unknown state ${state}`);
  const record: ExecutionRecord = {
    id: String(row.id),
    idempotencyKey: String(row.idempotency_key),
    session: {
      uid: String(row.session_uid),
      namespace: String(row.session_namespace),
      name: String(row.session_name),
    },
    capability: String(row.capability),
    providerRef: { namespace: String(row.provider_namespace), name: String(row.provider_name) },
    request: InvokeRequest.parse(row.request),
    argumentsCanonical: String(row.arguments_canonical),
    requestDigest: String(row.request_digest),
    idempotency: Idempotency.parse(row.idempotency),
    fencingToken: toSafeInteger(row.fencing_token, "fencing_token"),
    neverSent: row.never_sent === true,
    settleAttempts: toSafeInteger(row.settle_attempts, "settle_attempts"),
    leaseUntilMicros: toSafeInteger(row.lease_until_us, "lease_until_us"),
    atMicros: toSafeInteger(row.created_at_us, "created_at_us"),
    state,
    createdAtMicros: toSafeInteger(row.created_at_us, "created_at_us"),
    updatedAtMicros: toSafeInteger(row.updated_at_us, "updated_at_us"),
  };
  const approvalName = toOptionalString(row.approval_name);
  if (approvalName !== undefined) record.approvalName = approvalName;
  if (row.receipt !== null && row.receipt !== undefined) record.receipt = InvokeResponse.parse(row.receipt);
  if (row.error_kind !== null && row.error_kind !== undefined)
    record.errorKind = ErrorKind.parse(row.error_kind);
  const message = toOptionalString(row.message);
  if (message !== undefined) record.message = message;
  const finishAuditSeq = toOptionalSafeInteger(row.finish_audit_seq, "finish_audit_seq");
  if (finishAuditSeq !== undefined) record.finishAuditSeq = finishAuditSeq;
  const nextSettleMicros = toOptionalSafeInteger(row.next_settle_us, "next_settle_us");
  if (nextSettleMicros !== undefined) record.nextSettleMicros = nextSettleMicros;
  const resolver = toOptionalString(row.resolved_by);
  if (resolver !== undefined) {
    record.resolution = { resolver, reason: toOptionalString(row.resolution_reason) ?? "" };
  }
  return record;
}
