/**
 * The fault campaign's invariants: Gatehouse's guarantees, checked after each run from the sources of
 * truth — the business system's ledger (what it committed and which calls reached it), the audit chain
 * and its checkpoints in Postgres, the execution rows, and the Approvals as the API server holds them
 * — never from Gatehouse's own answers. Pure: the runner gathers {@link RunFacts}, this judges them.
 */

/** A committed effect in the business system's ledger. */
export interface EffectFact {
  capability: string;
  idempotencyKey: string;
  executionId: string;
  /** The business action: capability and arguments (one call of a run each). */
  action: string;
}

/** An invoke that reached the business system (committed or not). */
export interface CallFact {
  capability: string;
  idempotencyKey: string;
  executionId: string;
}

/** One audit record. `hash` is hex. */
export interface ChainRecordFact {
  seq: number;
  hash: string;
  kind: string;
  outcome: string | null;
  executionId: string | null;
  payload: Record<string, unknown>;
}

/** An execution row. `leaseUntilMs` is epoch milliseconds. */
export interface ExecutionFact {
  id: string;
  idempotencyKey: string;
  state: string;
  errorKind: string | null;
  leaseUntilMs: number;
}

/** An Approval as the API server holds it. */
export interface ApprovalFact {
  namespace: string;
  name: string;
  executionId: string;
  phase: string | undefined;
  decisions: Array<{ approver: string; verdict: string }>;
}

/** What `verifyAuditChain` reported with every stored checkpoint given. */
export interface ChainVerdict {
  ok: boolean;
  message: string;
  checkpoints: Array<{ seq: number; status: string; message: string }>;
}

/** Everything one run's check reads; `chain` is the run's records (the whole chain is in `verdict`). */
export interface RunFacts {
  effects: EffectFact[];
  calls: CallFact[];
  chain: ChainRecordFact[];
  executions: ExecutionFact[];
  approvals: ApprovalFact[];
  verdict: ChainVerdict;
  nowMs: number;
}

export type ViolationKind =
  | "duplicate-effect"
  | "execution-without-approval-record"
  | "decision-not-in-chain"
  | "request-without-end"
  | "executing-past-lease"
  | "failed-after-reaching-business"
  | "chain-broken";

export const VIOLATION_KINDS: readonly ViolationKind[] = [
  "duplicate-effect",
  "execution-without-approval-record",
  "decision-not-in-chain",
  "request-without-end",
  "executing-past-lease",
  "failed-after-reaching-business",
  "chain-broken",
];

export interface Violation {
  kind: ViolationKind;
  message: string;
}

/** The records that end an Approval (core/approval-lifecycle.ts END_KINDS). */
const END_KINDS = new Set([
  "approval.approved",
  "approval.rejected",
  "approval.expired",
  "approval.cancelled",
  "approval.stale",
  "approval.failed",
]);

/** Every invariant's violations in `facts`; empty when the run kept every guarantee. */
export function checkInvariants(facts: RunFacts): Violation[] {
  return [
    ...effectsOncePerKey(facts),
    ...approvedExecutionsNameTheirRecord(facts),
    ...decisionsInChain(facts),
    ...requestsEnd(facts),
    ...noExecutingPastLease(facts),
    ...noFailedAfterReachingBusiness(facts),
    ...chainVerifies(facts),
  ];
}

/**
 * Business effects per idempotency key ≤ 1, and per action ≤ 1: a business system deduplicates by
 * key, so an action sent twice under two keys shows only as two effects of one action.
 */
function effectsOncePerKey({ effects }: RunFacts): Violation[] {
  const groups = (by: (e: EffectFact) => string) => {
    const found = new Map<string, EffectFact[]>();
    for (const effect of effects) found.set(by(effect), [...(found.get(by(effect)) ?? []), effect]);
    return [...found].filter(([, list]) => list.length > 1);
  };
  return [
    ...groups((e) => e.idempotencyKey).map(([key, found]) => ({
      kind: "duplicate-effect" as const,
      message: `${found.length} effects of ${found[0]?.capability} under idempotency key ${key} (executions ${found.map((e) => e.executionId).join(", ")})`,
    })),
    ...groups((e) => e.action)
      .filter(([, found]) => new Set(found.map((e) => e.idempotencyKey)).size > 1)
      .map(([action, found]) => ({
        kind: "duplicate-effect" as const,
        message: `${found.length} effects of action ${action} under keys ${[...new Set(found.map((e) => e.idempotencyKey))].join(", ")}`,
      })),
  ];
}

