/**
 * Checkpoints of the audit chain and the witness that keeps them (DESIGN §6), on a real Postgres:
 * stored in Postgres when the head moved and published through the real witness (`core/witness.ts`,
 * signing with a real Ed25519 key) into a witness document kept in memory — the operator keeps the same
 * document in a ConfigMap; test/e2e/audit-checkpoints.test.ts covers that — and what `gatehouse-audit
 * verify --witness-file` then says about a chain the owner rewrote, a forged checkpoint and legacy ones.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ChainHead, decodeAuditRecord, sealAuditRecord } from "../../operator/src/core/audit.ts";
import {
  type WitnessDocument,
  type WitnessDocuments,
  witnessPublisher,
} from "../../operator/src/core/witness.ts";
import {
  newWitnessKey,
  privateKeyOf,
  publicPartOf,
  signCheckpoint,
  type WitnessKey,
} from "../../operator/src/core/witness-signature.ts";
import {
  CHECKPOINTS_KEY,
  encodeCheckpoints,
  encodeWitnessKeys,
  WITNESS_KEYS_KEY,
} from "../../operator/src/kube/witness/configmap-data.ts";
import { startCheckpointer } from "../../operator/src/store/audit/checkpointer.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { sealedFromRow } from "../../operator/src/store/audit/row.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const CLI = join(import.meta.dirname, "../../operator/src/cli/gatehouse-audit.ts");
const MINUTE_MICROS = 60_000_000;

/** The witness document in memory, versioned like the ConfigMap. */
function memoryDocuments(): WitnessDocuments & { document?: WitnessDocument } {
  let version = 0;
  const store: WitnessDocuments & { document?: WitnessDocument } = {
    where: "memory",
    async read() {
      return store.document
        ? { document: structuredClone(store.document), version: String(version) }
        : undefined;
    },
    async write(document, read) {
      if ((read ?? "0") !== String(version)) return "conflict";
      store.document = structuredClone(document);
      version++;
      return "written";
    },
  };
  return store;
}

const signerOf = (key: WitnessKey) => ({
  async keys() {
    return {
      signing: { kid: key.kid, privateKey: privateKeyOf(key.privateJwk!) },
      published: [publicPartOf(key)],
    };
  },
});

/** Runs `gatehouse-audit verify --witness-file` over `document`, as the ConfigMap `kubectl get -o json` prints. */
async function verifyWith(document: WitnessDocument, databaseUrl: string, extra: string[] = []) {
  const dir = await mkdtemp(join(tmpdir(), "gatehouse-witness-"));
  const file = join(dir, "configmap.json");
  try {
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "gatehouse-audit-checkpoints", namespace: "gatehouse-system" },
        data: {
          [CHECKPOINTS_KEY]: encodeCheckpoints(document.checkpoints),
          [WITNESS_KEYS_KEY]: encodeWitnessKeys(document.keys),
        },
      }),
    );
    return await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [CLI, "verify", "--witness-file", file, ...extra],
        { env: { ...process.env, DATABASE_URL: databaseUrl } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Records 1–3 witnessed (one signed checkpoint of seq 3 in an in-memory ConfigMap), then records 4–6
 * appended: the honest document and the head a forger would sign. Stop the checkpointer after.
 */
async function witnessedThenMoved() {
  const documents = memoryDocuments();
  const publisher = witnessPublisher({ documents, signer: signerOf(key) });
  const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
  for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));
  await checkpointer.checkpointNow();
  for (let i = 4; i <= 6; i++) await log.append(auditEntry(i));
  return { documents, checkpointer, head: await log.head(), honest: documents.document! };
}

let db: FreshDatabase;
let log: PostgresAuditLog;
let nowMicros: number;
const key = newWitnessKey(new Date("2026-12-01T00:00:00.000Z"));
beforeEach(async () => {
  db = await freshDatabase();
  nowMicros = Date.UTC(2026, 11, 1) * 1000;
  // Checkpoints a minute apart, as at the default period.
  log = createPostgresAuditLog(db.operator, { clock: { nowMicros: () => (nowMicros += MINUTE_MICROS) } });
});
afterEach(async () => {
  await db?.drop();
});

/**
 * The owner's rewrite of record `seq` (another outcome and payload) with every later record re-hashed
 * and re-linked, and `audit_checkpoints` rewritten to match: a chain Postgres alone finds intact.
 */
