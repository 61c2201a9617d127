/**
 * Small in-memory implementations of Core's ports, for unit tests of Core and of its callers
 * (gateway, controllers). They follow the ports' contracts — claim is exactly-once, recordReceipt
 * obeys the allowed transitions, Approvals are owned by the session that created them — without
 * Postgres or an API server.
 */
import type { InvokeRequest, Subject } from "@gatehouse/provider-sdk";
import { assertEncodable } from "./audit.ts";
import { canonicalJson, type JsonObject, sha256Hex } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import type {
  ApprovalDecision,
  ApprovalHandle,
  ApprovalPhase,
  ApprovalPort,
  ApprovalRequest,
  AuditEntry,
  BudgetLedger,
  BudgetResource,
  CapabilityCatalog,
  CoreConfig,
  CoreDeps,
  DecisionRulesVerdict,
  ExecutionRecord,
  ExecutionStore,
  IdentityBinding,
  ProviderCallOutcome,
  ProviderRef,
  ProviderStatusOutcome,
  ProviderTargetOutcome,
  ResolvedCapability,
  SessionContext,
} from "./ports.ts";

/** A stored Approval: the request, its owner (session uid), decisions and phase. */
export interface StoredApproval {
  request: ApprovalRequest;
  ownerUid: string;
  decisions: ApprovalDecision[];
  phase: ApprovalPhase;
  conflictMessage?: string;
}

/** One reservation of a session's budget, as the Postgres ledger stores it. */
export interface StoredReservation {
  sessionUid: string;
  executionId: string;
  resource: BudgetResource;
  state: "reserved" | "consumed" | "released";
  reservedAtMicros: number;
  settledAtMicros?: number;
}

/** One provider call as the fake provider saw it. */
export interface ProviderCall {
  provider: ProviderRef;
  request: InvokeRequest;
  deadlineMs: number;
}

/** The fakes and what they recorded. Mutate `capabilities`, `bindings`, `providerBehaviour` freely. */
export interface InMemoryWorld {
  deps: CoreDeps;
  now: { micros: number };
  capabilities: ResolvedCapability[];
  /** user → account; a missing user is unbound. */
  bindings: Map<string, string>;
  executions: Map<string, ExecutionRecord>;
  approvals: Map<string, StoredApproval>;
  /** The budget ledger's reservations, in the order they were first made. */
  reservations: StoredReservation[];
  audit: AuditEntry[];
  /** Decides whether appending `entry` fails (default: never), e.g. to lose one `execution.finished`. */
  auditFails: (entry: AuditEntry) => boolean;
  providerCalls: ProviderCall[];
  statusCalls: string[];
  /** How often Core waited on the timer (each wait advances `now` by its milliseconds). */
  sleeps: number;
  /** What the provider does with a call; default: succeed with `{ ok: true }`. */
  providerBehaviour: (call: ProviderCall) => ProviderCallOutcome | Promise<ProviderCallOutcome>;
  /** What the status endpoint says; default: not found. */
  statusBehaviour: (idempotencyKey: string) => ProviderStatusOutcome;
  /** Current versions of business objects by `kind/id` (absent → not found). */
  targetVersions: Map<string, string>;
}

/** The decision rules as verified enforced by admission. */
export const RULES_ENFORCED: DecisionRulesVerdict = { enforced: true };

/** Test configuration: short deadlines, 2 attempts, 1 KiB results, 1 h approvals, a minute's request grace. */
export const testCoreConfig: CoreConfig = {
  providerDeadlineMs: 1_000,
  maxProviderAttempts: 2,
  leaseGraceMs: 1_000,
  maxResultBytes: 1_024,
  approvalTtlSeconds: 3_600,
  requestRecordGraceMs: 60_000,
};

/** alice's active session s1 in plant-a (group planners), with room for calls and writes. */
export const TEST_SESSION: SessionContext = {
  namespace: "plant-a",
  name: "s1",
  uid: "uid-1",
  subject: { user: "alice", groups: ["planners"] },
  limits: { maxTurns: 20, maxToolCalls: 50, maxWrites: 10 },
  active: true,
};

/** A ready, enabled capability with sensible defaults, overridable field by field. */
export function testCapability(overrides: Partial<ResolvedCapability> = {}): ResolvedCapability {
  const id = overrides.id ?? "aps.schedule.read";
  return {
    name: id.replaceAll(".", "-"),
    namespace: "plant-a",
    id,
    toolName: id.replaceAll(".", "_"),
    effect: "read",
    mode: "sync",
    idempotency: "key",
    policy: {},
    inputSchema: { type: "object", properties: { planId: { type: "string" } }, additionalProperties: false },
    schemaDigest: "a".repeat(64),
    providerRef: { namespace: "plant-a", name: "aps" },
    requiresIdentity: false,
    ready: true,
    providerReady: true,
    disabled: false,
    ...overrides,
  };
}

