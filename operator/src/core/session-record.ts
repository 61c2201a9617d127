/**
 * What the transcript (Postgres `session_events`) says about a session: its final answer, counters and
 * token usage. Pure: derived from the list of events, so the controller (status) and the model proxy
 * (token budget) agree on one definition. The tool-call and write limits are not counted here: Core
 * reserves them in its budget ledger before a call runs (`BudgetLedger`, core/ports.ts).
 *
 * Event kinds written to the transcript:
 * - `tool_call` (source agent): {turn, position, callId, tool, argumentsDigest}
 * - `tool_result` (source core, from Core's records): {callId, status, content, executionId?, effect?}
 * - `approval_outcome` (source core): {approval, phase, status, content, effect, executionId}
 * - `final_answer` | `assistant_text` | `error` (source agent): {turn, text}
 * - `compaction` (source agent): {turn, compaction: {reason, summarizedTurns, keptTurns, tokensBefore,
 *   tokensAfter, window}} — the engine compacted what its model sees from that turn on (the agent
 *   protocol's CompactionReport; the gateway stores a repeated POST once).
 * - `usage` (source core, the model proxy's metering of one model request):
 *   {inputTokens, outputTokens, model, endpoint, stream, estimated} — what `usage` counts. A `usage`
 *   the agent posts (source agent) is its own report and counts for nothing: a pod could under-report.
 * - `budget_exceeded` (source core, once): {usedTokens, tokenBudget, message} — the proxy refused a
 *   model request because the token budget was used up.
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
  /** The latest final answer the agent posted. */
  finalAnswer?: string;
  /**
   * How many turns the agent ended with a final answer: one per message of `spec.messages` it
   * answered. Counted by turn, so a `final_answer` posted twice (a retried POST) counts once.
   */
  finalAnswers: number;
  agentError?: string;
  turns: number;
  toolCalls: number;
  /** Write executions that succeeded (`status.writes`). */
  writes: number;
  /** Tokens the model proxy metered over all of the session's model requests. */
  usage: { inputTokens: number; outputTokens: number };
  /** Set once the model proxy refused a request for the token budget: its message. */
  budgetExceeded?: string;
  /** How often the agent posted `released`: it stopped while a decision was pending. */
  releases: number;
  /** How often the agent reported compacting its model's context (`status.compactions`). */
  compactions: number;
  /** Events of source `agent` (what the agent posted, and its tool calls): the gateway bounds both. */
  agentEvents: number;
  /** Bytes of those events' payloads as JSON text. */
  agentEventBytes: number;
}

const utf8 = new TextEncoder();

function numberOf(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/**
 * A SessionRecord with what is needed to fold later events into it: the turns already answered and the
 * last event folded. Immutable: {@link foldEvents} returns a new one.
 */
export interface SessionRecordState {
  record: SessionRecord;
  /** The turns that ended with a final answer. */
  finalTurns: ReadonlySet<number>;
  /** Seq of the last event folded in (0 for none). */
  lastSeq: number;
}

/** The state of a session with no events. */
export const EMPTY_SESSION_RECORD_STATE: SessionRecordState = {
  record: {
    finalAnswers: 0,
    turns: 0,
    toolCalls: 0,
    writes: 0,
    releases: 0,
    compactions: 0,
    agentEvents: 0,
    agentEventBytes: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
  },
  finalTurns: new Set(),
  lastSeq: 0,
};

/**
 * Folds transcript `events` (ascending seq, all after `state.lastSeq`) into `state`; pure. Folding
 * all events at once or in any split gives the same record, so a caller may keep the state and read
 * only newer events next time.
 */
export function foldEvents(
  state: SessionRecordState,
  events: readonly TranscriptEvent[],
): SessionRecordState {
  const record: SessionRecord = { ...state.record, usage: { ...state.record.usage } };
  const finalTurns = new Set(state.finalTurns);
  let lastSeq = state.lastSeq;
  for (const event of events) {
    if (event.seq <= lastSeq) continue;
    lastSeq = event.seq;
    // The proxy's events know no turn (the agent numbers its turns): they do not count one.
    if (event.source !== "core" || event.payload.turn !== undefined) {
      record.turns = Math.max(record.turns, numberOf(event.payload.turn) + 1);
    }
    if (event.kind === "tool_call") record.toolCalls++;
    if (event.source === "agent") {
      record.agentEvents++;
      record.agentEventBytes += utf8.encode(JSON.stringify(event.payload)).length;
    }
    const outcome =
      (event.kind === "tool_result" || event.kind === "approval_outcome") && event.source === "core";
    if (outcome && event.payload.effect === "write" && event.payload.status === "succeeded") record.writes++;
    if (event.kind === "usage" && event.source === "core") {
      record.usage.inputTokens += numberOf(event.payload.inputTokens);
      record.usage.outputTokens += numberOf(event.payload.outputTokens);
    }
    if (event.kind === "budget_exceeded" && event.source === "core") {
      record.budgetExceeded = String(event.payload.message ?? "The token budget is used up.");
    }
    if (event.kind === "final_answer" && event.source === "agent" && typeof event.payload.text === "string") {
      record.finalAnswer = event.payload.text;
      finalTurns.add(numberOf(event.payload.turn));
    }
    if (event.kind === "released" && event.source === "agent") record.releases++;
    if (event.kind === "compaction" && event.source === "agent") record.compactions++;
    if (event.kind === "error" && event.source === "agent" && typeof event.payload.text === "string") {
      record.agentError = event.payload.text;
    }
  }
  record.finalAnswers = finalTurns.size;
  return { record, finalTurns, lastSeq };
}

/** Folds all of a session's transcript events (in seq order) into a SessionRecord. */
export function sessionRecordOf(events: readonly TranscriptEvent[]): SessionRecord {
  return foldEvents(EMPTY_SESSION_RECORD_STATE, events).record;
}
