import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";
import { appendMissingFinishes, LATE_FINISH_GRACE_MS } from "./recovery.ts";

const session = TEST_SESSION;

const read: InvokeCall = {
  turn: 0,
  position: 0,
  callId: "call_0",
  tool: "aps_schedule_read",
  arguments: '{"planId":"P-7"}',
};

function world(): InMemoryWorld {
  const w = createInMemoryWorld();
  w.capabilities.push(testCapability({ id: "aps.schedule.read", idempotency: "key" }));
  return w;
}

/** Runs one call whose `execution.finished` append fails once; the row is left final and unaudited. */
async function finishLost(w: InMemoryWorld) {
  let failures = 1;
  w.auditFails = (entry) => entry.kind === AuditKind.executionFinished && failures-- > 0;
  await expect(invoke(w.deps, session, read)).rejects.toMatchObject({ kind: "unavailable" });
  const row = [...w.executions.values()][0]!;
  return row;
}

const afterGrace = (w: InMemoryWorld, row: { updatedAtMicros: number }) => {
  w.now.micros = row.updatedAtMicros + LATE_FINISH_GRACE_MS * 1000 + 1;
};

describe("the finish outbox", () => {
  it("marks a row with the seq of its execution.finished when the append succeeds", async () => {
    const w = world();
    const { answer } = await invoke(w.deps, session, read);
    expect(answer.status).toBe("succeeded");
    const row = [...w.executions.values()][0]!;
    const seq = w.audit.findIndex((e) => e.kind === AuditKind.executionFinished) + 1;
    expect(row.finishAuditSeq).toBe(seq);
    afterGrace(w, row);
    expect(await appendMissingFinishes(w.deps)).toBe(0);
  });

  it("leaves a row final but unmarked when the append of execution.finished fails", async () => {
    const w = world();
    const row = await finishLost(w);
    expect(row).toMatchObject({ state: "succeeded" });
    expect(row.finishAuditSeq).toBeUndefined();
    expect(auditPayloads(w, AuditKind.executionFinished)).toEqual([]);
  });

  it("appends the lost finish late, once the grace period has passed", async () => {
    const w = world();
    const row = await finishLost(w);
    expect(await appendMissingFinishes(w.deps)).toBe(0);
    expect(auditPayloads(w, AuditKind.executionFinished)).toEqual([]);

    afterGrace(w, row);
    expect(await appendMissingFinishes(w.deps)).toBe(1);
    expect(auditPayloads(w, AuditKind.executionFinished)).toEqual([
      { state: "succeeded", attempts: null, resultDigest: expect.any(String), late: true },
    ]);
    const late = w.audit.findIndex((e) => e.kind === AuditKind.executionFinished);
    expect(w.audit[late]).toMatchObject({ executionId: row.id, sessionUid: session.uid, outcome: "success" });
    expect(w.executions.get(row.id)?.finishAuditSeq).toBe(late + 1);
  });

  it("appends a lost finish exactly once, however often the sweep runs", async () => {
    const w = world();
    const row = await finishLost(w);
    afterGrace(w, row);
    await appendMissingFinishes(w.deps);
    expect(await appendMissingFinishes(w.deps)).toBe(0);
    expect(auditPayloads(w, AuditKind.executionFinished)).toHaveLength(1);
  });

  it("only marks the row when the chain already holds its finish", async () => {
    const w = world();
    const row = await finishLost(w);
    // The append landed after all (its answer was lost), so the chain has the record the row lacks.
    const seq = (
      await w.deps.audit.append({
        kind: AuditKind.executionFinished,
        actor: "alice",
        outcome: "success",
        sessionUid: session.uid,
        executionId: row.id,
        atMicros: row.updatedAtMicros,
        payload: { state: "succeeded", attempts: 1 },
      })
    ).seq;
    afterGrace(w, row);
    expect(await appendMissingFinishes(w.deps)).toBe(1);
    expect(auditPayloads(w, AuditKind.executionFinished)).toEqual([{ state: "succeeded", attempts: 1 }]);
    expect(w.executions.get(row.id)?.finishAuditSeq).toBe(seq);
  });

  it("keeps the row for the next sweep while the audit log is still down", async () => {
    const w = world();
    const row = await finishLost(w);
    afterGrace(w, row);
    w.auditFails = (entry) => entry.kind === AuditKind.executionFinished;
    expect(await appendMissingFinishes(w.deps)).toBe(1);
    expect(w.executions.get(row.id)?.finishAuditSeq).toBeUndefined();

    w.auditFails = () => false;
    await appendMissingFinishes(w.deps);
    expect(auditPayloads(w, AuditKind.executionFinished)).toEqual([expect.objectContaining({ late: true })]);
    expect(w.executions.get(row.id)?.finishAuditSeq).toBeDefined();
  });
});
