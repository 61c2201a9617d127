/**
 * The sessions' budgets in Postgres (`budget_reservations`, migration 0008): the `BudgetLedger` port.
 * A reserve takes the session's advisory lock for its transaction, then counts and inserts, so of any
 * number of concurrent reserves for one session — on any replica — never more succeed than the limits
 * leave room for. Rows are keyed by execution identity and resource, so a repeated call finds its own
 * reservation and counts once.
 */
import type pg from "pg";
import type { BudgetLedger, BudgetRequest, BudgetReservation, BudgetResource } from "../core/ports.ts";

/** Advisory lock classid for budget reserves (objid = hashtext(session uid)); see `audit/append.ts`. */
const BUDGET_LOCK_CLASS = 0x47414252;

/** A Postgres-backed budget ledger on `pool` (connect as `gatehouse_operator` in production). */
export function createPostgresBudgetLedger(pool: pg.Pool): BudgetLedger {
  return {
    async reserve(request) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
          BUDGET_LOCK_CLASS,
          request.sessionUid,
        ]);
        const result = await reserveLocked(client, request);
        await client.query(result.kind === "reserved" ? "COMMIT" : "ROLLBACK");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },

    async consume(executionId, atMicros) {
      await pool.query(
        `UPDATE budget_reservations SET state = 'consumed', settled_at_us = $2
          WHERE execution_id = $1 AND state = 'reserved'`,
        [executionId, atMicros],
      );
    },

    async release(executionId, atMicros, resource) {
      await pool.query(
        `UPDATE budget_reservations SET state = 'released', settled_at_us = $2
          WHERE execution_id = $1 AND state = 'reserved' AND ($3::text IS NULL OR resource = $3)`,
        [executionId, atMicros, resource ?? null],
      );
    },
  };
}

/** Checks and reserves each resource `request` needs; the caller holds the session's lock. */
async function reserveLocked(client: pg.PoolClient, request: BudgetRequest): Promise<BudgetReservation> {
  const wanted: Array<[BudgetResource, number]> = [["tool_call", request.limits.maxToolCalls]];
  if (request.write) wanted.push(["write", request.limits.maxWrites]);
  for (const [resource, limit] of wanted) {
    const found = await client.query<{ counting: boolean; used: number }>(
      `SELECT EXISTS (SELECT 1 FROM budget_reservations
                       WHERE execution_id = $2 AND resource = $3 AND state <> 'released') AS counting,
              (SELECT COALESCE(SUM(amount), 0)::bigint FROM budget_reservations
                WHERE session_uid = $1 AND resource = $3 AND state <> 'released') AS used`,
      [request.sessionUid, request.executionId, resource],
    );
    const row = found.rows[0];
    if (row?.counting) continue; // this call reserved it before: a repeat counts once
    if (Number(row?.used ?? 0) >= limit) return { kind: "exceeded", resource, limit };
    await client.query(
      `INSERT INTO budget_reservations (session_uid, execution_id, resource, state, reserved_at_us)
       VALUES ($1, $2, $3, 'reserved', $4)
       ON CONFLICT (execution_id, resource) DO UPDATE
         SET state = 'reserved', reserved_at_us = EXCLUDED.reserved_at_us, settled_at_us = NULL
         WHERE budget_reservations.state = 'released'`,
      [request.sessionUid, request.executionId, resource, request.atMicros],
    );
  }
  return { kind: "reserved" };
}
