/**
 * One tool call of an agent, as every agent-facing route makes it (`POST /v1/invoke`, the MCP
 * endpoint's `tools/call`): admitted against what the session's agent may write to its transcript,
 * decided and maybe executed by Core's invoke, and recorded in the transcript as `tool_call` and
 * `tool_result` — from Core's answer, once per call however often it is repeated.
 */
import type { InvokeAnswer, InvokeCall } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import type { GatewayLimits } from "../config.ts";
import { sha256Hex } from "../core/canonical.ts";
import { GatehouseError } from "../core/errors.ts";
import { invoke } from "../core/invoke.ts";
import type { SessionCeilings } from "../core/limits.ts";
import type { CoreDeps } from "../core/ports.ts";
import { sessionContextOf } from "../kube/session-context.ts";
import type { SessionRecords } from "../store/session-records.ts";
import type { TranscriptStore } from "../store/transcripts.ts";

export interface ToolCallDeps {
  core: CoreDeps;
  transcripts: TranscriptStore;
  records: SessionRecords;
  ceilings: SessionCeilings;
  intake: Pick<GatewayLimits, "eventsPerSession" | "eventBytesPerSession">;
}

function nowMicros(): number {
  return Date.now() * 1000;
}

/**
 * Refuses (`conflict`, 409) an agent's event of `bytes` once its session posted its share. Checked
 * against what is stored, so every replica counts the same events; concurrent posts can pass it
 * together, at most the session's in-flight cap of them.
 */
export async function admitIntake(
  deps: Pick<ToolCallDeps, "records" | "intake">,
  session: AgentSession,
  bytes: number,
): Promise<void> {
  const { intake } = deps;
  const record = await deps.records.recordOf(session.metadata.uid);
  if (
    record.agentEvents >= intake.eventsPerSession ||
    record.agentEventBytes + bytes > intake.eventBytesPerSession
  ) {
    throw new GatehouseError(
      "conflict",
      `This session's agent has written ${record.agentEvents} events (${record.agentEventBytes} bytes) to its transcript; a session may write at most ${intake.eventsPerSession} events and ${intake.eventBytesPerSession} bytes.`,
    );
  }
}

/**
 * Core.invoke of `call` for `session`, recorded in the transcript; returns Core's answer.
 * Errors: `conflict` over the transcript intake; dependency failures (Postgres, API server) — the
 * agent may repeat the call, its execution identity makes that safe.
 */
export async function callTool(
  deps: ToolCallDeps,
  session: AgentSession,
  call: InvokeCall,
): Promise<InvokeAnswer> {
  // Every call adds a tool_call event the agent caused, refused calls included.
  await admitIntake(deps, session, call.arguments.length);
  const context = sessionContextOf(session, deps.ceilings);
  const { answer } = await invoke(deps.core, context, call);
  const capability = await deps.core.catalog.resolve(session.metadata.namespace, call.tool);
  // A repeated request (same turn, position, tool and arguments) adds nothing to the history: the
  // agent is replayed one call and one result however often it asked.
  const callKey = `${call.turn}:${call.position}:${sha256Hex(`${call.tool}\u0000${call.arguments}`)}`;
  // Both events in one transaction: half the round trips of two appends.
  await deps.transcripts.appendAll([
    {
      dedupeKey: `tool_call:${callKey}`,
      sessionUid: session.metadata.uid,
      source: "agent",
      kind: "tool_call",
      payload: {
        turn: call.turn,
        position: call.position,
        callId: call.callId,
        tool: call.tool,
        arguments: call.arguments,
      },
      atMicros: nowMicros(),
    },
    {
      dedupeKey: `tool_result:${callKey}`,
      sessionUid: session.metadata.uid,
      source: "core",
      kind: "tool_result",
      payload: {
        turn: call.turn,
        callId: call.callId,
        status: answer.status,
        content: answer.content,
        ...(answer.executionId ? { executionId: answer.executionId } : {}),
        ...(answer.approval ? { approval: answer.approval.name } : {}),
        ...(capability ? { effect: String(capability.effect) } : {}),
      },
      atMicros: nowMicros(),
    },
  ]);
  return answer;
}