/** Every `execution.started` of an approved call names its `approval.approved` record by seq and hash. */
function approvedExecutionsNameTheirRecord({ chain }: RunFacts): Violation[] {
  const bySeq = new Map(chain.map((r) => [r.seq, r]));
  return chain.flatMap((started) => {
    if (started.kind !== "execution.started" || started.payload.approval == null) return [];
    const named = started.payload.approvalRecord as { seq?: unknown; hash?: unknown } | undefined;
    const record = typeof named?.seq === "number" ? bySeq.get(named.seq) : undefined;
    const ok =
      record !== undefined &&
      record.kind === "approval.approved" &&
      record.hash === named?.hash &&
      record.executionId === started.executionId;
    return ok
      ? []
      : [
          {
            kind: "execution-without-approval-record" as const,
            message: `execution.started #${started.seq} of Approval ${String(started.payload.approval)} (execution ${started.executionId}) names ${named ? JSON.stringify(named) : "no record"}, not its approval.approved record`,
          },
        ];
  });
}

/** Every decision an Approval holds is in the chain (`approval.decided`, or ignored after its end). */
function decisionsInChain({ chain, approvals }: RunFacts): Violation[] {
  return approvals.flatMap((approval) =>
    approval.decisions.flatMap((decision, index) => {
      const recorded = chain.some(
        (r) =>
          (r.kind === "approval.decided" || r.kind === "approval.decision_ignored") &&
          r.executionId === approval.executionId &&
          r.payload.index === index &&
          r.payload.approver === decision.approver &&
          r.payload.verdict === decision.verdict,
      );
      return recorded
        ? []
        : [
            {
              kind: "decision-not-in-chain" as const,
              message: `decision ${index} of Approval ${approval.namespace}/${approval.name} (${decision.approver}: ${decision.verdict}) has no record in the chain`,
            },
          ];
    }),
  );
}

/** Every `approval.requested` has an end record. */
function requestsEnd({ chain }: RunFacts): Violation[] {
  return chain.flatMap((requested) => {
    if (requested.kind !== "approval.requested") return [];
    const ended = chain.some(
      (r) => r.seq > requested.seq && END_KINDS.has(r.kind) && r.executionId === requested.executionId,
    );
    return ended
      ? []
      : [
          {
            kind: "request-without-end" as const,
            message: `approval.requested #${requested.seq} (Approval ${String(requested.payload.approval)}, execution ${requested.executionId}) has no end record`,
          },
        ];
  });
}

/** No Approval is Executing while its execution's lease has ended (or with no execution row). */
function noExecutingPastLease({ approvals, executions, nowMs }: RunFacts): Violation[] {
  const byId = new Map(executions.map((e) => [e.id, e]));
  return approvals.flatMap((approval) => {
    if (approval.phase !== "Executing") return [];
    const execution = byId.get(approval.executionId);
    if (execution && execution.leaseUntilMs > nowMs) return [];
    return [
      {
        kind: "executing-past-lease" as const,
        message: execution
          ? `Approval ${approval.namespace}/${approval.name} is Executing ${Math.round(nowMs - execution.leaseUntilMs)} ms past its execution's lease (state ${execution.state})`
          : `Approval ${approval.namespace}/${approval.name} is Executing with no execution row ${approval.executionId}`,
      },
    ];
  });
}

/**
 * No execution is `failed` when its call reached the business system: only a call certainly never
 * sent may fail; a business refusal (`forbidden`, nothing committed) is the one final answer that did.
 */
function noFailedAfterReachingBusiness({ executions, calls, effects }: RunFacts): Violation[] {
  return executions.flatMap((execution) => {
    if (execution.state !== "failed") return [];
    const reached = calls.filter(
      (c) => c.idempotencyKey === execution.idempotencyKey || c.executionId === execution.id,
    );
    const committed = effects.some((e) => e.idempotencyKey === execution.idempotencyKey);
    if (reached.length === 0 || (execution.errorKind === "forbidden" && !committed)) return [];
    return [
      {
        kind: "failed-after-reaching-business" as const,
        message: `execution ${execution.id} is failed (${execution.errorKind}) but ${reached.length} call(s) reached the business system${committed ? ", which committed it" : ""}`,
      },
    ];
  });
}

/** The chain verifies, and agrees with every checkpoint. */
function chainVerifies({ verdict }: RunFacts): Violation[] {
  const disagreeing = verdict.checkpoints.filter((c) => c.status !== "ok");
  if (verdict.ok && disagreeing.length === 0) return [];
  return [
    {
      kind: "chain-broken",
      message: [verdict.message, ...disagreeing.map((c) => `checkpoint ${c.seq}: ${c.status} ${c.message}`)]
        .filter((line) => line !== "")
        .join("; "),
    },
  ];
}
