/**
 * Checkpoints of the audit chain (DESIGN §6): stored in Postgres when the head moved, published
 * outside it through the `CheckpointPublisher` port, and what catches a chain rewritten whole.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "../../operator/src/core/audit.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit-log.ts";
import type { CheckpointPublisher } from "../../operator/src/store/checkpoint-publisher.ts";
import { startCheckpointer } from "../../operator/src/store/checkpointer.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

/** Keeps published checkpoints in memory (the operator's implementation is a ConfigMap). */
function memoryPublisher(): CheckpointPublisher & { published: AuditCheckpoint[] } {
  const published: AuditCheckpoint[] = [];
  return {
    published,
    async publish(checkpoint) {
      if (!published.some((c) => c.seq === checkpoint.seq)) published.push(checkpoint);
    },
    async list() {
      return [...published];
    },
  };
}

let db: FreshDatabase;
let log: PostgresAuditLog;
beforeEach(async () => {
  db = await freshDatabase();
  log = createPostgresAuditLog(db.operator);
});
afterEach(async () => {
  await db?.drop();
});

describe("audit checkpoints", () => {
  it("stores and publishes a checkpoint when the head moved, and only then", async () => {
    const publisher = memoryPublisher();
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    try {
      expect(await checkpointer.checkpointNow()).toBeUndefined(); // empty chain
      for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));
      const first = await checkpointer.checkpointNow();
      expect(first).toMatchObject({ seq: 3, headHash: (await log.head()).hash });
      expect(await checkpointer.checkpointNow()).toBeUndefined();
      await log.append(auditEntry(4));
      expect(await checkpointer.checkpointNow()).toMatchObject({ seq: 4 });
      expect(publisher.published.map((c) => c.seq)).toEqual([3, 4]);
      expect(await log.lastCheckpoint()).toMatchObject({ seq: 4 });
    } finally {
      await checkpointer.stop();
    }
  });

  it("takes checkpoints on its own, every period", async () => {
    const publisher = memoryPublisher();
    await log.append(auditEntry(1));
    const checkpointer = startCheckpointer(log, { intervalMs: 10, publisher });
    try {
      while (publisher.published.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(publisher.published).toEqual([expect.objectContaining({ seq: 1 })]);
    } finally {
      await checkpointer.stop();
    }
  });

  it("catches a chain the owner rewrote whole, checkpoints included, against the published copy", async () => {
    const publisher = memoryPublisher();
    const checkpointer = startCheckpointer(log, { intervalMs: 3_600_000, publisher });
    for (let i = 1; i <= 3; i++) await log.append(auditEntry(i));
    await checkpointer.checkpointNow();
    await checkpointer.stop();

    // A self-consistent replacement: every row and stored checkpoint gone, a new chain written.
    await db.owner.query(
      `ALTER TABLE audit_log DISABLE TRIGGER USER; ALTER TABLE audit_checkpoints DISABLE TRIGGER USER;
       TRUNCATE audit_log, audit_checkpoints;
       ALTER TABLE audit_log ENABLE TRIGGER USER; ALTER TABLE audit_checkpoints ENABLE TRIGGER USER;`,
    );
    for (let i = 1; i <= 3; i++) await log.append(auditEntry(i, { outcome: "failure" }));

    expect((await log.verify()).ok).toBe(true); // Postgres alone cannot tell
    const report = await log.verify({ checkpoints: await publisher.list() });
    expect(report.ok).toBe(false);
    expect(report.checkpoints).toEqual([expect.objectContaining({ status: "hash_mismatch" })]);
  });
});
