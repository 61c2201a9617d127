import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../operator/src/core/ports.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit-log.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

function entry(n: number, payload: AuditEntry["payload"] = { n }): AuditEntry {
  return {
    kind: "test.event",
    actor: "alice",
    sessionUid: "11111111-2222-3333-4444-555555555555",
    executionId: `exec-${n}`,
    atMicros: 1_700_000_000_000_000 + n,
    payload,
  };
}

/** Runs `sql` as the owner with the audit triggers disabled — what an attacker with owner rights could do. */
async function tamper(db: FreshDatabase, sql: string): Promise<void> {
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

describe("audit log in Postgres", () => {
  let db: FreshDatabase;

  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function freshLog() {
    // Each test starts from an empty chain: the tables are append-only, so clear them as the owner.
    await db.owner.query("ALTER TABLE audit_log DISABLE TRIGGER USER");
    await db.owner.query("ALTER TABLE audit_checkpoints DISABLE TRIGGER USER");
    await db.owner.query("DELETE FROM audit_log; DELETE FROM audit_checkpoints");
    await db.owner.query("ALTER TABLE audit_log ENABLE TRIGGER USER");
    await db.owner.query("ALTER TABLE audit_checkpoints ENABLE TRIGGER USER");
    return createPostgresAuditLog(db.operator, { clock: { nowMicros: () => 1_800_000_000_000_000 } });
  }

  it("appends a chain as the operator role and verifies it", async () => {
    const log = await freshLog();
    const seqs = await Promise.all(Array.from({ length: 25 }, (_, i) => log.append(entry(i))));
    expect(seqs.map((s) => s.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));

    const report = await log.verify({ batchSize: 7 });
    expect(report).toMatchObject({ ok: true, records: 25, badRows: 0, gaps: [] });
    expect(report.head.seq).toBe(25);
    const first = (await log.read({ limit: 1 }))[0]!;
    expect(first.prevHash).toBe("00".repeat(32));
  });

  it("keeps one chain when two replicas append at the same time", async () => {
    await freshLog();
    const replicaA = createPostgresAuditLog(db.operator);
    const replicaB = createPostgresAuditLog(db.owner);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? replicaA : replicaB).append(entry(i))),
    );
    const report = await replicaA.verify();
    expect(report).toMatchObject({ ok: true, records: 20 });
  });

  it("names the row a change made as the owner with triggers disabled", async () => {
    const log = await freshLog();
    for (let i = 0; i < 5; i++) await log.append(entry(i));
    await tamper(db, "UPDATE audit_log SET actor = 'mallory' WHERE seq = 3");

    const report = await log.verify();
    expect(report.ok).toBe(false);
    expect(report.firstBadRow).toMatchObject({ seq: 3, reason: "column_mismatch" });
    expect(report.firstBadRow?.message).toContain("actor");
    expect(report.badRows).toBe(1);
  });

  it("names the row whose hashed bytes were rewritten", async () => {
    const log = await freshLog();
    for (let i = 0; i < 5; i++) await log.append(entry(i));
    await tamper(
      db,
      `UPDATE audit_log SET canonical = convert_to(replace(convert_from(canonical, 'UTF8'), '"n":1', '"n":9'), 'UTF8')
        WHERE seq = 2`,
    );
    const report = await log.verify();
    expect(report.firstBadRow).toMatchObject({ seq: 2, reason: "hash_mismatch" });
  });

  it("reports a deleted row as a sequence gap and a broken link", async () => {
    const log = await freshLog();
    for (let i = 0; i < 5; i++) await log.append(entry(i));
    await tamper(db, "DELETE FROM audit_log WHERE seq = 4");
    const report = await log.verify();
    expect(report.gaps).toEqual([{ from: 4, to: 4 }]);
    expect(report.firstBadRow).toMatchObject({ seq: 5, reason: "broken_link" });
  });

  it("detects removed tail rows against the last checkpoint", async () => {
    const log = await freshLog();
    for (let i = 0; i < 5; i++) await log.append(entry(i));
    const checkpoint = await log.checkpoint();
    expect(checkpoint.seq).toBe(5);
    expect((await log.verify()).ok).toBe(true);

    await tamper(db, "DELETE FROM audit_log WHERE seq >= 4");
    const report = await log.verify();
    expect(report.ok).toBe(false);
    expect(report.firstBadRow).toBeUndefined();
    expect(report.checkpoints[0]).toMatchObject({ status: "missing" });
    expect(report.checkpoints[0]?.message).toContain("chain ends at seq 3");
  });

  it("detects a rewritten chain against a checkpoint kept outside Postgres", async () => {
    const log = await freshLog();
    for (let i = 0; i < 3; i++) await log.append(entry(i));
    const outside = await log.checkpoint();
    // Rewrite everything consistently: a fresh, self-consistent chain with different content.
    await freshLog();
    for (let i = 10; i < 13; i++) await log.append(entry(i));
    const report = await log.verify({ checkpoints: [outside] });
    expect(report.badRows).toBe(0);
    expect(report.checkpoints).toEqual([expect.objectContaining({ status: "hash_mismatch" })]);
    expect(report.ok).toBe(false);
  });

  it("round-trips and verifies a payload with unordered keys", async () => {
    const log = await freshLog();
    const payload = {
      zeta: 1,
      alpha: { c: [3, { y: 1, x: 2 }], b: "é€😀" },
      "\u20ac": true,
      A: null,
      "10": 1.5e-7,
    };
    await log.append(entry(1, payload));

    const [record] = await log.read();
    expect(record!.canonical).toBe(
      '{"actor":"alice","atMicros":1700000000000001,"executionId":"exec-1","kind":"test.event",' +
        '"payload":{"10":1.5e-7,"A":null,"alpha":{"b":"é€😀","c":[3,{"x":2,"y":1}]},"zeta":1,"€":true},' +
        `"prevHash":"${"00".repeat(32)}","seq":1,"sessionUid":"11111111-2222-3333-4444-555555555555","v":1}`,
    );
    expect(JSON.parse(record!.canonical).payload).toEqual(payload);
    expect((await log.verify()).ok).toBe(true);
  });

  it("refuses UPDATE, DELETE and TRUNCATE to the operator role", async () => {
    const log = await freshLog();
    await log.append(entry(1));
    await expect(db.operator.query("UPDATE audit_log SET actor = 'x'")).rejects.toThrow(/permission denied/);
    await expect(db.operator.query("DELETE FROM audit_log")).rejects.toThrow(/permission denied/);
    await expect(db.operator.query("TRUNCATE audit_log")).rejects.toThrow(/permission denied/);
    await expect(db.operator.query("DELETE FROM audit_checkpoints")).rejects.toThrow(/permission denied/);
  });

  it("blocks UPDATE, DELETE and TRUNCATE by trigger even for the owner", async () => {
    const log = await freshLog();
    await log.append(entry(1));
    await expect(db.owner.query("UPDATE audit_log SET actor = 'x'")).rejects.toThrow(/append-only/);
    await expect(db.owner.query("DELETE FROM audit_log")).rejects.toThrow(/append-only/);
    await expect(db.owner.query("TRUNCATE audit_log")).rejects.toThrow(/append-only/);
    expect((await log.verify()).ok).toBe(true);
  });
});
