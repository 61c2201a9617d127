/**
 * Core's view of a session (core/ports.ts SessionContext) from the AgentSession object. What the
 * session has used of its limits is Core's own budget ledger, not the transcript.
 */
import type { AgentSession } from "../api/kinds.ts";
import { isTerminalSessionPhase } from "../api/status/agentsession.ts";
import {
  defaultSessionCeilings,
  effectiveLimits,
  type RequestedLimits,
  type SessionCeilings,
} from "../core/limits.ts";
import type { SessionContext } from "../core/ports.ts";

/** Where a session's spec asks for each limit. */
export const LIMIT_FIELDS: Readonly<Record<keyof SessionCeilings, string>> = {
  maxTurns: "spec.limits.maxTurns",
  maxToolCalls: "spec.limits.maxToolCalls",
  maxWrites: "spec.limits.maxWrites",
  tokenBudget: "spec.limits.tokenBudget",
  timeoutSeconds: "spec.limits.timeoutSeconds",
  holdPodForSeconds: "spec.approval.holdPodForSeconds",
};

/** What a session asks for: `spec.limits` and `spec.approval.holdPodForSeconds`. */
export function requestedLimitsOf(session: AgentSession): RequestedLimits {
  const hold = session.spec.approval?.holdPodForSeconds;
  return { ...session.spec.limits, ...(hold !== undefined ? { holdPodForSeconds: hold } : {}) };
}

/**
 * Effective limits of a session (core/limits.ts): `spec.limits` and `spec.approval.holdPodForSeconds`,
 * each capped by the operator's ceilings.
 */
export function limitsOf(session: AgentSession, ceilings: SessionCeilings = defaultSessionCeilings) {
  return effectiveLimits(requestedLimitsOf(session), ceilings);
}

/** Builds the SessionContext Core decides with. */
export function sessionContextOf(
  session: AgentSession,
  ceilings: SessionCeilings = defaultSessionCeilings,
): SessionContext {
  const limits = limitsOf(session, ceilings);
  return {
    namespace: session.metadata.namespace,
    name: session.metadata.name,
    uid: session.metadata.uid,
    subject: { user: session.spec.subject.user, groups: session.spec.subject.groups ?? [] },
    ...(session.spec.capabilities ? { capabilities: session.spec.capabilities } : {}),
    limits: { maxTurns: limits.maxTurns, maxToolCalls: limits.maxToolCalls, maxWrites: limits.maxWrites },
    active:
      !session.spec.cancel &&
      !session.metadata.deletionTimestamp &&
      !isTerminalSessionPhase(session.status?.phase),
  };
}