async function rewriteFrom(seq: number): Promise<void> {
  const client = await db.owner.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE audit_log DISABLE TRIGGER USER");
    await client.query("ALTER TABLE audit_checkpoints DISABLE TRIGGER USER");
    const { rows } = await client.query(
      "SELECT seq, prev_hash, hash, canonical, kind, actor, outcome, session_uid, execution_id, at_us FROM audit_log WHERE seq >= $1 ORDER BY seq",
      [seq],
    );
    let head: ChainHead | undefined;
    for (const row of rows) {
      const stored = sealedFromRow(row);
      head ??= { seq: stored.seq - 1, hash: stored.prevHash };
      const { entry } = decodeAuditRecord(stored.canonical);
      const changed =
        stored.seq === seq ? { ...entry, outcome: "failure" as const, payload: { rewritten: true } } : entry;
      const sealed = sealAuditRecord(head, changed);
      await client.query(
        "UPDATE audit_log SET prev_hash = $2, hash = $3, canonical = $4, outcome = $5 WHERE seq = $1",
        [
          sealed.seq,
          Buffer.from(sealed.prevHash),
          Buffer.from(sealed.hash),
          Buffer.from(sealed.canonical),
          sealed.outcome,
        ],
      );
      await client.query("UPDATE audit_checkpoints SET head_hash = $2 WHERE seq = $1", [
        sealed.seq,
        Buffer.from(sealed.hash),
      ]);
      head = { seq: sealed.seq, hash: sealed.hash };
    }
    await client.query("ALTER TABLE audit_log ENABLE TRIGGER USER");
    await client.query("ALTER TABLE audit_checkpoints ENABLE TRIGGER USER");
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

describe("audit checkpoints", () => {
  it("stores and publishes a signed checkpoint when the head moved, and only then", async () => {
    const documents = memoryDocuments();
    const publisher = witnessPublisher({ documents, signer: signerOf(key) });
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    try {
      expect(await checkpointer.checkpointNow()).toBeUndefined(); // empty chain
      for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));
      const first = await checkpointer.checkpointNow();
      expect(first?.checkpoint).toMatchObject({ seq: 3, headHash: (await log.head()).hash });
      expect(first?.publication).toMatchObject({
        outcome: "published",
        checkpoint: { seq: 3, kid: key.kid },
      });
      // The head did not move: nothing stored, the witness only checks again.
      expect(await checkpointer.checkpointNow()).toMatchObject({
        stored: false,
        publication: { outcome: "skipped", reason: "already_kept" },
      });
      await log.append(auditEntry(4));
      expect(await checkpointer.checkpointNow()).toMatchObject({
        stored: true,
        publication: { outcome: "published" },
      });
      expect((await publisher.list()).map((c) => c.seq)).toEqual([3, 4]);
      expect(await log.lastCheckpoint()).toMatchObject({ seq: 4 });
      const run = await verifyWith(documents.document!, db.operatorUrl);
      expect(run.stdout).toContain(`witness file `);
      expect(run.stdout).toMatch(/: 2 checkpoints \(seq 3\.\.4\), 2 signed, 1 witness keys/);
      expect(run.stdout).toContain(`: ok — record 4 matches the checkpoint; signed by key ${key.kid}`);
      expect(run.code).toBe(0);
    } finally {
      await checkpointer.stop();
    }
  });

  it("takes checkpoints on its own, every period", async () => {
    const documents = memoryDocuments();
    const publisher = witnessPublisher({ documents, signer: signerOf(key) });
    await log.append(auditEntry(1));
    const checkpointer = startCheckpointer(log, { intervalMs: 10, publisher });
    try {
      while (!documents.document) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(documents.document.checkpoints).toEqual([expect.objectContaining({ seq: 1 })]);
    } finally {
      await checkpointer.stop();
    }
  });

  it("refuses to publish over a chain the owner rewrote and re-hashed, and verify names it after 55 further checkpoints", async () => {
    const documents = memoryDocuments();
    const publisher = witnessPublisher({ documents, signer: signerOf(key) });
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    try {
      for (let i = 1; i <= 70; i++) {
        await log.append(auditEntry(i));
        expect((await checkpointer.checkpointNow())?.publication?.outcome).toBe("published");
      }
      const witnessed = documents.document!.checkpoints.map((c) => c.seq);
      expect(witnessed[0]).toBe(1); // the oldest is kept
      expect(witnessed.length).toBeGreaterThan(50);

      await rewriteFrom(2);
      expect((await log.verify()).ok).toBe(true); // Postgres alone cannot tell
      const firstDisagreeing = witnessed.find((seq) => seq >= 2)!;

      // More checkpoints than the witness used to keep in all: each refused, none evicts the evidence.
      for (let i = 71; i <= 125; i++) {
        await log.append(auditEntry(i));
        const result = await checkpointer.checkpointNow();
        expect(result?.publication).toMatchObject({
          outcome: "refused",
          disagreement: { seq: firstDisagreeing, reason: "rewritten" },
        });
      }
      expect(documents.document!.checkpoints.map((c) => c.seq)).toEqual(witnessed);

      const run = await verifyWith(documents.document!, db.operatorUrl);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^AUDIT CHAIN BROKEN/m);
      expect(run.stdout).toContain(`first checkpoint that disagrees: seq ${firstDisagreeing} (witness file `);
      expect(run.stdout).toContain("the chain holds another hash there");
      expect(run.stdout).toContain(`checkpoint seq ${firstDisagreeing} (witness file`);
      expect(run.stdout).toMatch(/checkpoint seq 1 \(witness file [^)]*\): ok/);
    } finally {
      await checkpointer.stop();
    }
  });

  it("refuses to publish over a chain the owner rewrote whole, checkpoints included", async () => {
    const documents = memoryDocuments();
    const publisher = witnessPublisher({ documents, signer: signerOf(key) });
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    try {
      for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));
      await checkpointer.checkpointNow();
      await db.owner.query(
        `ALTER TABLE audit_log DISABLE TRIGGER USER; ALTER TABLE audit_checkpoints DISABLE TRIGGER USER;
         TRUNCATE audit_log, audit_checkpoints;
         ALTER TABLE audit_log ENABLE TRIGGER USER; ALTER TABLE audit_checkpoints ENABLE TRIGGER USER;`,
      );
      for (let i = 1; i <= 2; i++) await log.append(auditEntry(i, { outcome: "failure" }));
      expect((await log.verify()).ok).toBe(true);
      // Shorter than the witness's checkpoint: that record is gone.
      expect((await checkpointer.checkpointNow())?.publication).toMatchObject({
        outcome: "refused",
        disagreement: { seq: 3, reason: "removed" },
      });
      await log.append(auditEntry(3, { outcome: "failure" }));
      await log.append(auditEntry(4, { outcome: "failure" }));
      expect((await checkpointer.checkpointNow())?.publication).toMatchObject({
        outcome: "refused",
        disagreement: { seq: 3, reason: "rewritten" },
      });
      const report = await log.verify({ checkpoints: await publisher.list() });
      expect(report.ok).toBe(false);
      expect(report.firstDisagreement).toMatchObject({ seq: 3, source: "outside", problem: "hash_mismatch" });
    } finally {
      await checkpointer.stop();
    }
  });

  it("reports a forged checkpoint, unsigned or signed by another key, as a failure", async () => {
    const { documents, checkpointer, head, honest } = await witnessedThenMoved();
    try {
      // Someone who can write the ConfigMap (not read the Secret) adds a checkpoint of the real head.
      const unsigned = { seq: head.seq, headHash: head.hash, atMicros: nowMicros };
      const unsignedRun = await verifyWith(
        { ...honest, checkpoints: [...honest.checkpoints, unsigned] },
        db.operatorUrl,
      );
      expect(unsignedRun.code).toBe(1);
      expect(unsignedRun.stdout).toContain(`checkpoint seq 6 (witness file`);
      expect(unsignedRun.stdout).toContain("SIGNATURE FAILED (unsigned_after_signing)");

      const theirs = newWitnessKey(new Date());
      const byAnother = signCheckpoint(unsigned, {
        kid: theirs.kid,
        privateKey: privateKeyOf(theirs.privateJwk!),
      });
      const otherRun = await verifyWith(
        { ...honest, checkpoints: [...honest.checkpoints, byAnother] },
        db.operatorUrl,
      );
      expect(otherRun.code).toBe(1);
      expect(otherRun.stdout).toContain(`first checkpoint that disagrees: seq 6 (witness file`);
      expect(otherRun.stdout).toContain(`SIGNATURE FAILED (unknown_kid): signed by kid ${theirs.kid}`);

      // Signed with our kid but not by our key: the signature does not verify.
      const claimed = { ...byAnother, kid: key.kid };
      const claimedRun = await verifyWith(
        { ...honest, checkpoints: [...honest.checkpoints, claimed] },
        db.operatorUrl,
      );
      expect(claimedRun.code).toBe(1);
      expect(claimedRun.stdout).toContain("SIGNATURE FAILED (bad_signature)");

      // The witness does not publish over a forged checkpoint either.
      documents.document = { ...honest, checkpoints: [...honest.checkpoints, byAnother] };
      await log.append(auditEntry(7));
      expect((await checkpointer.checkpointNow())?.publication).toMatchObject({
        outcome: "refused",
        disagreement: { seq: 6, reason: "forged" },
      });
    } finally {
      await checkpointer.stop();
    }
  });

  it("with --trust-kid, fails a checkpoint signed by a key someone added to the ConfigMap, and signed checkpoints removed", async () => {
    const { checkpointer, head, honest } = await witnessedThenMoved();
    try {
      // Whoever may update the ConfigMap publishes a key of their own beside the witness's and signs
      // with it: the keys the ConfigMap lists vouch for it.
      const theirs = newWitnessKey(new Date());
      const forged = signCheckpoint(
        { seq: head.seq, headHash: head.hash, atMicros: nowMicros },
        { kid: theirs.kid, privateKey: privateKeyOf(theirs.privateJwk!) },
      );
      const planted = {
        checkpoints: [...honest.checkpoints, forged],
        keys: [...honest.keys, publicPartOf(theirs)],
      };
      expect((await verifyWith(planted, db.operatorUrl)).code).toBe(0);

      // A person who pinned the witness's key id (from an earlier reading) is not fooled.
      const pinned = await verifyWith(planted, db.operatorUrl, [`--trust-kid=${key.kid}`]);
      expect(pinned.code).toBe(1);
      expect(pinned.stdout).toContain(`SIGNATURE FAILED (unknown_kid): signed by kid ${theirs.kid}`);
      expect((await verifyWith(honest, db.operatorUrl, [`--trust-kid=${key.kid}`])).code).toBe(0);

      // Nor by every signed checkpoint and key removed, leaving what would read as legacy entries.
      const stripped = {
        checkpoints: honest.checkpoints.map(({ seq, headHash, atMicros }) => ({ seq, headHash, atMicros })),
        keys: [],
      };
      expect((await verifyWith(stripped, db.operatorUrl)).code).toBe(0);
      const strippedPinned = await verifyWith(stripped, db.operatorUrl, [`--trust-kid=${key.kid}`]);
      expect(strippedPinned.code).toBe(1);
      expect(strippedPinned.stdout).toContain("SIGNATURE FAILED (unsigned_after_signing)");
    } finally {
      await checkpointer.stop();
    }
  });

  it("reports checkpoints of the previous version as unsigned (legacy) and adds signed ones beside them", async () => {
    for (let i = 1; i <= 4; i++) await log.append(auditEntry(i));
    const legacy = [await log.checkpoint()];
    const documents = memoryDocuments();
    documents.document = { checkpoints: legacy, keys: [] };
    // The witness's key is made at its first publication, after the previous version's checkpoints.
    const upgraded = newWitnessKey(new Date(nowMicros / 1000 + 1000));
    const publisher = witnessPublisher({ documents, signer: signerOf(upgraded) });
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    try {
      await log.append(auditEntry(5));
      expect((await checkpointer.checkpointNow())?.publication).toMatchObject({ outcome: "published" });
      expect(documents.document.checkpoints.map((c) => [c.seq, c.kid])).toEqual([
        [4, undefined],
        [5, upgraded.kid],
      ]);
      const run = await verifyWith(documents.document, db.operatorUrl);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^audit chain intact/m);
      expect(run.stdout).toContain("checkpoint seq 4 (witness file");
      expect(run.stdout).toMatch(
        /checkpoint seq 4 \(witness file [^)]*\): ok — record 4 matches the checkpoint; unsigned \(legacy\)/,
      );
      expect(run.stdout).toContain(`; signed by key ${upgraded.kid}`);
    } finally {
      await checkpointer.stop();
    }
  });
});
