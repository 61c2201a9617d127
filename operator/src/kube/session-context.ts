/**
 * Core's view of a session (core/ports.ts SessionContext) from the AgentSession object and the
 * transcript counters.
 */
import type { AgentSession } from "../api/kinds.ts";
import type { SessionContext } from "../core/ports.ts";
import type { SessionRecord } from "../core/session-record.ts";

/** Defaults until the operator's ceilings are configurable (API issue). */
export const DEFAULT_LIMITS = { maxTurns: 20, maxToolCalls: 50, maxWrites: 5 } as const;

/** Effective limits of a session: the user's value, capped by the defaults. */
export function limitsOf(session: AgentSession) {
  const limits = session.spec.limits ?? {};
  return {
    maxTurns: Math.min(limits.maxTurns ?? DEFAULT_LIMITS.maxTurns, DEFAULT_LIMITS.maxTurns),
    maxToolCalls: Math.min(limits.maxToolCalls ?? DEFAULT_LIMITS.maxToolCalls, DEFAULT_LIMITS.maxToolCalls),
    maxWrites: Math.min(limits.maxWrites ?? DEFAULT_LIMITS.maxWrites, DEFAULT_LIMITS.maxWrites),
  };
}

/** Builds the SessionContext Core decides with. */
export function sessionContextOf(session: AgentSession, record: SessionRecord): SessionContext {
  const phase = session.status?.phase ?? "Pending";
  return {
    namespace: session.metadata.namespace,
    name: session.metadata.name,
    uid: session.metadata.uid,
    subject: { user: session.spec.subject.user, groups: session.spec.subject.groups ?? [] },
    ...(session.spec.capabilities ? { capabilities: session.spec.capabilities } : {}),
    limits: limitsOf(session),
    counters: { toolCalls: record.toolCalls, writes: record.writes },
    active:
      !session.spec.cancel &&
      !session.metadata.deletionTimestamp &&
      !["Completed", "Failed", "Cancelled"].includes(phase),
  };
}