function dueForSettling(record: ExecutionRecord, nowMicros: number): boolean {
  return (
    record.state === "unknown" &&
    record.nextSettleMicros !== undefined &&
    record.nextSettleMicros < nowMicros &&
    record.leaseUntilMicros < nowMicros
  );
}

/** Builds the in-memory world. `startMicros` is the clock's start (it only moves when a test moves it). */
export function createInMemoryWorld(
  options: { config?: Partial<CoreConfig>; startMicros?: number } = {},
): InMemoryWorld {
  const world: InMemoryWorld = {
    deps: undefined as unknown as CoreDeps,
    now: { micros: options.startMicros ?? 1_700_000_000_000_000 },
    capabilities: [],
    bindings: new Map(),
    executions: new Map(),
    approvals: new Map(),
    reservations: [],
    audit: [],
    auditFails: () => false,
    providerCalls: [],
    statusCalls: [],
    sleeps: 0,
    targetVersions: new Map(),
    providerBehaviour: () => ({ kind: "answered", response: { status: "succeeded", result: { ok: true } } }),
    statusBehaviour: (idempotencyKey) => ({
      kind: "answered",
      status: { idempotencyKey, status: "not_found" },
    }),
  };

  const catalog: CapabilityCatalog = {
    async resolve(namespace, toolName) {
      return world.capabilities.find((c) => c.namespace === namespace && c.toolName === toolName);
    },
    async get(namespace, name) {
      return world.capabilities.find((c) => c.namespace === namespace && c.name === name);
    },
  };

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

  const handle = (stored: StoredApproval, sessionUid: string, request?: ApprovalRequest): ApprovalHandle => ({
    name: stored.request.name,
    // As kube/approvals.ts reads it: an Auto record not yet marked is Unknown.
    phase: stored.phase === "Pending" && stored.request.autoExecution ? "Unknown" : stored.phase,
    ownedBySession: stored.ownerUid === sessionUid,
    sameSpec: request ? JSON.stringify(stored.request) === JSON.stringify(request) : true,
    identity: {
      executionId: stored.request.executionId,
      capabilityId: stored.request.capabilityId,
      argumentsDigest: stored.request.argumentsDigest,
      sessionUid: stored.request.sessionRef.uid,
    },
    decisions: structuredClone(stored.decisions),
    conditionMessage: stored.conflictMessage,
  });
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  const approvals: ApprovalPort = {
    async get(namespace, name, sessionUid) {
      const stored = world.approvals.get(key(namespace, name));
      return stored ? handle(stored, sessionUid) : undefined;
    },
    async createOrGet(request) {
      const k = key(request.namespace, request.name);
      let stored = world.approvals.get(k);
      if (!stored) {
        stored = {
          request: structuredClone(request),
          ownerUid: request.sessionRef.uid,
          decisions: [],
          phase: "Pending",
        };
        world.approvals.set(k, stored);
      }
      return handle(stored, request.sessionRef.uid, request);
    },
    async findRejected(query) {
      const match = [...world.approvals.values()].find(
        (a) =>
          a.request.namespace === query.namespace &&
          a.request.sessionRef.uid === query.sessionUid &&
          a.request.capability === query.capability &&
          a.request.argumentsDigest === query.argumentsDigest &&
          a.phase === "Rejected",
      );
      return match ? { name: match.request.name } : undefined;
    },
    async createOrGetRecord(request) {
      const k = key(request.namespace, request.name);
      const existing = world.approvals.get(k);
      if (existing) return { handle: handle(existing, request.sessionRef.uid, request), created: false };
      // Phase-less, as the API server creates it: the approval reconciler moves it to Unknown.
      const stored: StoredApproval = {
        request: structuredClone(request),
        ownerUid: request.sessionRef.uid,
        decisions: [],
        phase: "Pending",
      };
      world.approvals.set(k, stored);
      return { handle: handle(stored, request.sessionRef.uid, request), created: true };
    },
    async findByAction(query) {
      return [...world.approvals.values()]
        .filter(
          (a) =>
            a.request.namespace === query.namespace &&
            a.request.sessionRef.uid === query.sessionUid &&
            a.request.capability === query.capability &&
            a.request.argumentsDigest === query.argumentsDigest,
        )
        .map((a) => handle(a, query.sessionUid));
    },
  };

  const silent = () => {};
  world.deps = {
    clock: { nowMicros: () => world.now.micros },
    timer: {
      // Simulated time: advance the clock, then let other work (a held provider call) run.
      async sleep(ms) {
        world.sleeps += 1;
        world.now.micros += ms * 1000;
        await new Promise((resolve) => setImmediate(resolve));
      },
    },
    catalog,
    identities: {
      async resolve(_provider: ProviderRef, subject: Subject): Promise<IdentityBinding> {
        const account = world.bindings.get(subject.user);
        return account ? { bound: true, account } : { bound: false, reason: `${subject.user} is not bound` };
      },
    },
    approvals,
    executions,
    budget: inMemoryBudgetLedger(world.reservations),
    providers: {
      async invoke(provider, request, { deadlineMs }) {
        const call = { provider, request: structuredClone(request), deadlineMs };
        world.providerCalls.push(call);
        return world.providerBehaviour(call);
      },
      async status(_provider, idempotencyKey) {
        world.statusCalls.push(idempotencyKey);
        return world.statusBehaviour(idempotencyKey);
      },
      async target(_provider, { kind, id }): Promise<ProviderTargetOutcome> {
        const version = world.targetVersions.get(`${kind}/${id}`);
        return version === undefined
          ? { kind: "not_found", message: `there is no ${kind} ${id}` }
          : { kind: "answered", version };
      },
    },
    audit: {
      async append(entry) {
        assertEncodable(entry); // as the Postgres log does before it queues an entry
        if (world.auditFails(entry)) throw new GatehouseError("unavailable", "the audit log is unavailable");
        world.audit.push(structuredClone(entry));
        return sealed(world.audit.length - 1);
      },
      async appendAll(entries) {
        // One transaction: all or nothing.
        if (entries.some((entry) => world.auditFails(entry))) {
          throw new GatehouseError("unavailable", "the audit log is unavailable");
        }
        const appended = [];
        for (const entry of entries) appended.push(await world.deps.audit.append(entry));
        return appended;
      },
      async recordsOf(executionId) {
        return world.audit.flatMap((entry, index) =>
          entry.executionId === executionId ? [{ ...structuredClone(entry), ...sealed(index) }] : [],
        );
      },
      async recentOfKind(kind, sinceMicros, limit) {
        return world.audit
          .flatMap((entry, index) =>
            entry.kind === kind && entry.atMicros >= sinceMicros
              ? [{ ...structuredClone(entry), ...sealed(index) }]
              : [],
          )
          .reverse()
          .slice(0, limit);
      },
    },
    logger: { info: silent, warn: silent, error: silent },
    config: { ...testCoreConfig, ...options.config },
  };
  // The chain position of world.audit[index]: a stand-in hash that differs per record, for references.
  const sealed = (index: number) => ({
    seq: index + 1,
    hash: sha256Hex(`${index}:${canonicalJson(world.audit[index] as unknown as JsonObject)}`),
  });
  return world;
}

