/**
 * What the transcript (Postgres `session_events`) says about a session: its final answer, counters and
 * token usage. Pure: derived from the list of events, so the controller (status) and the gateway
 * (limits) agree on one definition.
 *
 * Event kinds written to the transcript:
 * - `tool_call` (source agent): {turn, position, callId, tool, argumentsDigest}
 * - `tool_result` (source core, from Core's records): {callId, status, content, executionId?, effect?}
 * - `approval_outcome` (source core): {approval, phase, status, content, effect, executionId}
 * - `final_answer` | `assistant_text` | `error` (source agent): {turn, text}
 * - `usage` (source agent): {turn, inputTokens, outputTokens}
 */

/** A transcript event as stored. */
export interface TranscriptEvent {
  seq: number;
  source: "agent" | "core";
  kind: string;
  payload: Record<string, unknown>;
}

/** Counters and outcome of a session from its transcript. */
export interface SessionRecord {
  finalAnswer?: string;
  agentError?: string;
  turns: number;
  toolCalls: number;
  /** Write executions that succeeded (`status.writes`). */
  writes: number;
  /**
   * Write calls that were accepted — succeeded, waiting for approval, or of unknown outcome — counted
   * once per execution: what `maxWrites` bounds, so proposing more writes than allowed is refused
   * before anyone approves them.
   */
  writeAttempts: number;
  usage: { inputTokens: number; outputTokens: number };
}

function numberOf(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** Folds transcript events (in seq order) into a SessionRecord. */
export function sessionRecordOf(events: readonly TranscriptEvent[]): SessionRecord {
  const record: SessionRecord = {
    turns: 0,
    toolCalls: 0,
    writes: 0,
    writeAttempts: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
  };
  const attempted = new Set<string>();
  for (const event of events) {
    const turn = numberOf(event.payload.turn);
    record.turns = Math.max(record.turns, turn + 1);
    if (event.kind === "tool_call") record.toolCalls++;
    const outcome = event.kind === "tool_result" || event.kind === "approval_outcome";
    if (
      outcome &&
      event.source === "core" &&
      event.payload.effect === "write" &&
      event.payload.status === "succeeded"
    ) {
      record.writes++;
    }
    if (
      outcome &&
      event.source === "core" &&
      event.payload.effect === "write" &&
      ["succeeded", "pending_approval", "unknown"].includes(String(event.payload.status))
    ) {
      attempted.add(String(event.payload.executionId ?? `seq:${event.seq}`));
    }
    if (event.kind === "usage" && event.source === "agent") {
      record.usage.inputTokens += numberOf(event.payload.inputTokens);
      record.usage.outputTokens += numberOf(event.payload.outputTokens);
    }
    if (event.kind === "final_answer" && event.source === "agent" && typeof event.payload.text === "string") {
      record.finalAnswer = event.payload.text;
    }
    if (event.kind === "error" && event.source === "agent" && typeof event.payload.text === "string") {
      record.agentError = event.payload.text;
    }
  }
  record.writeAttempts = attempted.size;
  return record;
}
