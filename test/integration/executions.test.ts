import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson, sha256Hex } from "../../operator/src/core/canonical.ts";
import type { NewExecution } from "../../operator/src/core/ports.ts";
import { sessionRecordOf } from "../../operator/src/core/session-record.ts";
import { createPool } from "../../operator/src/store/connection.ts";
import { createPostgresExecutionStore } from "../../operator/src/store/executions.ts";
import { migrate } from "../../operator/src/store/migrate.ts";
import { sessionRecords } from "../../operator/src/store/session-records.ts";
import { createPostgresTranscriptStore } from "../../operator/src/store/transcripts.ts";
import { type FreshDatabase, freshDatabase, migrationsFrom } from "./fresh-database.ts";

let counter = 0;
function newExecution(overrides: Partial<NewExecution> = {}): NewExecution {
  counter++;
  const id = (overrides.id ?? `${counter}`.padStart(40, "a")).slice(0, 40);
  const args = { planId: "P-1", version: counter };
  const argumentsCanonical = canonicalJson(args);
  return {
    id,
    idempotencyKey: `gh1.${id}`,
    session: { uid: "uid-1", namespace: "plant-a", name: "s1" },
    capability: "aps.schedule.publish",
    providerRef: { namespace: "plant-a", name: "aps" },
    idempotency: "key",
    request: {
      executionId: id,
      idempotencyKey: `gh1.${id}`,
      capability: "aps.schedule.publish",
      arguments: args,
      subject: { user: "alice", groups: [] },
    },
    argumentsCanonical,
    requestDigest: sha256Hex(argumentsCanonical),
    leaseUntilMicros: 2_000_000_000_000_000,
    atMicros: 1_700_000_000_000_000,
    ...overrides,
  };
}

