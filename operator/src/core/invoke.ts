/**
 * Core.invoke: one tool call from an agent, decided and (maybe) executed — DESIGN §4 steps 2–10.
 *
 * How to call it (gateway, `POST /v1/invoke`):
 *
 *   const deps: CoreDeps = { clock, catalog, identities, approvals, executions, budget, providers,
 *                            audit, logger, config: defaultCoreConfig };
 *   // after TokenReview (step 1) has authenticated the pod and found its session:
 *   const { answer } = await invoke(deps, session, call);   // call: InvokeCall (zod-parsed)
 *   // reply 200 with `answer` (an InvokeAnswer). Core counts the session's limits itself (`deps.budget`).
 *   // A thrown error is a dependency failure (Postgres, API server): reply 5xx; the agent may repeat
 *   // the call — the execution identity makes the repeat safe.
 *
 * How to dispatch an Approved Approval (approval controller):
 *
 *   const result = await executeApproved(deps, { approval, session });  // session undefined if gone
 *   // result.kind "executed" → write status.execution from result.execution, phase from its state;
 *   // "refused" → phase result.phase (Stale | Expired | Rejected | Failed…) with reason result.reason.
 *
 * Postgres-backed ports: `createPostgresExecutionStore(pool)`, `createPostgresBudgetLedger(pool)` and
 * `createPostgresAuditLog(pool)` from `operator/src/store/`. Kubernetes-backed ports (catalog,
 * approvals, identities) and the HTTP `ProviderClient` belong to `kube/` / `gateway/`.
 */

import type { InvokeCall } from "../api/agent-protocol.ts";
import { MAX_APPROVAL_ARGUMENTS_LENGTH } from "../api/approval.ts";
import { ReproposalRule, ToolCallReason } from "../api/status/tool-call.ts";
import { deniedAnswer, invalidArgumentsAnswer, pendingApprovalAnswer } from "./answer.ts";
import { approvalRequestOf, describeApprovers } from "./approval-request.ts";
import { checkArguments } from "./arguments.ts";
import { AuditKind } from "./audit.ts";
import { type JsonObject, sha256Hex } from "./canonical.ts";
import { isGatehouseError } from "./errors.ts";
import { execute } from "./execute.ts";
import { actionKeyOf, executionIdentity } from "./execution-identity.ts";
import { failpointSite } from "./failpoints.ts";
import {
  answerConcurrentProposal,
  answerOfExistingApproval,
  answerRepeat,
  answerReproposal,
  conflict,
  type InvokeResult,
  withResolutionApproval,
} from "./invoke-answers.ts";
import { auditor, identityDigestOf, settleBudget, unstorableField } from "./invoke-records.ts";
import { decidePolicy, limitDecision } from "./policy.ts";
import type { CoreDeps, SessionContext } from "./ports.ts";
import {
  checksReproposals,
  classifyReproposal,
  previouslyFailedMessage,
  type Reproposal,
} from "./reproposal.ts";
import { capabilityIdOf } from "./tool-names.ts";

const BEFORE_DECISION = failpointSite("invoke.before-decision");
const AFTER_DECISION = failpointSite("invoke.after-decision");
const BEFORE_APPROVAL_CREATE = failpointSite("invoke.before-approval-create");
const AFTER_APPROVAL_CREATE = failpointSite("invoke.after-approval-create");

export { executeApproved } from "./execute-approved.ts";
export { answerOfExecution, type InvokeResult } from "./invoke-answers.ts";
export { defaultCoreConfig } from "./ports.ts";

