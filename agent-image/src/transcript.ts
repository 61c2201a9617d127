/**
 * Rebuilds the conversation from `GET /v1/session` so a new pod resumes where the last one stopped.
 *
 * History entries this reads (payload fields; other kinds are ignored), as the gateway writes them
 * (`operator/src/gateway/server.ts`):
 *   `tool_call`        {turn, position, callId, tool, arguments}  — the InvokeCall as received
 *   `tool_result`      {turn, position?, callId, status, content, approval?} — the InvokeAnswer; a
 *                      `pending_approval` one is not a result yet, it names the Approval to wait for
 *   `approval_outcome` {approval, status, content}               — the final answer of that Approval
 *                      (or of a person's resolution of an unknown outcome that named it); the latest wins
 *   `assistant_text` / `final_answer` {turn, text}                — the AgentEvents this runtime posts
 * Entries are grouped by turn (not by seq), so their order of arrival does not matter; a result is
 * matched to its call by position when given, else by call id. A call left without a final result is
 * invoked again on resume: the gateway recognises it by (turn, position, arguments) and answers its
 * state. User messages are `spec.messages`: the first opens the session and message k follows the k-th
 * final answer.
 */
import type { HistoryEntry, SessionView } from "@gatehouse/operator/agent-protocol";
import { z } from "zod";
import { type TranscriptCall, type TranscriptItem, toolResultItem } from "./runtime.ts";

const Turn = z.number().int().min(0);
const CallPayload = z.object({
  turn: Turn,
  position: z.number().int().min(0),
  callId: z.string(),
  tool: z.string(),
  arguments: z.string(),
});
const ResultPayload = z.object({
  turn: Turn,
  position: z.number().int().min(0).optional(),
  callId: z.string().optional(),
  status: z.string().optional(),
  content: z.string(),
  approval: z.string().optional(),
});
const OutcomePayload = z.object({ approval: z.string(), content: z.string() });
const TextPayload = z.object({ turn: Turn, text: z.string().default("") });

type ResultSlot = { turn: number; position?: number | undefined; callId?: string | undefined };

interface TurnRecord {
  text: string;
  final: boolean;
  calls: Map<number, TranscriptCall>;
  byPosition: Map<number, string>;
  byCallId: Map<string, string>;
}

/** What to do next: replay `history`, then send `next` (undefined: continue), unless `done`. */
export interface ResumePlan {
  history: TranscriptItem[];
  next: string | undefined;
  done: boolean;
  /** History entries skipped because their payload did not have the expected shape. */
  skipped: number;
}

function groupByTurn(entries: HistoryEntry[]): { turns: Map<number, TurnRecord>; skipped: number } {
  const turns = new Map<number, TurnRecord>();
  const awaiting = new Map<string, ResultSlot>();
  let skipped = 0;
  const record = (turn: number) => {
    let found = turns.get(turn);
    if (!found) {
      found = { text: "", final: false, calls: new Map(), byPosition: new Map(), byCallId: new Map() };
      turns.set(turn, found);
    }
    return found;
  };
  const settle = (slot: ResultSlot, content: string) => {
    const turn = record(slot.turn);
    if (slot.position !== undefined) turn.byPosition.set(slot.position, content);
    else if (slot.callId !== undefined) turn.byCallId.set(slot.callId, content);
  };
  for (const entry of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (entry.kind === "tool_call") {
      const call = CallPayload.safeParse(entry.payload);
      if (!call.success) skipped += 1;
      else {
        const { turn, position, callId, tool, arguments: args } = call.data;
        record(turn).calls.set(position, { position, callId, name: tool, arguments: args });
      }
    } else if (entry.kind === "tool_result") {
      const result = ResultPayload.safeParse(entry.payload);
      if (!result.success) skipped += 1;
      else if (result.data.status === "pending_approval") {
        if (result.data.approval) awaiting.set(result.data.approval, result.data);
      } else {
        settle(result.data, result.data.content);
        // An unknown outcome names the Approval a person resolves it on: its outcome replaces this one.
        if (result.data.approval) awaiting.set(result.data.approval, result.data);
      }
    } else if (entry.kind === "approval_outcome") {
      const outcome = OutcomePayload.safeParse(entry.payload);
      const slot = outcome.success ? awaiting.get(outcome.data.approval) : undefined;
      if (!outcome.success) skipped += 1;
      else if (slot) settle(slot, outcome.data.content);
    } else if (entry.kind === "assistant_text" || entry.kind === "final_answer") {
      const text = TextPayload.safeParse(entry.payload);
      if (!text.success) skipped += 1;
      else {
        const turn = record(text.data.turn);
        turn.text = text.data.text;
        turn.final ||= entry.kind === "final_answer";
      }
    }
  }
  return { turns, skipped };
}

/** The transcript and next step for a session (pure; see the file comment for the rules). */
export function planResume(view: Pick<SessionView, "messages" | "history">): ResumePlan {
  const { turns, skipped } = groupByTurn(view.history);
  const messages = view.messages.map((message) => message.text);
  if (turns.size === 0) return { history: [], next: messages[0], done: messages.length === 0, skipped };

  const history: TranscriptItem[] = [{ role: "user", text: messages[0] ?? "" }];
  let nextMessage = 1;
  let previousFinal = false;
  for (const [turn, record] of [...turns].sort(([a], [b]) => a - b)) {
    if (previousFinal && nextMessage < messages.length)
      history.push({ role: "user", text: messages[nextMessage++]! });
    const calls = [...record.calls.values()].sort((a, b) => a.position - b.position);
    history.push({ role: "assistant", turn, text: record.text, calls });
    for (const call of calls) {
      const content = record.byPosition.get(call.position) ?? record.byCallId.get(call.callId);
      if (content !== undefined) history.push(toolResultItem(turn, call, content));
    }
    previousFinal = record.final;
  }
  if (!previousFinal) return { history, next: undefined, done: false, skipped };
  const next = messages[nextMessage];
  return { history, next, done: next === undefined, skipped };
}