describe("executions in Postgres", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("lets exactly one of two concurrent claims own the execution", async () => {
    // Two pools = two replicas, each with its own connection.
    const second = createPool(db.url, { max: 2 });
    try {
      const a = createPostgresExecutionStore(db.operator);
      const b = createPostgresExecutionStore(second);
      for (let round = 0; round < 10; round++) {
        const row = newExecution();
        const results = await Promise.all([a.claim(row), b.claim(row)]);
        expect(results.filter((r) => r.owned)).toHaveLength(1);
        expect(results.map((r) => r.execution.id)).toEqual([row.id, row.id]);
        expect(results.every((r) => r.execution.state === "started")).toBe(true);
      }
    } finally {
      await second.end();
    }
  });

  it("returns the existing row to a repeated claim", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    expect((await store.claim(row)).owned).toBe(true);
    await store.recordReceipt(
      row.id,
      {
        state: "succeeded",
        receipt: { status: "succeeded", result: { published: true } },
        atMicros: row.atMicros + 5,
      },
      1,
    );
    const again = await store.claim(row);
    expect(again.owned).toBe(false);
    expect(again.execution).toMatchObject({ state: "succeeded", receipt: { result: { published: true } } });
    expect(again.execution.argumentsCanonical).toBe(row.argumentsCanonical);
  });

  it("refuses a claim whose idempotency key belongs to another execution", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await expect(
      store.claim({ ...newExecution(), idempotencyKey: row.idempotencyKey }),
    ).rejects.toMatchObject({
      kind: "conflict",
    });
  });

  it("never overwrites a final outcome", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    const failed = await store.recordReceipt(
      row.id,
      {
        state: "failed",
        errorKind: "forbidden",
        receipt: { status: "failed", errorKind: "forbidden", message: "bob may not publish" },
        atMicros: row.atMicros + 1,
      },
      1,
    );
    expect(failed.recorded).toBe(true);
    const overwrite = await store.recordReceipt(
      row.id,
      { state: "succeeded", atMicros: row.atMicros + 2 },
      1,
    );
    expect(overwrite).toMatchObject({
      recorded: false,
      execution: { state: "failed", errorKind: "forbidden" },
    });
  });

  it.each([
    ["succeeded", "started"],
    ["succeeded", "failed"],
    ["failed", "succeeded"],
    ["unknown", "started"],
  ] as const)("refuses the illegal transition %s → %s in SQL, even to a direct UPDATE", async (from, to) => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await store.recordReceipt(row.id, { state: from, atMicros: row.atMicros + 1 }, 1);

    await expect(
      db.operator.query("UPDATE executions SET state = $2 WHERE id = $1", [row.id, to]),
    ).rejects.toThrow(`execution ${row.id}: illegal state transition ${from} -> ${to}`);
    expect(await store.get(row.id)).toMatchObject({ state: from });
  });

  it("never changes the claimed request or its digest", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    const other = canonicalJson({ planId: "P-2" });
    await expect(
      db.operator.query("UPDATE executions SET arguments_canonical = $2, request_digest = $3 WHERE id = $1", [
        row.id,
        other,
        sha256Hex(other),
      ]),
    ).rejects.toThrow(`execution ${row.id}: the claimed request is immutable`);
    await expect(
      store.claim({ ...newExecution(), requestDigest: sha256Hex("something else") }),
    ).rejects.toThrow(/executions_digest_covers_arguments/);
  });

  it("resolves an unknown outcome later, but not back to unknown", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await store.recordReceipt(
      row.id,
      {
        state: "unknown",
        errorKind: "unknown_outcome",
        atMicros: row.atMicros + 1,
      },
      1,
    );
    const resolved = await store.recordReceipt(
      row.id,
      {
        state: "succeeded",
        receipt: { status: "succeeded" },
        atMicros: row.atMicros + 2,
      },
      1,
    );
    expect(resolved).toMatchObject({ recorded: true, execution: { state: "succeeded" } });
  });

  it("lets exactly one of several callers take over a started row whose lease ended", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution({ leaseUntilMicros: 1_000 });
    await store.claim(row);
    expect((await store.listExpired(2_000, 10)).map((e) => e.id)).toContain(row.id);
    const takers = await Promise.all([1, 2, 3].map(() => store.takeOverExpired(row.id, 9_000, 2_000)));
    expect(takers.filter((t) => t !== undefined)).toHaveLength(1);
    expect(await store.get(row.id)).toMatchObject({ state: "started", leaseUntilMicros: 9_000 });
    expect((await store.listExpired(2_000, 10)).map((e) => e.id)).not.toContain(row.id);
  });

  it("does not take over a row that is still leased or already finished", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const leased = newExecution({ leaseUntilMicros: 5_000 });
    await store.claim(leased);
    expect(await store.takeOverExpired(leased.id, 9_000, 2_000)).toBeUndefined();
    const finished = newExecution({ leaseUntilMicros: 1_000 });
    await store.claim(finished);
    await store.recordReceipt(finished.id, { state: "succeeded", atMicros: 1_500 }, 1);
    expect(await store.takeOverExpired(finished.id, 9_000, 2_000)).toBeUndefined();
  });

  it("records an outcome only under the current fencing token", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution({ leaseUntilMicros: 1_000 });
    expect((await store.claim(row)).execution).toMatchObject({ fencingToken: 1, idempotency: "key" });
    const taken = await store.takeOverExpired(row.id, 9_000, 2_000);
    expect(taken).toMatchObject({ fencingToken: 2, state: "started" });
    // The recoverer records unknown; the slow first claimer's "never sent" failure comes later.
    expect((await store.recordReceipt(row.id, { state: "unknown", atMicros: 2_100 }, 2)).recorded).toBe(true);
    const stale = await store.recordReceipt(
      row.id,
      { state: "failed", errorKind: "unavailable", neverSent: true, atMicros: 2_200 },
      1,
    );
    expect(stale).toMatchObject({ recorded: false, execution: { state: "unknown", neverSent: false } });
    expect(await store.renewLease(row.id, 1, 99_000, 2_300)).toBe(false);
  });

  it("renews the lease of a started row for its current holder only", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution({ leaseUntilMicros: 1_000 });
    await store.claim(row);
    expect(await store.renewLease(row.id, 1, 5_000, 900)).toBe(true);
    expect(await store.takeOverExpired(row.id, 9_000, 2_000)).toBeUndefined();
    expect(await store.get(row.id)).toMatchObject({ leaseUntilMicros: 5_000, fencingToken: 1 });
    await store.recordReceipt(row.id, { state: "succeeded", atMicros: 2_100 }, 1);
    expect(await store.renewLease(row.id, 1, 9_000, 2_200)).toBe(false);
  });

  it("keeps never_sent for a started row that failed, and refuses it on anything else in SQL", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const failed = newExecution();
    await store.claim(failed);
    await store.recordReceipt(
      failed.id,
      { state: "failed", errorKind: "unavailable", neverSent: true, atMicros: 5 },
      1,
    );
    expect(await store.get(failed.id)).toMatchObject({ state: "failed", neverSent: true });
    const succeeded = newExecution();
    await store.claim(succeeded);
    await expect(
      db.operator.query("UPDATE executions SET state = 'succeeded', never_sent = true WHERE id = $1", [
        succeeded.id,
      ]),
    ).rejects.toThrow(/never_sent|never sent/);
    await expect(
      db.operator.query("UPDATE executions SET fencing_token = 0 WHERE id = $1", [succeeded.id]),
    ).rejects.toThrow(/fencing/);
  });

  it("takes an unknown row due for settling for one attempt at a time, under a new token", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution({ leaseUntilMicros: 1_000 });
    await store.claim(row);
    await store.recordReceipt(row.id, { state: "unknown", nextSettleMicros: 3_000, atMicros: 1_500 }, 1);
    expect(await store.listUnsettled(2_000, 10)).toEqual([]);
    expect((await store.listUnsettled(4_000, 10)).map((e) => e.id)).toContain(row.id);
    const takers = await Promise.all(
      [1, 2, 3].map(() => store.takeUnknownForSettling(row.id, 50_000, 4_000, 60_000)),
    );
    expect(takers.filter((t) => t !== undefined)).toEqual([
      expect.objectContaining({
        state: "unknown",
        fencingToken: 2,
        settleAttempts: 1,
        nextSettleMicros: 60_000,
      }),
    ]);
    // Still leased: not due again, even past its next time; the outcome stays as recorded.
    expect(await store.takeUnknownForSettling(row.id, 90_000, 45_000, undefined)).toBeUndefined();
    expect((await store.get(row.id))?.updatedAtMicros).toBe(1_500);
    expect((await store.recordReceipt(row.id, { state: "succeeded", atMicros: 4_100 }, 1)).recorded).toBe(
      false,
    );
    expect((await store.recordReceipt(row.id, { state: "succeeded", atMicros: 4_100 }, 2)).recorded).toBe(
      true,
    );
    expect((await store.get(row.id))?.nextSettleMicros).toBeUndefined();
    await expect(
      db.operator.query("UPDATE executions SET message = 'edited' WHERE id = $1 AND state = 'unknown'", [
        row.id,
      ]),
    ).resolves.toMatchObject({ rowCount: 0 });
  });

  it("refuses to change what an unknown row recorded, other than settling it", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await store.recordReceipt(row.id, { state: "unknown", message: "no answer", atMicros: 5 }, 1);
    await expect(
      db.operator.query("UPDATE executions SET message = 'edited' WHERE id = $1", [row.id]),
    ).rejects.toThrow(`execution ${row.id}: an unknown outcome changes only to succeeded or failed`);
  });

  it("reports not_found when recording on a missing execution", async () => {
    const store = createPostgresExecutionStore(db.operator);
    await expect(
      store.recordReceipt("f".repeat(40), { state: "failed", atMicros: 1 }, 1),
    ).rejects.toMatchObject({
      kind: "not_found",
    });
  });
});

