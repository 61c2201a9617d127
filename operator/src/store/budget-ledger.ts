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
        // One round trip: a simple query may hold two statements but no parameters, so the uid goes in
        // as an escaped literal.
        await client.query(
          `BEGIN; SELECT pg_advisory_xact_lock(${BUDGET_LOCK_CLASS}, hashtext(${client.escapeLiteral(request.sessionUid)}))`,
        );
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
      await pool.query({
        name: "budget.consume",
        text: `UPDATE budget_reservations SET state = 'consumed', settled_at_us = $2
          WHERE execution_id = $1 AND state = 'reserved'`,
        values: [executionId, atMicros],
      });
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

/**
 * Whether execution $2 holds resource $3 already (a repeat counts once) and how much of it session $1
 * uses; reserves it at $4 when it does not and the use is under limit $5.
 */
const COUNT_AND_RESERVE = `
  WITH counted AS (
    SELECT EXISTS (SELECT 1 FROM budget_reservations
                    WHERE execution_id = $2 AND resource = $3 AND state <> 'released') AS counting,
           (SELECT COALESCE(SUM(amount), 0)::bigint FROM budget_reservations
             WHERE session_uid = $1 AND resource = $3 AND state <> 'released') AS used
  ), reserved AS (
    INSERT INTO budget_reservations (session_uid, execution_id, resource, state, reserved_at_us)
    SELECT $1, $2, $3, 'reserved', $4 FROM counted WHERE NOT counting AND used < $5::float8
    ON CONFLICT (execution_id, resource) DO UPDATE
      SET state = 'reserved', reserved_at_us = EXCLUDED.reserved_at_us, settled_at_us = NULL
      WHERE budget_reservations.state = 'released'
  )
  SELECT counting, used FROM counted`;

/** Checks and reserves each resource `request` needs; the caller holds the session's lock. */
async function reserveLocked(client: pg.PoolClient, request: BudgetRequest): Promise<BudgetReservation> {
  const wanted: Array<[BudgetResource, number]> = [["tool_call", request.limits.maxToolCalls]];
  if (request.write) wanted.push(["write", request.limits.maxWrites]);
  for (const [resource, limit] of wanted) {
    // Counted and inserted by one statement, begun after the lock was taken, so it counts every
    // reserve committed before this one.
    const found = await client.query<{ counting: boolean; used: number }>({
      name: "budget.countAndReserve",
      text: COUNT_AND_RESERVE,
      values: [request.sessionUid, request.executionId, resource, request.atMicros, limit],
    });
    const row = found.rows[0];
    if (!row?.counting && Number(row?.used ?? 0) >= limit) return { kind: "exceeded", resource, limit };
  }
  return { kind: "reserved" };
}
