/**
 * The reasons of an Approval's conditions (approval.ts holds the rest of its words): how it was
 * decided, how its dispatch went, and why an approved call did not run. A refusal at dispatch for a
 * reason a tool call is refused for too has the same word and meaning (tool-call.ts).
 */
import { TOOL_CALL_REASONS } from "./tool-call.ts";
import type { Reason } from "./words.ts";

const STALE = "Executed=False (phase Stale)";

export const APPROVAL_REASONS = {
  AwaitingDecision: {
    where: "Decided=False",
    means: "Waiting for approvers; the message counts approvals against `requiredApprovals`.",
  },
  Approved: { where: "Decided=True", means: "Enough approvals; the call is dispatched." },
  Rejected: {
    where: "Decided=True; Executed=False; Event (Normal)",
    means:
      "An approver rejected it; nothing runs and the agent hears the reason. An identical proposal is refused (`PreviouslyRejected`).",
  },
  Expired: {
    where: "Decided=True; Executed=False; Event (Warning)",
    means:
      "No decision before `spec.expiresAt` (the Capability's `policy.ttlSeconds`), or it expired before dispatch. Nothing runs; raise `ttlSeconds` if approvers need longer.",
  },
  SessionEnded: {
    where: "Decided=True (phase Cancelled)",
    means:
      "The session that proposed the call was deleted, cancelled or ended; nobody waits for the decision.",
  },
  ApprovalDeleted: {
    where: "Decided=True (phase Cancelled)",
    means:
      "The Approval was deleted (with its session or namespace) before it was decided, or before its approved call started; the operator recorded its decisions and this end in the audit chain before letting it go (finalizer `gatehouse.dev/audit-lifecycle`).",
  },
  RequesterMismatch: {
    where: "Decided=True (phase Failed); Event (Warning)",
    means:
      "The Approval names a requester who is not its session's subject: Gatehouse never proposed it (someone with the gateway's credentials made it up). It never runs, and its end is in the audit chain. Find out who created it (API audit log) and rotate the gateway's credentials.",
  },
  RequestNotRecorded: {
    where: "Executed=False (phase Failed; Approved while it waits)",
    means:
      "The audit chain holds no `approval.requested` for the Approval's execution, capability and arguments: no tool call asked for it (it was made or edited with the gateway's Kubernetes credentials, say). It never runs; its dispatch end is in the audit chain. One younger than `APPROVAL_REQUEST_GRACE_MS` (a minute by default) waits for the record. Find out who created it (API audit log).",
  },
  DecisionRulesNotEnforced: {
    where: "DecisionRulesEnforced=False (and Decided=False while Pending); Executed=False",
    means:
      "The API server is not verified to enforce the decision rules (a Gatehouse admission policy or binding is missing or differs from what the chart renders; the message says which). No decision counts and nothing runs; decisions observed meanwhile never count. Reinstall the chart's policies.",
  },
  Enforced: {
    where: "DecisionRulesEnforced=True",
    means: "The decision rules are enforced again (shown only on Approvals that were once not enforced).",
  },
  DatabaseUnavailable: {
    where: "Executed=False (Pending, Approved, Executing)",
    means:
      "The operator's Postgres does not answer (refused, shut down, timed out): the Approval's decisions and approved call wait, and both components' `/readyz` say `\"database\": false`. Bring the database back: work resumes within seconds (retries are capped at 2 s) and the condition clears.",
  },
  NotApproved: {
    where: "Executed=False (phase Pending)",
    means:
      "At dispatch the decisions no longer add up to Approved (e.g. a decision that does not count); it stays Pending.",
  },
  Executing: {
    where: "Executed=False",
    means: "The provider call is running or its outcome is being recovered; it settles by itself.",
  },
  Succeeded: {
    where: "Executed=True",
    means: "Executed once; `status.execution` has the receipt summary.",
  },
  Failed: {
    where: "Executed=True",
    means:
      "The provider answered an error: `status.execution.errorKind` and `resultSummary`. `forbidden` is the business system's final word; Core never retries it.",
  },
  Unknown: {
    where: "Executed=True",
    means:
      "The outcome could not be established (lost answer, a provider that cannot deduplicate). An identical proposal is answered from this record and not sent. Check the business system for the effect (execution id, idempotency key in the audit log), then settle it: `kubectl gatehouse resolve NAME --succeeded|--failed --reason …` ([approvers.md](approvers.md#an-outcome-nobody-knows)). An Auto call of unknown outcome gets such an Approval (`spec.autoExecution: true`) too.",
  },
  ResolvedByPerson: {
    where: "Executed=True (phase Succeeded or Failed); Event (Normal)",
    means:
      "A holder of the `resolve` verb settled the unknown outcome (`spec.resolutions`); the message names them and their reason, the audit log has `execution.resolved`, the agent is told.",
  },
  OutcomeSettled: {
    where: "Executed=True (phase Succeeded or Failed); Event (Normal)",
    means:
      "The outcome was unknown, and the leader's sweep later learned it from the provider (status query, or a re-invoke with the same idempotency key); the audit log has `execution.settling` and a second `execution.finished`, the agent is told.",
  },
  ArgumentsDigestMismatch: {
    where: "Executed=False (phase Failed)",
    means:
      "The stored arguments do not match their digest: the object was tampered with or corrupted. Nothing ran; read the audit log.",
  },
  SessionGone: {
    where: "Executed=False (phase Cancelled)",
    means: "At dispatch the session was gone or finished; nothing ran.",
  },
  CapabilityChanged: {
    where: STALE,
    means: "The Capability no longer offers what was approved. Propose again.",
  },
  ProviderChanged: {
    where: STALE,
    means:
      "The Capability now names another ProviderInstance than the one the call was approved for (the message names both); nothing ran. Propose again.",
  },
  ActionAlreadyExecuted: {
    where: STALE,
    means:
      "Two Approvals of one action (same session, capability and arguments), proposed at the same moment, were both approved: the first runs; this one is not run, since a write runs at most once per session.",
  },
  PolicyChanged: {
    where: STALE,
    means:
      "The Capability's approval policy became stricter after the call was approved, and its decisions do not meet the stricter rules (the message says which). Propose again to be decided under the current policy.",
  },
  SchemaChanged: {
    where: STALE,
    means: "The capability's schema changed after the call was proposed. Propose again.",
  },
  Disabled: {
    where: STALE,
    means:
      "The Capability or its ProviderInstance was disabled (`spec.disabled`) after the call was approved; nothing ran. Once it is enabled again, the call must be proposed again.",
  },
  IdentityUnbound: { where: STALE, means: TOOL_CALL_REASONS.IdentityUnbound.means },
  Forbidden: { where: STALE, means: TOOL_CALL_REASONS.Forbidden.means },
  NotASubject: { where: STALE, means: TOOL_CALL_REASONS.NotASubject.means },
  UnknownEffect: { where: STALE, means: TOOL_CALL_REASONS.UnknownEffect.means },
  UnknownApprovalMode: { where: STALE, means: TOOL_CALL_REASONS.UnknownApprovalMode.means },
  TargetGone: {
    where: STALE,
    means: "The business object the call acts on no longer exists.",
  },
  TargetVersionMoved: {
    where: STALE,
    means:
      "The business object changed after the call was proposed (its version moved). Ask again so the agent works from the current version.",
  },
  ProviderNotReady: {
    where: "Executed=False (phase Approved, retried)",
    means:
      "The Capability's ProviderInstance is missing or not Ready, or the Capability is not Ready. Fix the ProviderInstance first; the approved call runs once it is Ready.",
  },
  TargetUnverifiable: {
    where: "Executed=False (phase Approved, retried)",
    means:
      "The provider could not tell the object's current version; dispatch retries. Check the provider and the business system.",
  },
  Ended: {
    where: "Executed=False",
    means:
      "The audit chain ends this Approval's dispatch with a record that names no reason (one written by an earlier version); the phase is the one that record settles. Nothing more runs; read the audit log.",
  },
  Conflict: {
    where: "Ready=False (phase Failed)",
    means:
      "An Approval of this name existed that Gatehouse did not create for this session (a squat). The call was refused. Find who created it (audit log) and delete it.",
  },
} as const satisfies Record<string, Reason>;