describe("the finish outbox of executions in Postgres", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function finished(state: "succeeded" | "failed" | "unknown" = "succeeded") {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await store.recordReceipt(row.id, { state, atMicros: row.atMicros + 1 }, 1);
    return { store, row };
  }

  it("lets a finished row record the audit seq of its finish once, and never change it", async () => {
    const { store, row } = await finished();
    expect((await store.get(row.id))?.finishAuditSeq).toBeUndefined();
    expect(await store.markFinishAudited(row.id, 7)).toBe(true);
    expect(await store.markFinishAudited(row.id, 8)).toBe(false);
    await expect(
      db.operator.query("UPDATE executions SET finish_audit_seq = 8 WHERE id = $1", [row.id]),
    ).rejects.toThrow(`execution ${row.id}: its finish is already in the audit chain at seq 7`);
    await expect(
      db.operator.query("UPDATE executions SET finish_audit_seq = NULL WHERE id = $1", [row.id]),
    ).rejects.toThrow(`execution ${row.id}: its finish is already in the audit chain at seq 7`);
    expect(await store.get(row.id)).toMatchObject({ state: "succeeded", finishAuditSeq: 7 });
  });

  it("refuses any other change to a finished row, even together with its audit seq", async () => {
    const { store, row } = await finished();
    await expect(
      db.operator.query("UPDATE executions SET finish_audit_seq = 3, state = 'failed' WHERE id = $1", [
        row.id,
      ]),
    ).rejects.toThrow(`execution ${row.id}: illegal state transition succeeded -> failed`);
    await expect(
      db.operator.query("UPDATE executions SET finish_audit_seq = 3, message = 'edited' WHERE id = $1", [
        row.id,
      ]),
    ).rejects.toThrow(`execution ${row.id}: illegal state transition succeeded -> succeeded`);
    const stored = await store.get(row.id);
    expect(stored).toMatchObject({ state: "succeeded" });
    expect(stored?.message).toBeUndefined();
    expect(stored?.finishAuditSeq).toBeUndefined();
  });

  it("gives a started row no audit seq: it has no finish yet", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    expect(await store.markFinishAudited(row.id, 4)).toBe(false);
    await expect(
      db.operator.query("UPDATE executions SET finish_audit_seq = 4 WHERE id = $1", [row.id]),
    ).rejects.toThrow(`execution ${row.id}: a new state's finish is not in the audit chain yet`);
    expect((await store.get(row.id))?.finishAuditSeq).toBeUndefined();
  });

  it("starts a row that leaves unknown for a definite outcome again without an audit seq", async () => {
    const { store, row } = await finished("unknown");
    expect(await store.markFinishAudited(row.id, 5)).toBe(true);
    await store.recordReceipt(row.id, { state: "succeeded", atMicros: row.atMicros + 2 }, 1);
    const resolved = await store.get(row.id);
    expect(resolved).toMatchObject({ state: "succeeded" });
    expect(resolved?.finishAuditSeq).toBeUndefined();
    expect(await store.markFinishAudited(row.id, 9)).toBe(true);
    expect((await store.get(row.id))?.finishAuditSeq).toBe(9);
  });

  it("lists the finished rows without an audit seq that finished before the given time, oldest first", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const early = newExecution({ atMicros: 1_000 });
    const later = newExecution({ atMicros: 1_000 });
    const marked = newExecution({ atMicros: 1_000 });
    const started = newExecution({ atMicros: 1_000 });
    for (const row of [early, later, marked, started]) await store.claim(row);
    await store.recordReceipt(later.id, { state: "failed", atMicros: 3_000 }, 1);
    await store.recordReceipt(early.id, { state: "succeeded", atMicros: 2_000 }, 1);
    await store.recordReceipt(marked.id, { state: "succeeded", atMicros: 2_000 }, 1);
    await store.markFinishAudited(marked.id, 1);

    const ids = (before: number) =>
      store.listUnauditedFinishes(before, 10).then((rows) => rows.map((r) => r.id));
    expect(await ids(4_000)).toEqual([early.id, later.id]);
    expect(await ids(3_000)).toEqual([early.id]);
    expect(await store.listUnauditedFinishes(4_000, 1)).toHaveLength(1);
  });
});

