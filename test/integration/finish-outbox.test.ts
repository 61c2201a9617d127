/**
 * The finish outbox with Core on the real Postgres stores (executions and the audit chain; the rest of
 * Core's ports in memory): an `execution.finished` whose append fails after the receipt was stored
 * reaches the chain later, from the leader's sweep, exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { AuditKind } from "../../operator/src/core/audit.ts";
import { GatehouseError } from "../../operator/src/core/errors.ts";
import { createInMemoryWorld, testCapability } from "../../operator/src/core/in-memory-ports.ts";
import { invoke } from "../../operator/src/core/invoke.ts";
import type { AuditLog, SessionContext } from "../../operator/src/core/ports.ts";
import { appendMissingFinishes, LATE_FINISH_GRACE_MS } from "../../operator/src/core/recovery.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { createPostgresExecutionStore } from "../../operator/src/store/executions.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const session: SessionContext = {
  namespace: "plant-a",
  name: "s1",
  uid: "uid-1",
  subject: { user: "alice", groups: [] },
  limits: { maxTurns: 20, maxToolCalls: 50, maxWrites: 10 },
  active: true,
};

const read: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_read",
  arguments: '{"planId":"P-7"}',
};

/** The Postgres chain, except that the next `failures` appends of `execution.finished` fail. */
function failingFinishes(chain: PostgresAuditLog, failures: { left: number }): AuditLog {
  return {
    async append(entry) {
      if (entry.kind === AuditKind.executionFinished && failures.left-- > 0)
        throw new GatehouseError("unavailable", "the audit log is unavailable");
      return chain.append(entry);
    },
    appendAll: (entries) => chain.appendAll(entries),
    recordsOf: (executionId) => chain.recordsOf(executionId),
    recentOfKind: (kind, sinceMicros, limit) => chain.recentOfKind(kind, sinceMicros, limit),
  };
}

describe("an execution.finished lost after the receipt, with Core on Postgres", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("reaches the audit chain late from the sweep, exactly once, and the chain verifies", async () => {
    const world = createInMemoryWorld();
    world.capabilities.push(testCapability({ id: "aps.schedule.read", idempotency: "key" }));
    const chain = createPostgresAuditLog(db.operator);
    const executions = createPostgresExecutionStore(db.operator);
    world.deps = { ...world.deps, executions, audit: failingFinishes(chain, { left: 1 }) };

    await expect(invoke(world.deps, session, read)).rejects.toMatchObject({ kind: "unavailable" });
    const [row] = await executions.listBySession(session.uid);
    expect(row).toMatchObject({ state: "succeeded" });
    expect(row?.finishAuditSeq).toBeUndefined();
    const kinds = async () => (await chain.recordsOf(row!.id)).map((r) => r.kind);
    expect(await kinds()).toEqual([AuditKind.executionStarted]);

    // Within the grace period the sweep leaves the row to the normal path.
    expect(await appendMissingFinishes(world.deps)).toBe(0);
    world.now.micros = row!.updatedAtMicros + LATE_FINISH_GRACE_MS * 1000 + 1;
    expect(await appendMissingFinishes(world.deps)).toBe(1);
    expect(await appendMissingFinishes(world.deps)).toBe(0);

    const records = await chain.recordsOf(row!.id);
    expect(records.map((r) => r.kind)).toEqual([AuditKind.executionStarted, AuditKind.executionFinished]);
    const finished = records[1]!;
    expect(finished).toMatchObject({
      actor: "gatehouse",
      outcome: "success",
      sessionUid: session.uid,
      payload: { state: "succeeded", attempts: null, late: true },
    });
    expect((await executions.get(row!.id))?.finishAuditSeq).toBe(finished.seq);
    expect(await chain.verify()).toMatchObject({ ok: true, badRows: 0, gaps: [] });
  });

  it("marks a row whose finish is in the chain without appending it again", async () => {
    const world = createInMemoryWorld();
    world.capabilities.push(testCapability({ id: "aps.schedule.read", idempotency: "key" }));
    const chain = createPostgresAuditLog(db.operator);
    const executions = createPostgresExecutionStore(db.operator);
    // The append commits but its answer is lost: the chain has the record, the row is not marked.
    const lostAnswer: AuditLog = {
      async append(entry) {
        const appended = await chain.append(entry);
        if (entry.kind === AuditKind.executionFinished && entry.sessionUid === "uid-2")
          throw new GatehouseError("unavailable", "the connection was lost after the commit");
        return appended;
      },
      appendAll: (entries) => chain.appendAll(entries),
      recordsOf: (executionId) => chain.recordsOf(executionId),
      recentOfKind: (kind, sinceMicros, limit) => chain.recentOfKind(kind, sinceMicros, limit),
    };
    world.deps = { ...world.deps, executions, audit: lostAnswer };

    const other = { ...session, uid: "uid-2" };
    await expect(invoke(world.deps, other, read)).rejects.toMatchObject({ kind: "unavailable" });
    const [row] = await executions.listBySession(other.uid);
    world.now.micros = row!.updatedAtMicros + LATE_FINISH_GRACE_MS * 1000 + 1;
    expect(await appendMissingFinishes(world.deps)).toBe(1);

    const records = await chain.recordsOf(row!.id);
    expect(records.filter((r) => r.kind === AuditKind.executionFinished)).toHaveLength(1);
    const finished = records.find((r) => r.kind === AuditKind.executionFinished)!;
    expect(finished.payload.late).toBeUndefined();
    expect((await executions.get(row!.id))?.finishAuditSeq).toBe(finished.seq);
  });
});
