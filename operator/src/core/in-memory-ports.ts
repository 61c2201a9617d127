/**
 * Small in-memory implementations of Core's ports, for unit tests of Core and of its callers
 * (gateway, controllers). They follow the ports' contracts — claim is exactly-once, recordReceipt
 * obeys the allowed transitions, Approvals are owned by the session that created them — without
 * Postgres or an API server.
 */
import type { Subject } from "@gatehouse/provider-sdk";
import { assertEncodable } from "./audit.ts";
import { canonicalJson, type JsonObject, sha256Hex } from "./canonical.ts";
import { GatehouseError } from "./errors.ts";
import { inMemoryApprovalPort } from "./in-memory-approvals.ts";
import { inMemoryExecutionStore } from "./in-memory-executions.ts";
import type { InMemoryWorld, StoredReservation } from "./in-memory-world.ts";
import type {
  BudgetLedger,
  BudgetResource,
  CapabilityCatalog,
  CoreConfig,
  CoreDeps,
  DecisionRulesVerdict,
  IdentityBinding,
  ProviderRef,
  ProviderTargetOutcome,
  ResolvedCapability,
  SessionContext,
} from "./ports.ts";

export type { InMemoryWorld, ProviderCall, StoredApproval, StoredReservation } from "./in-memory-world.ts";

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

  const executions = inMemoryExecutionStore(world);
  const approvals = inMemoryApprovalPort(world);

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