describe("re-proposals and resolutions in Postgres", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const neverSent = (id: string) =>
    db.operator.query(
      "UPDATE executions SET state = 'failed', error_kind = 'unavailable', never_sent = true WHERE id = $1",
      [id],
    );

  it("finds a session's executions of one action, oldest first, whatever their position", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const first = newExecution({ session: { uid: "uid-action", namespace: "plant-a", name: "s2" } });
    const second = newExecution({
      session: first.session,
      argumentsCanonical: first.argumentsCanonical,
      requestDigest: first.requestDigest,
      atMicros: first.atMicros + 5,
    });
    const other = newExecution({ session: first.session });
    for (const row of [second, first, other]) await store.claim(row);
    const found = await store.findByAction({
      sessionUid: "uid-action",
      capability: "aps.schedule.publish",
      argumentsDigest: first.requestDigest,
    });
    expect(found.map((r) => r.id)).toEqual([first.id, second.id]);
  });

  it("lets a never-sent failure's idempotency key be claimed again, by one row at a time", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const failed = newExecution();
    await store.claim(failed);
    await expect(store.claim(newExecution({ idempotencyKey: failed.idempotencyKey }))).rejects.toThrow(
      `idempotency key ${failed.idempotencyKey} already belongs to execution ${failed.id}`,
    );
    await neverSent(failed.id);
    expect((await store.get(failed.id))?.neverSent).toBe(true);
    const rerun = newExecution({ idempotencyKey: failed.idempotencyKey });
    expect((await store.claim(rerun)).owned).toBe(true);
    await expect(store.claim(newExecution({ idempotencyKey: failed.idempotencyKey }))).rejects.toThrow(
      "already belongs to execution",
    );
  });

  it("refuses never_sent on a row that is not failed", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const row = newExecution();
    await store.claim(row);
    await expect(
      db.operator.query("UPDATE executions SET never_sent = true WHERE id = $1", [row.id]),
    ).rejects.toThrow(/only a started row that fails can be recorded as never sent/);
  });

  it("records a person's resolution of an unknown outcome once, and only of an unknown one", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const [unknown, succeeded] = [newExecution(), newExecution()];
    for (const row of [unknown, succeeded]) await store.claim(row);
    await store.recordReceipt(unknown.id, { state: "unknown", atMicros: unknown.atMicros + 1 }, 1);
    await store.markFinishAudited(unknown.id, 7);
    await store.recordReceipt(succeeded.id, { state: "succeeded", atMicros: succeeded.atMicros + 1 }, 1);
    const resolution = {
      state: "succeeded" as const,
      resolver: "carol",
      reason: "APS shows version 4",
      message: "resolved by carol: APS shows version 4",
      atMicros: unknown.atMicros + 2,
    };

    const resolved = await store.recordResolution(unknown.id, resolution);
    expect(resolved.recorded).toBe(true);
    expect(resolved.execution).toMatchObject({
      state: "succeeded",
      message: "resolved by carol: APS shows version 4",
      resolution: { resolver: "carol", reason: "APS shows version 4" },
    });
    expect(resolved.execution.finishAuditSeq).toBeUndefined();
    expect((await store.recordResolution(unknown.id, { ...resolution, state: "failed" })).recorded).toBe(
      false,
    );
    expect((await store.recordResolution(succeeded.id, resolution)).recorded).toBe(false);
    await expect(
      db.operator.query(
        "UPDATE executions SET resolved_by = 'mallory', resolution_reason = 'x' WHERE id = $1",
        [succeeded.id],
      ),
    ).rejects.toThrow("a resolution is recorded only when an unknown outcome is settled, once");
  });
});

