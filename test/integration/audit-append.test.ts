/**
 * Appending to the audit chain in a real Postgres (DESIGN §6): concurrent replicas, exact round trips,
 * RFC 8785 bytes as stored, and recovery from a transaction that dies half-way.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeAuditRecord } from "../../operator/src/core/audit.ts";
import type { JsonObject } from "../../operator/src/core/canonical.ts";
import { AUDIT_CHAIN_LOCK } from "../../operator/src/store/audit/append.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

let db: FreshDatabase;
beforeEach(async () => {
  db = await freshDatabase();
});
afterEach(async () => {
  await db?.drop();
});

/** The stored canonical bytes of record `seq`, as text. */
async function storedText(seq: number): Promise<string> {
  const result = await db.admin.query(
    "SELECT convert_from(canonical, 'UTF8') AS text FROM audit_log WHERE seq = $1",
    [seq],
  );
  return result.rows[0].text;
}

describe("appending to the audit chain", () => {
  it("keeps one linear chain when 50 appends race from two pools", async () => {
    const replicaA = createPostgresAuditLog(db.operator);
    const replicaB = createPostgresAuditLog(db.anotherOperatorPool());
    const seqs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? replicaA : replicaB).append(auditEntry(i))),
    );

    expect(seqs.map((s) => s.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const rows = (await db.admin.query("SELECT seq, prev_hash, hash FROM audit_log ORDER BY seq")).rows;
    rows.forEach((row, i) => {
      expect(row.prev_hash).toEqual(i === 0 ? Buffer.alloc(32) : rows[i - 1].hash);
    });
    expect(await replicaA.verify()).toMatchObject({ ok: true, records: 50, badRows: 0, gaps: [] });
  });

  it("carries concurrent appends in shared transactions", async () => {
    const log = createPostgresAuditLog(db.operator);
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(auditEntry(i))));
    // Rows inserted by one transaction share its xmin.
    const transactions = await db.admin.query("SELECT count(DISTINCT xmin::text)::int AS n FROM audit_log");
    expect(transactions.rows[0].n).toBeLessThan(50);
    expect((await log.verify()).ok).toBe(true);
  });

  it("round-trips a payload with unordered keys and a timestamp with microseconds", async () => {
    const log = createPostgresAuditLog(db.operator);
    const entry = auditEntry(1, {
      atMicros: 1_700_000_000_123_456,
      payload: JSON.parse('{"b":1,"a":{"d":2,"c":3}}') as JsonObject,
    });
    await log.append(entry);

    const [record] = await log.read();
    expect(record?.atMicros).toBe(1_700_000_000_123_456);
    expect(record?.canonical).toContain('"atMicros":1700000000123456');
    expect(record?.canonical).toContain('"payload":{"a":{"c":3,"d":2},"b":1}');
    expect(decodeAuditRecord(new TextEncoder().encode(record?.canonical)).entry).toEqual(entry);
    const instant = await db.admin.query(
      `SELECT to_char((timestamptz 'epoch' + at_us * interval '1 microsecond') AT TIME ZONE 'UTC',
                      'YYYY-MM-DD HH24:MI:SS.US') AS utc FROM audit_log`,
    );
    expect(instant.rows[0].utc).toBe("2023-11-14 22:13:20.123456");
    expect(await log.verify()).toMatchObject({ ok: true, records: 1 });
  });

  describe("stores the RFC 8785 bytes it hashed", () => {
    it("sorts the RFC's §3.2.3 example by UTF-16 code units", async () => {
      const log = createPostgresAuditLog(db.operator);
      const payload = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\ud83d\ude00": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
      };
      await log.append(auditEntry(1, { payload }));
      expect(await storedText(1)).toContain(
        '"payload":{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
          '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
          '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
      );
      expect((await log.verify()).ok).toBe(true);
    });

    it("puts keys outside the BMP before U+E000…U+FFFF, as UTF-16 order (not code point order) requires", async () => {
      const log = createPostgresAuditLog(db.operator);
      // Code point order would be E000, FFFF, 10000, 1F600, 10FFFF; UTF-16 order compares the
      // surrogates D800…DBFF, which sort below E000.
      const payload = { "\uffff": 5, "\u{10ffff}": 3, "\ue000": 4, "\u{1f600}": 2, "\u{10000}": 1 };
      await log.append(auditEntry(1, { payload }));
      expect(await storedText(1)).toContain(
        '"payload":{"\u{10000}":1,"\u{1f600}":2,"\u{10ffff}":3,"\ue000":4,"\uffff":5}',
      );
      expect((await log.verify()).ok).toBe(true);
    });

    it("serializes the RFC's §3.2.2 example exactly as the RFC prints it", async () => {
      const log = createPostgresAuditLog(db.operator);
      const rfcInput = String.raw`{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
      }`;
      await log.append(auditEntry(1, { payload: JSON.parse(rfcInput) as JsonObject }));
      const rfcOutput = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
      expect(await storedText(1)).toContain(`"payload":${rfcOutput}`);
      expect((await log.verify()).ok).toBe(true);
    });

    it("writes the RFC's Appendix B numbers in ECMAScript form", async () => {
      const log = createPostgresAuditLog(db.operator);
      // RFC 8785 Appendix B: IEEE 754 bit patterns and their serialization.
      const samples: Array<[string, string]> = [
        ["0000000000000000", "0"],
        ["8000000000000000", "0"],
        ["0000000000000001", "5e-324"],
        ["8000000000000001", "-5e-324"],
        ["7fefffffffffffff", "1.7976931348623157e+308"],
        ["ffefffffffffffff", "-1.7976931348623157e+308"],
        ["4340000000000000", "9007199254740992"],
        ["c340000000000000", "-9007199254740992"],
        ["4430000000000000", "295147905179352830000"],
        ["44b52d02c7e14af5", "9.999999999999997e+22"],
        ["44b52d02c7e14af6", "1e+23"],
        ["44b52d02c7e14af7", "1.0000000000000001e+23"],
        ["444b1ae4d6e2ef4e", "999999999999999700000"],
        ["444b1ae4d6e2ef4f", "999999999999999900000"],
        ["444b1ae4d6e2ef50", "1e+21"],
        ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
        ["3eb0c6f7a0b5ed8d", "0.000001"],
        ["41b3de4355555553", "333333333.3333332"],
        ["41b3de4355555554", "333333333.33333325"],
        ["41b3de4355555555", "333333333.3333333"],
        ["41b3de4355555556", "333333333.3333334"],
        ["41b3de4355555557", "333333333.33333343"],
        ["becbf647612f3696", "-0.0000033333333333333333"],
        ["43143ff3c1cb0959", "1424953923781206.2"],
      ];
      const fromBits = (hex: string) => {
        const view = new DataView(new ArrayBuffer(8));
        view.setBigUint64(0, BigInt(`0x${hex}`));
        return view.getFloat64(0);
      };
      await log.append(auditEntry(1, { payload: { numbers: samples.map(([bits]) => fromBits(bits)) } }));
      expect(await storedText(1)).toContain(
        `"payload":{"numbers":[${samples.map(([, text]) => text).join(",")}]}`,
      );
      expect((await log.verify()).ok).toBe(true);
    });

    it("refuses the Appendix B values outside I-JSON (NaN, Infinity) before they are queued", async () => {
      const log = createPostgresAuditLog(db.operator);
      await expect(log.append(auditEntry(1, { payload: { x: Number.NaN } }))).rejects.toThrow(
        /canonicalized/,
      );
      await expect(log.append(auditEntry(2, { payload: { x: Number.POSITIVE_INFINITY } }))).rejects.toThrow(
        /canonicalized/,
      );
      expect(await log.head()).toMatchObject({ seq: 0 });
    });
  });

  // Cancelled: the statement fails, the connection survives inside an aborted transaction (caught
  // only by a ROLLBACK). Terminated: the connection dies (caught only by discarding the client).
  it.each([
    ["its statement is cancelled", "pg_cancel_backend", /cancel/],
    ["its connection is killed", "pg_terminate_backend", /terminat/],
  ])("leaves the pool healthy when %s mid-append, and the next append links", async (_, kill, error) => {
    // One connection, so a client handed back in a bad state would fail the next append.
    const pool = db.anotherOperatorPool(1);
    const log = createPostgresAuditLog(pool);
    for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));

    // Hold the chain lock elsewhere, so the next append stops inside its transaction; fail it there.
    const blocker = await db.admin.connect();
    try {
      await blocker.query("SELECT pg_advisory_lock($1, $2)", [...AUDIT_CHAIN_LOCK]);
      // Caught at once: the rejection may come before the test gets to look at it.
      const failure = log.append(auditEntry(4)).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      const pid = await waitForChainLockWaiter();
      await db.admin.query(`SELECT ${kill}($1)`, [pid]);
      expect(await failure).toMatchObject({ message: expect.stringMatching(error) });
      await blocker.query("SELECT pg_advisory_unlock($1, $2)", [...AUDIT_CHAIN_LOCK]);
    } finally {
      blocker.release();
    }

    expect(await log.append(auditEntry(5))).toMatchObject({
      seq: 4,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await log.verify()).toMatchObject({ ok: true, records: 4, gaps: [] });
  });
});

/** The pid of the backend waiting for the chain lock (polls pg_locks until one waits). */
async function waitForChainLockWaiter(): Promise<number> {
  for (;;) {
    const result = await db.admin.query(
      `SELECT pid FROM pg_locks
        WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = $1 AND objid::bigint = $2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [...AUDIT_CHAIN_LOCK],
    );
    if (result.rows[0]) return result.rows[0].pid as number;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