/**
 * A budget ledger over `rows`, with the Postgres ledger's rules (`store/budget-ledger.ts`). Atomic
 * because nothing between its count and its insert awaits.
 */
export function inMemoryBudgetLedger(rows: StoredReservation[]): BudgetLedger {
  const counting = (row: StoredReservation) => row.state !== "released";
  return {
    async reserve({ sessionUid, executionId, write, limits, atMicros }) {
      const wanted: Array<[BudgetResource, number]> = [["tool_call", limits.maxToolCalls]];
      if (write) wanted.push(["write", limits.maxWrites]);
      const mine = (resource: BudgetResource) =>
        rows.find((r) => r.executionId === executionId && r.resource === resource);
      for (const [resource, limit] of wanted) {
        if (mine(resource) && counting(mine(resource)!)) continue;
        const used = rows.filter(
          (r) => r.sessionUid === sessionUid && r.resource === resource && counting(r),
        );
        if (used.length >= limit) return { kind: "exceeded", resource, limit };
      }
      for (const [resource] of wanted) {
        const row = mine(resource);
        if (!row)
          rows.push({ sessionUid, executionId, resource, state: "reserved", reservedAtMicros: atMicros });
        else if (!counting(row)) {
          row.state = "reserved";
          row.reservedAtMicros = atMicros;
          delete row.settledAtMicros;
        }
      }
      return { kind: "reserved" };
    },
    async consume(executionId, atMicros) {
      for (const row of rows) {
        if (row.executionId === executionId && row.state === "reserved") {
          row.state = "consumed";
          row.settledAtMicros = atMicros;
        }
      }
    },
    async release(executionId, atMicros, resource) {
      for (const row of rows) {
        if (row.executionId !== executionId || row.state !== "reserved") continue;
        if (resource !== undefined && row.resource !== resource) continue;
        row.state = "released";
        row.settledAtMicros = atMicros;
      }
    },
  };
}

/** The payloads of audit entries of `kind`, in order. */
export function auditPayloads(world: InMemoryWorld, kind: string): JsonObject[] {
  return world.audit.filter((e) => e.kind === kind).map((e) => e.payload);
}