describe("migrating executions to the finish outbox", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("gives rows finished before the migration audit seq 0 and leaves started rows without one", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const [succeeded, unknown, started] = [newExecution(), newExecution(), newExecution()];
    for (const row of [succeeded, unknown, started]) await store.claim(row);
    await store.recordReceipt(succeeded.id, { state: "succeeded", atMicros: succeeded.atMicros + 1 }, 1);
    await store.recordReceipt(unknown.id, { state: "unknown", atMicros: unknown.atMicros + 1 }, 1);

    const reverted = migrationsFrom("0006_finish_outbox");
    expect(await migrate(db.url, { direction: "down", count: reverted.length })).toEqual(reverted);
    expect(await migrate(db.url)).toEqual([...reverted].reverse());

    expect((await store.get(succeeded.id))?.finishAuditSeq).toBe(0);
    expect((await store.get(unknown.id))?.finishAuditSeq).toBe(0);
    expect((await store.get(started.id))?.finishAuditSeq).toBeUndefined();
    expect(await store.listUnauditedFinishes(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    await expect(
      db.operator.query("UPDATE executions SET state = 'failed' WHERE id = $1", [succeeded.id]),
    ).rejects.toThrow(`execution ${succeeded.id}: illegal state transition succeeded -> failed`);
  });
});

