/**
 * The sessions' budget ledger on the real Postgres (`budget_reservations`, store/budget-ledger.ts):
 * concurrent reserves from two replicas never pass a limit, a repeated execution identity counts
 * once, released reservations stop counting, the table's trigger refuses illegal transitions, and
 * the runtime role may read, insert and update it but not delete.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BudgetLedger, BudgetRequest } from "../../operator/src/core/ports.ts";
import { createPostgresBudgetLedger } from "../../operator/src/store/budget-ledger.ts";
import { OPERATOR_ROLE } from "../../operator/src/store/roles.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

let db: FreshDatabase;
let ledger: BudgetLedger;
let replica: BudgetLedger;

beforeAll(async () => {
  db = await freshDatabase();
  ledger = createPostgresBudgetLedger(db.operator);
  // A second pool is a second operator replica: its own connections, the same table.
  replica = createPostgresBudgetLedger(db.anotherOperatorPool(8));
});
afterAll(async () => {
  await db?.drop();
});

function request(
  sessionUid: string,
  executionId: string,
  overrides: Partial<BudgetRequest> = {},
): BudgetRequest {
  return {
    sessionUid,
    executionId,
    write: false,
    limits: { maxToolCalls: 2, maxWrites: 1 },
    atMicros: 1_700_000_000_000_000,
    ...overrides,
  };
}

async function rowsOf(sessionUid: string) {
  const result = await db.admin.query<{ execution_id: string; resource: string; state: string }>(
    "SELECT execution_id, resource, state FROM budget_reservations WHERE session_uid = $1 ORDER BY execution_id, resource",
    [sessionUid],
  );
  return result.rows;
}

describe("the budget ledger in Postgres", () => {
  it("lets exactly 2 of 20 concurrent reserves at maxToolCalls 2 succeed, across two replicas", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        (n % 2 ? replica : ledger).reserve(request("s-concurrent", `e-${n}`)),
      ),
    );
    expect(results.filter((r) => r.kind === "reserved")).toHaveLength(2);
    expect(results.filter((r) => r.kind === "exceeded")).toEqual(
      Array(18).fill({ kind: "exceeded", resource: "tool_call", limit: 2 }),
    );
    expect(await rowsOf("s-concurrent")).toHaveLength(2);
  });

  it("lets exactly maxWrites of concurrent write reserves succeed, and no write without its tool call", async () => {
    const limits = { maxToolCalls: 50, maxWrites: 3 };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        (n % 2 ? replica : ledger).reserve(request("s-writes", `w-${n}`, { write: true, limits })),
      ),
    );
    expect(results.filter((r) => r.kind === "reserved")).toHaveLength(3);
    const rows = await rowsOf("s-writes");
    expect(rows.filter((r) => r.resource === "write")).toHaveLength(3);
    expect(rows.filter((r) => r.resource === "tool_call")).toHaveLength(3);
  });

  it("counts a repeated execution identity once, even when the repeats race", async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, n) => (n % 2 ? replica : ledger).reserve(request("s-repeat", "same"))),
    );
    expect(results).toEqual(Array(10).fill({ kind: "reserved" }));
    expect(await rowsOf("s-repeat")).toEqual([
      { execution_id: "same", resource: "tool_call", state: "reserved" },
    ]);
    expect(await ledger.reserve(request("s-repeat", "other"))).toEqual({ kind: "reserved" });
  });

  it("stops counting a released reservation, reserves it anew within the limit, and never releases a consumed one", async () => {
    const limits = { maxToolCalls: 1, maxWrites: 1 };
    expect(await ledger.reserve(request("s-release", "r-1", { limits }))).toEqual({ kind: "reserved" });
    expect(await ledger.reserve(request("s-release", "r-2", { limits }))).toMatchObject({ kind: "exceeded" });
    await ledger.release("r-1", 2);
    expect(await ledger.reserve(request("s-release", "r-2", { limits }))).toEqual({ kind: "reserved" });
    await ledger.consume("r-2", 3);
    await ledger.release("r-2", 4);
    expect(await ledger.reserve(request("s-release", "r-1", { limits }))).toMatchObject({ kind: "exceeded" });
    expect(await rowsOf("s-release")).toEqual([
      { execution_id: "r-1", resource: "tool_call", state: "released" },
      { execution_id: "r-2", resource: "tool_call", state: "consumed" },
    ]);
  });

  it("releases only the named resource when asked", async () => {
    await ledger.reserve(request("s-partial", "p-1", { write: true }));
    await ledger.release("p-1", 2, "write");
    await ledger.consume("p-1", 3);
    expect(await rowsOf("s-partial")).toEqual([
      { execution_id: "p-1", resource: "tool_call", state: "consumed" },
      { execution_id: "p-1", resource: "write", state: "released" },
    ]);
  });

  it("refuses a consumed reservation going back, and a change of what a row reserves", async () => {
    await ledger.reserve(request("s-guard", "g-1"));
    await ledger.consume("g-1", 2);
    await expect(
      db.operator.query(
        "UPDATE budget_reservations SET state = 'reserved', settled_at_us = NULL WHERE execution_id = 'g-1'",
      ),
    ).rejects.toThrow(/illegal state transition consumed -> reserved/);
    await expect(
      db.operator.query(
        "UPDATE budget_reservations SET session_uid = 'elsewhere' WHERE execution_id = 'g-1'",
      ),
    ).rejects.toThrow(/immutable/);
  });

  it("grants the runtime role SELECT, INSERT and UPDATE on the reservations, and nothing more", async () => {
    const privileges = await db.admin.query(
      `SELECT p AS privilege FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
        WHERE has_table_privilege($1, 'budget_reservations', p) ORDER BY 1`,
      [OPERATOR_ROLE],
    );
    expect(privileges.rows.map((r) => r.privilege)).toEqual(["INSERT", "SELECT", "UPDATE"]);
  });
});
