/**
 * How the gateway stores what an agent posts (`POST /v1/session/events`, agent-protocol.ts AgentEvent)
 * in the session's transcript, and what it tells an agent about its model (`GET /v1/session`).
 */
import { type AgentEvent, DEFAULT_CONTEXT_WINDOW, type SessionView } from "../api/agent-protocol.ts";
import type { ModelEndpoint } from "../config-environment.ts";
import type { JsonObject } from "../core/canonical.ts";

/**
 * The transcript payload of an agent event — `{turn, text?, inputTokens?, outputTokens?,
 * compaction?}` — and its dedupe key: a compaction reported twice (a POST retried after the gateway
 * stored it) is marked once, so `status.compactions` counts each once.
 */
export function storedAgentEvent(event: AgentEvent): { payload: JsonObject; dedupeKey?: string } {
  const payload: JsonObject = { turn: event.turn };
  if (event.text !== undefined) payload.text = event.text;
  if (event.usage) Object.assign(payload, event.usage);
  if (!event.compaction) return { payload };
  payload.compaction = event.compaction;
  const { reason, tokensBefore } = event.compaction;
  return { payload, dedupeKey: `compaction:${event.turn}:${reason}:${tokensBefore}` };
}

/** The session view's model: its name and its endpoint's context window (else the default). */
export function modelView(name: string, endpoint: ModelEndpoint | undefined): SessionView["model"] {
  return { name, contextWindow: endpoint?.contextWindow ?? DEFAULT_CONTEXT_WINDOW };
}
