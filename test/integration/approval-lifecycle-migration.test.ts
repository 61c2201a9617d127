/**
 * The upgrade to audited Approval lifecycles (migration 0005): a chain holding requests of an earlier
 * version gets one marker record after them, chained like any other, so "every request has an end"
 * is checked from there on; a fresh chain gets none (nothing before it is exempt).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditKind } from "../../operator/src/core/audit.ts";
import { readOpenRequests } from "../../operator/src/store/approval-records.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { migrate } from "../../operator/src/store/migrate.ts";
import { type FreshDatabase, freshDatabase, migrationsFrom } from "./fresh-database.ts";

/** Reverting these undoes 0005 (and whatever came after it). */
const SINCE_0005 = migrationsFrom("0005_approval_lifecycle");

let db: FreshDatabase;

beforeEach(async () => {
  db = await freshDatabase();
});

afterEach(async () => {
  await db.drop();
});

function requested(n: number) {
  return {
    kind: AuditKind.approvalRequested,
    actor: "alice",
    outcome: "pending" as const,
    sessionUid: "uid-1",
    executionId: `${String(n).repeat(40)}`.slice(0, 40),
    atMicros: 1_700_000_000_000_000 + n,
    payload: { approval: `apr-${n}`, session: "plant-a/s1" },
  };
}

function withUid<T extends { payload: Record<string, unknown> }>(entry: T, approvalUid: string): T {
  return { ...entry, payload: { ...entry.payload, approvalUid } };
}

describe("migrating a chain written by an earlier version", () => {
  it("appends one verifiable marker after the earlier requests", async () => {
    expect(await migrate(db.url, { direction: "down", count: SINCE_0005.length })).toEqual(SINCE_0005);
    const log = createPostgresAuditLog(db.operator);
    await log.appendBatch([requested(1), requested(2)]);
    await migrate(db.url);
    const records = await log.read();
    expect(records.map((r) => [r.seq, r.kind])).toEqual([
      [1, AuditKind.approvalRequested],
      [2, AuditKind.approvalRequested],
      [3, AuditKind.lifecycleMarker],
    ]);
    expect(await log.verify()).toMatchObject({ ok: true, records: 3, badRows: 0 });
    // Migrating again (down and up) adds no second marker; later appends chain after it.
    await migrate(db.url, { direction: "down", count: SINCE_0005.length });
    await migrate(db.url);
    await log.append(requested(3));
    expect((await log.read()).map((r) => r.kind)).toEqual([
      AuditKind.approvalRequested,
      AuditKind.approvalRequested,
      AuditKind.lifecycleMarker,
      AuditKind.approvalRequested,
    ]);
    expect(await log.verify()).toMatchObject({ ok: true, records: 4 });
  });

  it("lists the requests after the marker that have no end, once each", async () => {
    await migrate(db.url, { direction: "down", count: SINCE_0005.length });
    const log = createPostgresAuditLog(db.operator);
    await log.append(requested(1));
    await migrate(db.url);
    const recordOf = (n: number, kind: string) => ({ ...requested(n), kind, actor: "gatehouse" });
    await log.appendBatch([
      requested(2),
      recordOf(2, AuditKind.approvalApproved),
      requested(3),
      requested(3),
      requested(4),
      recordOf(4, AuditKind.approvalDecided),
      // Approval apr-5 deleted with its end, then re-created under its name: the new object is open.
      withUid(requested(5), "uid-first"),
      withUid(recordOf(5, AuditKind.approvalCancelled), "uid-first"),
      withUid(requested(5), "uid-second"),
    ]);
    const found = await readOpenRequests(db.operator);
    expect(found.lifecycleMarkerSeq).toBe(2);
    expect(found.open.map((o) => [o.seq, o.namespace, o.name, o.approvalUid])).toEqual([
      [5, "plant-a", "apr-3", undefined],
      [7, "plant-a", "apr-4", undefined],
      [11, "plant-a", "apr-5", "uid-second"],
    ]);
  });

  it("appends no marker to a fresh chain", async () => {
    const log = createPostgresAuditLog(db.operator);
    expect(await log.head()).toMatchObject({ seq: 0 });
  });
});
