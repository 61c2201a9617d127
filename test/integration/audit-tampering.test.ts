/**
 * What verify() detects and what the database refuses (DESIGN §6), in a real Postgres. Tampering is
 * done as the tables' owner with the triggers disabled — what someone holding the owner's
 * credentials could do; the runtime role cannot do any of it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

let db: FreshDatabase;
let log: PostgresAuditLog;
beforeEach(async () => {
  db = await freshDatabase();
  log = createPostgresAuditLog(db.operator, { clock: { nowMicros: () => 1_800_000_000_000_000 } });
  for (let i = 1; i <= 5; i++) await log.append(auditEntry(i));
});
afterEach(async () => {
  await db?.drop();
});

/** Runs `sql` as the owner with the audit triggers disabled, in one transaction. */
async function tamper(sql: string): Promise<void> {
  const client = await db.owner.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE audit_log DISABLE TRIGGER USER");
    await client.query(sql);
    await client.query("ALTER TABLE audit_log ENABLE TRIGGER USER");
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

describe("verify() detects tampering", () => {
  it("names the row whose outcome column the owner changed, its hashed bytes intact", async () => {
    await tamper("UPDATE audit_log SET outcome = 'failure' WHERE seq = 3");

    const report = await log.verify();
    expect(report.ok).toBe(false);
    expect(report.badRows).toBe(1);
    expect(report.firstBadRow).toMatchObject({ seq: 3, reason: "column_mismatch" });
    expect(report.firstBadRow?.message).toBe(
      'column outcome is "failure" but the hashed record says "success"',
    );
  });

  it("names the gap a deleted middle row leaves", async () => {
    await tamper("DELETE FROM audit_log WHERE seq = 3");

    const report = await log.verify();
    expect(report.ok).toBe(false);
    expect(report.gaps).toEqual([{ from: 3, to: 3 }]);
    expect(report.firstBadRow).toMatchObject({ seq: 4, reason: "broken_link" });
  });

  it("reports a truncated tail as a mismatch with the last checkpoint", async () => {
    expect(await log.checkpoint()).toMatchObject({ seq: 5 });
    await tamper("DELETE FROM audit_log WHERE seq >= 4");

    const report = await log.verify();
    expect(report.ok).toBe(false);
    expect(report.firstBadRow).toBeUndefined();
    expect(report.gaps).toEqual([]);
    expect(report.head.seq).toBe(3);
    expect(report.checkpoints).toEqual([
      expect.objectContaining({
        status: "missing",
        message: "checkpoint at seq 5 but the chain ends at seq 3: records were removed",
      }),
    ]);
  });
});

describe("the runtime role", () => {
  it.each([
    "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2",
    "DELETE FROM audit_log WHERE seq = 2",
    "TRUNCATE audit_log",
  ])("is refused %s", async (sql) => {
    await expect(db.operator.query(sql)).rejects.toMatchObject({
      code: "42501",
      message: expect.stringMatching(/permission denied for table audit_log/),
    });
    expect(await log.verify()).toMatchObject({ ok: true, records: 5 });
  });
});

describe("the append-only triggers", () => {
  it.each([
    "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2",
    "DELETE FROM audit_log WHERE seq = 2",
    "TRUNCATE audit_log",
  ])("refuse %s to the owner while enabled", async (sql) => {
    await expect(db.owner.query(sql)).rejects.toThrow(/gatehouse audit tables are append-only/);
    expect(await log.verify()).toMatchObject({ ok: true, records: 5 });
  });
});
