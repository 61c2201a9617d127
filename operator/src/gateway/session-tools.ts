/**
 * The tools an agent's session is offered: its visible Capabilities (spec.capabilities in its
 * namespace) that are ready, enabled and allowed to its subject — one rule for every engine, read
 * by `GET /v1/session` (the builtin engine's tool list) and by the MCP endpoint's `tools/list`.
 */
import type { ToolSpec } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import type { ResolvedCapability } from "../core/ports.ts";
import { offeredCapabilities } from "../core/visibility.ts";
import { resolveCapability, visibleCapabilities } from "../kube/catalog.ts";
import type { Caches } from "../kube/runtime/caches.ts";

/** One offered tool: as the model sees it (`spec`), with its capability's effect and idempotency. */
export interface SessionTool {
  spec: ToolSpec;
  effect: ResolvedCapability["effect"];
  idempotency: ResolvedCapability["idempotency"];
}

/** The session's subject as policy reads it. */
export function subjectOf(session: AgentSession): { user: string; groups: string[] } {
  return { user: session.spec.subject.user, groups: session.spec.subject.groups ?? [] };
}

/** The tools `session` is offered now, in the order of its visible capabilities. Reads the caches only. */
export function sessionTools(caches: Caches, session: AgentSession): SessionTool[] {
  const candidates = visibleCapabilities(caches, session.metadata.namespace, session.spec.capabilities).map(
    (capability) => resolveCapability(caches, capability),
  );
  return offeredCapabilities(candidates, subjectOf(session)).map((c) => ({
    spec: {
      name: c.toolName,
      description: caches.capabilities.get(c.name, c.namespace)?.status?.description ?? c.id,
      parameters: c.inputSchema,
    },
    effect: c.effect,
    idempotency: c.idempotency,
  }));
}