describe("transcripts in Postgres", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("numbers concurrent appends of one session without gaps", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.append({
          sessionUid: "s-1",
          source: "agent",
          kind: "assistant_text",
          payload: { i },
          atMicros: i,
        }),
      ),
    );
    await store.append({
      sessionUid: "s-2",
      source: "core",
      kind: "user_message",
      payload: { text: "hi" },
      atMicros: 1,
    });
    const events = await store.list("s-1");
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect((await store.list("s-2"))[0]).toMatchObject({ seq: 1, source: "core", payload: { text: "hi" } });
    expect((await store.list("s-1", { afterSeq: 10 })).map((e) => e.seq)).toEqual([11, 12]);
  });

  it("appends an event with a deduplication key once, however often and concurrently it is sent", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    const result = (n: number) =>
      store.append({
        sessionUid: "s-3",
        source: "core",
        kind: "tool_result",
        payload: { n },
        atMicros: n,
        dedupeKey: "tool_result:0:0",
      });
    const answers = await Promise.all([1, 2, 3, 4].map(result));
    expect(new Set(answers.map((e) => e.seq))).toEqual(new Set([1]));
    await store.append({ sessionUid: "s-3", source: "core", kind: "tool_result", payload: {}, atMicros: 9 });
    expect((await store.list("s-3")).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("appends a batch in order after the session's last event, answering a stored key with its event", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    const event = (kind: string, dedupeKey?: string) => ({
      sessionUid: "s-8",
      source: "core" as const,
      kind,
      payload: { kind },
      atMicros: 1,
      ...(dedupeKey ? { dedupeKey } : {}),
    });
    await store.append(event("user_message"));
    const stored = await store.append(event("tool_call", "call:1"));
    const batch = [event("tool_call", "call:1"), event("tool_result", "result:1"), event("assistant_text")];
    const answered = await store.appendAll(batch);
    expect(answered.map((e) => [e.seq, e.kind])).toEqual([
      [stored.seq, "tool_call"],
      [3, "tool_result"],
      [4, "assistant_text"],
    ]);
    // Sent again, the batch adds only what has no key.
    expect((await store.appendAll(batch)).map((e) => e.seq)).toEqual([2, 3, 5]);
    expect((await store.list("s-8")).map((e) => e.kind)).toEqual([
      "user_message",
      "tool_call",
      "tool_result",
      "assistant_text",
      "assistant_text",
    ]);
  });

  it("refuses a batch of two sessions or with a key twice, appending nothing of it", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    const event = (sessionUid: string, dedupeKey: string) => ({
      sessionUid,
      source: "agent" as const,
      kind: "tool_call",
      payload: {},
      atMicros: 1,
      dedupeKey,
    });
    await expect(store.appendAll([event("s-9", "a"), event("s-10", "b")])).rejects.toThrow("one session");
    await expect(store.appendAll([event("s-9", "a"), event("s-9", "a")])).rejects.toThrow("repeats");
    expect(await store.list("s-9")).toEqual([]);
  });

  it("reads session records incrementally, equal to folding the whole transcript, across replicas", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    const [mine, theirs] = [sessionRecords(store), sessionRecords(store)];
    const call = (n: number) =>
      store.append({
        sessionUid: "s-5",
        source: "agent",
        kind: "tool_call",
        payload: { turn: n },
        atMicros: n,
      });
    await call(0);
    expect((await mine.recordOf("s-5")).toolCalls).toBe(1);
    await call(1);
    expect((await theirs.recordOf("s-5")).toolCalls).toBe(2);
    await call(2);
    const whole = sessionRecordOf(await store.list("s-5"));
    expect(await mine.recordOf("s-5")).toEqual(whole);
    expect(whole).toMatchObject({ toolCalls: 3, turns: 3 });
  });

  it("finds the first event of a kind by a payload field in the database, of that session only", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    const result = (sessionUid: string, approval: string | undefined, turn: number) =>
      store.append({
        sessionUid,
        source: "core",
        kind: "tool_result",
        payload: { turn, ...(approval ? { approval } : {}) },
        atMicros: turn,
      });
    await result("s-6", undefined, 0);
    await result("s-6", "apr-1", 1);
    await result("s-6", "apr-1", 2);
    await result("s-7", "apr-2", 3);
    await store.append({
      sessionUid: "s-6",
      source: "core",
      kind: "approval_outcome",
      payload: { approval: "apr-2" },
      atMicros: 4,
    });
    expect(await store.findFirst("s-6", "tool_result", "approval", "apr-1")).toMatchObject({
      seq: 2,
      payload: { turn: 1 },
    });
    expect(await store.findFirst("s-6", "tool_result", "approval", "apr-2")).toBeUndefined();
    expect(await store.findFirst("s-7", "tool_result", "approval", "apr-2")).toMatchObject({ seq: 1 });
  });

  it("stores text holding a lone surrogate, with U+FFFD in its place", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    await store.append({
      sessionUid: "s-4",
      source: "agent",
      kind: "tool_call",
      payload: { arguments: '{"a":"\ud800"}', "k\udc00": 1 },
      atMicros: 1,
    });
    expect((await store.list("s-4"))[0]?.payload).toEqual({ arguments: '{"a":"\ufffd"}', "k\ufffd": 1 });
  });
});