/**
 * Decides and, when allowed, executes one tool call (DESIGN §4 steps 2–10, in that order):
 *  2. execution identity; an existing execution or Approval for it → its state, nothing new (a
 *     repeat of a call still executing waits for its outcome, or for its Approval when it has one);
 *  3. resolve the tool to a visible, enabled, ready Capability;
 *  4. strict I-JSON + schema validation → `invalid_arguments` (audited, nothing else);
 *  4b. a write proposed again identically (same session, capability, arguments; any turn) is decided
 *     by the earlier one (core/reproposal.ts): unsettled → answered from it, open Approval → wait on
 *     it, failed for good → refused, never sent → runs again under the same idempotency key; a read
 *     or draft is, by its approved predecessors, once step 6 finds it needs approval;
 *  5. identity binding when the provider requires it;
 *  6. policy (strictest rule wins; maxTurns; a rejected identical action is refused), then the
 *     session's budget: a tool call, and a write for a write capability, reserved in the ledger before
 *     anything is approved or executed — released again when the call consumes nothing;
 *  7. Required → Approval created (or our own recognised) → `pending_approval`;
 *  8. Auto → claim, call the provider, record the receipt;
 *  9. every decision and outcome is audited; 10. the answer (results truncated to `maxResultBytes`).
 * The arguments are parsed before step 2 — a pure computation — because the identity includes their
 * canonical digest; text that does not parse is identified by the digest of its raw bytes. Before
 * step 2, a `callId` or `tool` holding U+0000 is refused as `invalid_arguments`: Postgres cannot
 * store it as sent.
 * Errors: throws only when a dependency fails (Postgres, API server, audit); never for a bad call.
 */
export async function invoke(
  deps: CoreDeps,
  session: SessionContext,
  call: InvokeCall,
): Promise<InvokeResult> {
  const startedMicros = deps.clock.nowMicros();
  const result = await decide(deps, session, call);
  deps.metrics?.invoked(result.decision, (deps.clock.nowMicros() - startedMicros) / 1000);
  return result;
}

