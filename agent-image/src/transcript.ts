/**
 * Rebuilds the conversation from `GET /v1/session` so a new pod resumes where the last one stopped.
 *
 * History entries this reads (payload fields; other kinds are ignored):
 *   `tool_call`   (gateway) {turn, position, callId, tool, arguments}  — the InvokeCall as received
 *   `tool_result` (gateway) {turn, position, callId?, tool?, content}  — the final InvokeAnswer's content
 *   `assistant_text` / `final_answer` (agent) {turn, text}              — the AgentEvents this runtime posts
 * Entries are grouped by turn (not by seq), so their order of arrival does not matter. User messages are
 * `spec.messages`: the first opens the session and message k follows the k-th final answer.
 */
import type { HistoryEntry, SessionView } from "@gatehouse/operator/agent-protocol";
import { z } from "zod";
import type { TranscriptCall, TranscriptItem } from "./runtime.ts";

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
  position: z.number().int().min(0),
  content: z.string(),
});
const TextPayload = z.object({ turn: Turn, text: z.string().default("") });

interface TurnRecord {
  text: string;
  final: boolean;
  calls: Map<number, TranscriptCall>;
  results: Map<number, string>;
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
  let skipped = 0;
  const record = (turn: number) => {
    let found = turns.get(turn);
    if (!found) {
      found = { text: "", final: false, calls: new Map(), results: new Map() };
      turns.set(turn, found);
    }
    return found;
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
      else record(result.data.turn).results.set(result.data.position, result.data.content);
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
    if (previousFinal && nextMessage < messages.length) history.push({ role: "user", text: messages[nextMessage++]! });
    const calls = [...record.calls.values()].sort((a, b) => a.position - b.position);
    history.push({ role: "assistant", turn, text: record.text, calls });
    for (const call of calls) {
      const content = record.results.get(call.position);
      if (content !== undefined) {
        history.push({ role: "tool", turn, position: call.position, callId: call.callId, name: call.name, content });
      }
    }
    previousFinal = record.final;
  }
  if (!previousFinal) return { history, next: undefined, done: false, skipped };
  const next = messages[nextMessage];
  return { history, next, done: next === undefined, skipped };
}
