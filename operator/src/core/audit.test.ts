import { describe, expect, it } from "vitest";
import {
  ChainVerifier,
  chainHash,
  EMPTY_CHAIN_HEAD,
  GENESIS_PREV_HASH,
  type SealedAuditRecord,
  sealAuditRecord,
  toHex,
} from "./audit.ts";
import type { AuditEntry } from "./ports.ts";

const entry = (n: number): AuditEntry => ({
  kind: "test",
  actor: "alice",
  atMicros: 1_000 + n,
  payload: { n, z: 1, a: 2 },
});

function chain(length: number): SealedAuditRecord[] {
  const records: SealedAuditRecord[] = [];
  let head = EMPTY_CHAIN_HEAD;
  for (let i = 0; i < length; i++) {
    const record = sealAuditRecord(head, entry(i));
    records.push(record);
    head = { seq: record.seq, hash: record.hash };
  }
  return records;
}

function verify(
  records: SealedAuditRecord[],
  checkpoints = [] as ConstructorParameters<typeof ChainVerifier>[0],
) {
  const verifier = new ChainVerifier(checkpoints);
  for (const r of records) verifier.push(r);
  return verifier.finish();
}

describe("audit chain", () => {
  it("starts from 32 zero bytes and links each record to the previous hash", () => {
    const [first, second] = chain(2);
    expect(first!.seq).toBe(1);
    expect(first!.prevHash).toEqual(GENESIS_PREV_HASH);
    expect(first!.hash).toEqual(chainHash(GENESIS_PREV_HASH, first!.canonical));
    expect(second!.prevHash).toEqual(first!.hash);
  });

  it("hashes the RFC 8785 bytes of the record, timestamps as integer microseconds", () => {
    const [record] = chain(1);
    expect(new TextDecoder().decode(record!.canonical)).toBe(
      `{"actor":"alice","atMicros":1000,"executionId":null,"kind":"test","outcome":null,"payload":{"a":2,"n":0,"z":1},"prevHash":"${"00".repeat(32)}","seq":1,"sessionUid":null,"v":1}`,
    );
  });

  it("verifies an intact chain", () => {
    expect(verify(chain(5))).toMatchObject({ ok: true, records: 5, badRows: 0, gaps: [], head: { seq: 5 } });
  });

  it("names a record whose column differs from its hashed bytes", () => {
    const records = chain(4);
    records[2] = { ...records[2]!, actor: "mallory" };
    expect(verify(records)).toMatchObject({
      ok: false,
      badRows: 1,
      firstBadRow: { seq: 3, reason: "column_mismatch" },
    });
  });

  it("names a record whose bytes changed, and only that one", () => {
    const records = chain(4);
    const bytes = new TextEncoder().encode(
      new TextDecoder().decode(records[1]!.canonical).replace('"n":1', '"n":7'),
    );
    records[1] = { ...records[1]!, canonical: bytes };
    expect(verify(records)).toMatchObject({ badRows: 1, firstBadRow: { seq: 2, reason: "hash_mismatch" } });
  });

  it("reports a gap and the broken link after it", () => {
    const records = chain(4);
    records.splice(1, 1);
    expect(verify(records)).toMatchObject({
      gaps: [{ from: 2, to: 2 }],
      firstBadRow: { seq: 3, reason: "broken_link" },
    });
  });

  it("compares the head with checkpoints", () => {
    const records = chain(3);
    const good = { seq: 3, headHash: toHex(records[2]!.hash), atMicros: 1 };
    expect(verify(records, [good]).checkpoints[0]?.status).toBe("ok");
    expect(verify(records, [{ ...good, headHash: "ff".repeat(32) }]).checkpoints[0]?.status).toBe(
      "hash_mismatch",
    );
    expect(verify(records.slice(0, 2), [good])).toMatchObject({
      ok: false,
      checkpoints: [{ status: "missing" }],
    });
    expect(verify([], [{ seq: 0, headHash: "00".repeat(32), atMicros: 1 }]).ok).toBe(true);
  });
});