async function decide(deps: CoreDeps, session: SessionContext, call: InvokeCall): Promise<InvokeResult> {
  const capabilityId = capabilityIdOf(call.tool);
  const identity = executionIdentity({
    sessionUid: session.uid,
    turn: call.turn,
    position: call.position,
    capability: capabilityId,
    argumentsDigest: identityDigestOf(call.arguments),
  });
  const audit = auditor(deps, session, identity.executionId);
  const deny = async (
    reason: string,
    message: string,
    errorKind: Parameters<typeof deniedAnswer>[1],
    extra: JsonObject = {},
  ) => {
    await audit(AuditKind.denied, "failure", { tool: call.tool, reason, message, ...extra });
    return {
      answer: deniedAnswer(message, errorKind, identity.executionId),
      decision: "denied" as const,
    };
  };
  const refuseArguments = async (problem: string, message: string, extra: JsonObject) => {
    await audit(AuditKind.invalidArguments, "failure", { problem, message, ...extra });
    return { answer: invalidArgumentsAnswer(message), decision: "invalid_arguments" as const };
  };

  const unstorable = unstorableField(call);
  if (unstorable) {
    return refuseArguments(
      "nul_character",
      `${unstorable} contains U+0000 (NUL), which cannot be stored; send it without that character`,
      // The tool name is recorded readable: U+0000 would make the payload unreadable as jsonb.
      { tool: call.tool.replaceAll("\u0000", "\uFFFD"), field: unstorable },
    );
  }

  // 2. Identity: a repeated call returns the state of the first one.
  const existing = await deps.executions.get(identity.executionId);
  const approval =
    existing?.state === "started" || !existing
      ? await deps.approvals.get(session.namespace, identity.approvalName, session.uid)
      : undefined;
  const ours =
    approval?.ownedBySession === true &&
    approval.identity.executionId === identity.executionId &&
    approval.identity.sessionUid === session.uid &&
    approval.identity.capabilityId === capabilityId &&
    approval.identity.argumentsDigest === identityDigestOf(call.arguments);
  // An approved call being dispatched right now (a resumed pod re-invoking it while the approval
  // controller executes it) is answered from its Approval: pending until the receipt is recorded, so
  // the agent waits for the outcome instead of taking "being executed" as the call's result.
  if (existing && !(existing.state === "started" && ours)) {
    return answerRepeat(deps, call, existing, audit);
  }
  if (approval) {
    if (!ours) return conflict(deps, session, identity, call.tool, approval, audit);
    await audit(AuditKind.repeated, "success", {
      tool: call.tool,
      approval: approval.name,
      phase: approval.phase,
    });
    return {
      answer: await answerOfExistingApproval(deps, approval, identity),
      decision: "repeated",
    };
  }

  // 3. Resolve.
  if (!session.active) {
    return deny(
      ToolCallReason.SessionInactive,
      "this session is finished or cancelled; no more tool calls run",
      "forbidden",
    );
  }
  const capability = await deps.catalog.resolve(session.namespace, call.tool);
  if (!capability || (session.capabilities && !session.capabilities.includes(capability.name))) {
    return deny(
      ToolCallReason.UnknownTool,
      `there is no tool named ${JSON.stringify(call.tool)} available to this session`,
      "not_found",
    );
  }
  if (capability.disabled) {
    return deny(ToolCallReason.Disabled, `${capability.id} is disabled by the platform team`, "unavailable");
  }
  if (!capability.ready || !capability.providerReady) {
    // A Capability that is not Ready refuses the call with its own Ready reason, when it has one.
    const why = !capability.ready
      ? (capability.notReadyReason ?? ToolCallReason.NotReady)
      : ToolCallReason.ProviderNotReady;
    return deny(
      why,
      `${capability.id} is not available right now (${why}); try later or use another tool`,
      "unavailable",
    );
  }

  // 4. Parse and validate.
  const checked = checkArguments(call.arguments, capability.inputSchema);
  if (!checked.ok) {
    if (checked.problem.class === "invalid_schema") {
      return deny(ToolCallReason.InvalidSchema, checked.problem.message, "unavailable");
    }
    await audit(AuditKind.invalidArguments, "failure", {
      tool: call.tool,
      capability: capability.id,
      problem: checked.problem.class,
      message: checked.problem.message,
      rawDigest: sha256Hex(call.arguments),
    });
    return {
      answer: invalidArgumentsAnswer(checked.problem.message),
      decision: "invalid_arguments",
    };
  }
  const digest = checked.digest;
  const facts: JsonObject = { capability: capability.id, argumentsDigest: digest };

  // 4b. Re-proposals: an identical earlier write decides (core/reproposal.ts); a read or draft that
  // needs approval is decided by what people approved of it, once its policy says so (step 6).
  const answerEarlier = async (earlier: Reproposal): Promise<InvokeResult | undefined> => {
    if (earlier.kind === "failed") {
      return deny(ToolCallReason.PreviouslyFailed, previouslyFailedMessage(earlier.execution), "forbidden", {
        ...facts,
        earlierExecution: earlier.execution.id,
      });
    }
    if (earlier.kind === "unsettled" && earlier.execution.id === identity.executionId) {
      // This very call, claimed by a concurrent copy of it after step 2 looked: a repeat of it, which
      // waits for its outcome — not a re-proposal answered "unknown".
      return answerRepeat(deps, call, earlier.execution, audit);
    }
    if (earlier.kind === "new" || earlier.kind === "rerun") return undefined;
    const effect = String(capability.effect);
    return answerReproposal(call, earlier, facts, audit, deps.config.maxResultBytes, effect);
  };
  const earlier = await classifyReproposal(deps, session, capability, digest);
  const answeredByEarlier = await answerEarlier(earlier);
  if (answeredByEarlier) return answeredByEarlier;
  // A write runs under its action's key, so identical proposals racing each other claim one row; a
  // never-sent failure runs again under its own key (rows claimed before action keys have theirs).
  const idempotencyKey =
    earlier.kind === "rerun"
      ? earlier.idempotencyKey
      : checksReproposals(capability)
        ? actionKeyOf({ sessionUid: session.uid, capability: capability.id, argumentsDigest: digest })
        : identity.idempotencyKey;
  if (earlier.kind === "rerun") {
    await audit(AuditKind.reproposed, "pending", {
      ...facts,
      tool: call.tool,
      rule: ReproposalRule.NeverSent,
      earlierExecution: earlier.execution.id,
      idempotencyKey,
    });
  }

  // 5. Identity binding.
  let account: string | undefined;
  if (capability.requiresIdentity) {
    const binding = await deps.identities.resolve(capability.providerRef, session.subject);
    if (!binding.bound) {
      return deny(
        ToolCallReason.IdentityUnbound,
        `${session.subject.user} has no account in the business system: ${binding.reason}`,
        "forbidden",
        facts,
      );
    }
    account = binding.account;
  }

  // 6. Policy.
  deps.failpoint?.(BEFORE_DECISION);
  const decision = decidePolicy({
    capability,
    subject: session.subject,
    turn: call.turn,
    limits: session.limits,
    ...(deps.config.approvalFloor ? { floor: deps.config.approvalFloor } : {}),
  });
  if (decision.verdict === "deny") return deny(decision.reason, decision.message, "forbidden", facts);
  const rejected = await deps.approvals.findRejected({
    namespace: session.namespace,
    sessionUid: session.uid,
    capability: capability.name,
    argumentsDigest: digest,
  });
  if (rejected) {
    return deny(
      ToolCallReason.PreviouslyRejected,
      `this exact action was rejected before (Approval ${rejected.name}); do not propose it again unchanged`,
      "forbidden",
      { ...facts, rejectedApproval: rejected.name },
    );
  }
  if (decision.verdict === "approval" && !checksReproposals(capability)) {
    // A read or draft that needs approval: what a person approved of it answers (core/reproposal.ts).
    const approved = await classifyReproposal(deps, session, capability, digest, "approved");
    const answered = await answerEarlier(approved);
    if (answered) return answered;
  }
  if (decision.verdict === "approval" && checked.canonical.length > MAX_APPROVAL_ARGUMENTS_LENGTH) {
    // An Approval carries the arguments in its spec, which holds at most this many characters.
    return refuseArguments(
      "too_large_for_approval",
      `the arguments are ${checked.canonical.length} characters as canonical JSON; a call that needs approval may have at most ${MAX_APPROVAL_ARGUMENTS_LENGTH}, so send less or split the change`,
      { tool: call.tool, ...facts },
    );
  }
  const reservation = await deps.budget.reserve({
    sessionUid: session.uid,
    executionId: identity.executionId,
    write: String(capability.effect) === "write",
    limits: session.limits,
    atMicros: deps.clock.nowMicros(),
  });
  if (reservation.kind === "exceeded") {
    const limit = limitDecision(reservation.resource, reservation.limit);
    return deny(limit.reason, limit.message, "forbidden", facts);
  }
  deps.failpoint?.(AFTER_DECISION);

  // 7. Approval.
  if (decision.verdict === "approval") {
    const request = approvalRequestOf(deps, session, identity, capability, checked.canonical, digest);
    if (idempotencyKey !== identity.idempotencyKey) request.idempotencyKey = idempotencyKey;
    deps.failpoint?.(BEFORE_APPROVAL_CREATE);
    const handle = await deps.approvals.createOrGet(request);
    deps.failpoint?.(AFTER_APPROVAL_CREATE);
    if (!handle.ownedBySession || !handle.sameSpec) {
      await deps.budget.release(identity.executionId, deps.clock.nowMicros());
      return conflict(deps, session, identity, call.tool, handle, audit);
    }
    // Handed to approvers: it counts whatever they decide, so proposing more writes than allowed is
    // refused before anyone approves them.
    await deps.budget.consume(identity.executionId, deps.clock.nowMicros());
    await audit(AuditKind.approvalRequested, "pending", {
      ...facts,
      approval: handle.name,
      ...(handle.uid ? { approvalUid: handle.uid } : {}),
      approvers: { users: request.approvers.users, groups: request.approvers.groups },
      requiredApprovals: request.requiredApprovals,
      expiresAt: request.expiresAt,
    });
    const message =
      `${capability.id} needs approval: Approval ${handle.name} is waiting for ` +
      `${describeApprovers(request)}. Wait for the decision; do not repeat the call.`;
    return {
      answer: pendingApprovalAnswer(handle.name, identity.executionId, message),
      decision: "approval",
    };
  }

  // 8–10. Execute, audit, answer.
  let result: Awaited<ReturnType<typeof execute>>;
  try {
    result = await execute(deps, {
      executionId: identity.executionId,
      idempotencyKey,
      session: { uid: session.uid, namespace: session.namespace, name: session.name },
      subject: session.subject,
      ...(account !== undefined ? { account } : {}),
      capability,
      argumentsCanonical: checked.canonical,
      argumentsDigest: digest,
      actor: session.subject.user,
    });
  } catch (error) {
    const sharedKey = idempotencyKey !== identity.idempotencyKey;
    if (!sharedKey || !isGatehouseError(error) || error.kind !== "conflict") throw error;
    // An identical proposal ran at the same time and took the action's key first: this one is
    // answered by that run, as a repeat of it — never sent a second time.
    return answerConcurrentProposal(
      deps,
      session,
      identity.executionId,
      capability.id,
      digest,
      idempotencyKey,
      {
        ...facts,
        tool: call.tool,
      },
      audit,
    );
  }
  await settleBudget(deps, result.execution);
  return {
    answer: await withResolutionApproval(deps, result.execution, result.answer),
    decision: result.executedNow ? "allowed" : "repeated",
  };
}
