/**
 * The in-memory ExecutionStore of in-memory-ports.ts: claims are exactly-once by idempotency key,
 * receipts follow the allowed transitions, and unknown outcomes come due for settling by the clock.
 */
import { GatehouseError } from "./errors.ts";
import type { InMemoryWorld } from "./in-memory-world.ts";
import type { ExecutionRecord, ExecutionStore } from "./ports.ts";

function dueForSettling(record: ExecutionRecord, nowMicros: number): boolean {
  return (
    record.state === "unknown" &&
    record.nextSettleMicros !== undefined &&
    record.nextSettleMicros < nowMicros &&
    record.leaseUntilMicros < nowMicros
  );
}

/** The executions of `world`. */
export function inMemoryExecutionStore(world: InMemoryWorld): ExecutionStore {
  const executions: ExecutionStore = {
    async claim(row) {
      // A never-sent failure leaves its key free for a re-run of the same action (migration 0009).
      const existing =
        world.executions.get(row.id) ??
        [...world.executions.values()].find(
          (e) => e.idempotencyKey === row.idempotencyKey && !(e.state === "failed" && e.neverSent),
        );
      if (existing) {
        if (existing.id !== row.id)
          throw new GatehouseError("conflict", `idempotency key ${row.idempotencyKey} is taken`);
        return { owned: false, execution: structuredClone(existing) };
      }
      const record: ExecutionRecord = {
        ...structuredClone(row),
        state: "started",
        fencingToken: 1,
        neverSent: false,
        settleAttempts: 0,
        createdAtMicros: row.atMicros,
        updatedAtMicros: row.atMicros,
      };
      world.executions.set(row.id, record);
      return { owned: true, execution: structuredClone(record) };
    },
    async get(id) {
      const record = world.executions.get(id);
      return record ? structuredClone(record) : undefined;
    },
    async recordReceipt(id, outcome, fencingToken) {
      const record = world.executions.get(id);
      if (!record) throw new GatehouseError("not_found", `execution ${id} does not exist`);
      const allowed =
        record.fencingToken === fencingToken &&
        (record.state === "started" ||
          (record.state === "unknown" && (outcome.state === "succeeded" || outcome.state === "failed")));
      if (!allowed) return { recorded: false, execution: structuredClone(record) };
      record.state = outcome.state;
      record.updatedAtMicros = outcome.atMicros;
      if (outcome.receipt) record.receipt = outcome.receipt;
      if (outcome.errorKind) record.errorKind = outcome.errorKind;
      if (outcome.message) record.message = outcome.message;
      record.neverSent = outcome.state === "failed" && outcome.neverSent === true;
      if (outcome.state === "unknown" && outcome.nextSettleMicros !== undefined) {
        record.nextSettleMicros = outcome.nextSettleMicros;
      } else delete record.nextSettleMicros;
      delete record.finishAuditSeq;
      return { recorded: true, execution: structuredClone(record) };
    },
    async renewLease(id, fencingToken, leaseUntilMicros, nowMicros) {
      const record = world.executions.get(id);
      if (record?.state !== "started" || record.fencingToken !== fencingToken) return false;
      record.leaseUntilMicros = leaseUntilMicros;
      record.updatedAtMicros = nowMicros;
      return true;
    },
    async takeOverExpired(id, leaseUntilMicros, nowMicros) {
      const record = world.executions.get(id);
      if (record?.state !== "started" || record.leaseUntilMicros >= nowMicros) return undefined;
      record.leaseUntilMicros = leaseUntilMicros;
      record.updatedAtMicros = nowMicros;
      record.fencingToken++;
      return structuredClone(record);
    },
    async takeUnknownForSettling(id, leaseUntilMicros, nowMicros, nextSettleMicros) {
      const record = world.executions.get(id);
      if (!record || !dueForSettling(record, nowMicros)) return undefined;
      record.leaseUntilMicros = leaseUntilMicros;
      record.fencingToken++;
      record.settleAttempts++;
      if (nextSettleMicros !== undefined) record.nextSettleMicros = nextSettleMicros;
      else delete record.nextSettleMicros;
      return structuredClone(record);
    },
    async listUnsettled(nowMicros, limit) {
      return [...world.executions.values()]
        .filter((e) => dueForSettling(e, nowMicros))
        .sort((a, b) => (a.nextSettleMicros ?? 0) - (b.nextSettleMicros ?? 0))
        .slice(0, limit)
        .map((e) => structuredClone(e));
    },
    async listExpired(nowMicros, limit) {
      return [...world.executions.values()]
        .filter((e) => e.state === "started" && e.leaseUntilMicros < nowMicros)
        .sort((a, b) => a.leaseUntilMicros - b.leaseUntilMicros)
        .slice(0, limit)
        .map((e) => structuredClone(e));
    },
    async markFinishAudited(id, seq) {
      const record = world.executions.get(id);
      if (!record || record.state === "started" || record.finishAuditSeq !== undefined) return false;
      record.finishAuditSeq = seq;
      return true;
    },
    async listUnauditedFinishes(finishedBeforeMicros, limit) {
      return [...world.executions.values()]
        .filter(
          (e) =>
            e.state !== "started" &&
            e.finishAuditSeq === undefined &&
            e.updatedAtMicros < finishedBeforeMicros,
        )
        .sort((a, b) => a.updatedAtMicros - b.updatedAtMicros)
        .slice(0, limit)
        .map((e) => structuredClone(e));
    },
    async recordResolution(id, resolution) {
      const record = world.executions.get(id);
      if (!record) throw new GatehouseError("not_found", `execution ${id} does not exist`);
      if (record.state !== "unknown") return { recorded: false, execution: structuredClone(record) };
      record.state = resolution.state;
      record.message = resolution.message;
      record.resolution = { resolver: resolution.resolver, reason: resolution.reason };
      record.updatedAtMicros = resolution.atMicros;
      delete record.finishAuditSeq;
      delete record.nextSettleMicros;
      return { recorded: true, execution: structuredClone(record) };
    },
    async listUnknownWithoutApproval(sinceMicros, limit) {
      return [...world.executions.values()]
        .filter(
          (e) => e.state === "unknown" && e.approvalName === undefined && e.updatedAtMicros > sinceMicros,
        )
        .sort((a, b) => b.updatedAtMicros - a.updatedAtMicros)
        .slice(0, limit)
        .map((e) => structuredClone(e));
    },
    async findByAction(action) {
      return [...world.executions.values()]
        .filter(
          (e) =>
            e.session.uid === action.sessionUid &&
            e.capability === action.capability &&
            e.requestDigest === action.argumentsDigest,
        )
        .sort((a, b) => a.createdAtMicros - b.createdAtMicros) // stable: ties keep insertion order
        .map((e) => structuredClone(e));
    },
  };
  return executions;
}
