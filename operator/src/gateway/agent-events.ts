/**
 * How the gateway stores what an agent posts (`POST /v1/session/events`, agent-protocol.ts AgentEvent)
 * in the session's transcript, and what it tells an agent about its model (`GET /v1/session`).
 */
import { type AgentEvent, DEFAULT_CONTEXT_WINDOW, type SessionView } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import type { ModelEndpoint } from "../config-environment.ts";
import { AuditKind } from "../core/audit.ts";
import type { JsonObject } from "../core/canonical.ts";
import type { AuditEntry } from "../core/ports.ts";

/**
 * The transcript payload of an agent event — `{turn, text?, inputTokens?, outputTokens?,
 * compaction?}` — and its dedupe key: a compaction reported twice (a POST retried after the gateway
 * stored it) is marked once, so `status.compactions` counts each once.
 */
export function storedAgentEvent(event: AgentEvent): { payload: JsonObject; dedupeKey?: string } {
  const payload: JsonObject = { turn: event.turn };
  if (event.text !== undefined) payload.text = event.text;
  if (event.usage) Object.assign(payload, event.usage);
  if (event.declined) payload.declined = event.declined;
  if (!event.compaction) return { payload };
  payload.compaction = event.compaction;
  const { reason, tokensBefore } = event.compaction;
  return { payload, dedupeKey: `compaction:${event.turn}:${reason}:${tokensBefore}` };
}

/** The session view's model: its name and its endpoint's context window (else the default). */
export function modelView(name: string, endpoint: ModelEndpoint | undefined): SessionView["model"] {
  return { name, contextWindow: endpoint?.contextWindow ?? DEFAULT_CONTEXT_WINDOW };
}

/**
 * The audit record of an agent event that the chain keeps, or none: an engine's request for a person
 * that the agent declined (`approval_declined`) becomes `engine.approval_declined`, in the name of the
 * session's subject (the agent acts for them), outcome failure (nothing was granted). Only names: the
 * session's engine and the request's name in its protocol (bounded by the protocol's schema).
 */
export function auditedAgentEvent(
  event: AgentEvent,
  session: AgentSession,
  atMicros: number,
): AuditEntry | undefined {
  if (event.kind !== "approval_declined" || !event.declined) return undefined;
  return {
    kind: AuditKind.engineApprovalDeclined,
    actor: session.spec.subject.user,
    outcome: "failure",
    sessionUid: session.metadata.uid,
    atMicros,
    payload: {
      session: `${session.metadata.namespace}/${session.metadata.name}`,
      engine: session.spec.engine ?? "builtin",
      request: event.declined.request,
      turn: event.turn,
    },
  };
}
