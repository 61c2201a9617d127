/**
 * Core's records in Postgres as Core's e2e tests read them, through the environment's owner pool:
 * execution rows (`executions`, DESIGN §6) and the audit rows of one execution (`audit_log`, whose
 * payload lives in the exact hashed canonical bytes).
 */
import type pg from "pg";

/** The columns of an execution row these tests look at. */
export interface ExecutionRow {
  id: string;
  idempotencyKey: string;
  state: string;
  errorKind: string | null;
  message: string | null;
  approvalName: string | null;
}

/** One audit record: kind, outcome and the payload decoded from its canonical bytes. */
export interface AuditRow {
  kind: string;
  actor: string;
  outcome: string | null;
  payload: Record<string, unknown>;
}

/** Execution rows of session `sessionUid`, oldest first. */
export async function executionsOfSession(pool: pg.Pool, sessionUid: string): Promise<ExecutionRow[]> {
  const result = await pool.query<ExecutionRow>(
    `SELECT id, idempotency_key AS "idempotencyKey", state, error_kind AS "errorKind", message,
            approval_name AS "approvalName"
       FROM executions WHERE session_uid = $1 ORDER BY created_at_us, id`,
    [sessionUid],
  );
  return result.rows;
}

/** Audit rows of execution `executionId`, in chain order. */
export async function auditOfExecution(pool: pg.Pool, executionId: string): Promise<AuditRow[]> {
  const result = await pool.query<{ kind: string; actor: string; outcome: string | null; canonical: Buffer }>(
    "SELECT kind, actor, outcome, canonical FROM audit_log WHERE execution_id = $1 ORDER BY seq",
    [executionId],
  );
  return result.rows.map((row) => ({
    kind: row.kind,
    actor: row.actor,
    outcome: row.outcome,
    payload: (JSON.parse(row.canonical.toString("utf8")) as { payload: Record<string, unknown> }).payload,
  }));
}
