/**
 * The transcript the platform holds for one session, kept in memory as the gateway stores it: Core's
 * entries (`tool_call`, `tool_result`, `approval_outcome`, written by the in-memory executor as the
 * gateway writes them on invoke and on an Approval's end) and the agent's (`assistant_text`,
 * `final_answer`, written here from the engine's events by run-agent.ts's rules). A new session resumes
 * from it through `planResume` (transcript.ts), the path a new pod takes — so a resume case tests what
 * the platform would really replay, not a hand-written history.
 */
import type { HistoryEntry } from "@gatehouse/operator/agent-protocol";
import type { RuntimeEvent } from "../runtime.ts";
import { planResume, type ResumePlan } from "../transcript.ts";

/** One session's stored transcript and user messages (`spec.messages`). */
export interface Platform {
  readonly messages: string[];
  readonly entries: HistoryEntry[];
  /** Appends an entry as Core writes it. */
  core(kind: string, payload: Record<string, unknown>): void;
  /** Feeds an engine event; records what run-agent.ts would post for it. */
  observe(event: RuntimeEvent): void;
  /** What a new pod would replay and send next. */
  resume(): ResumePlan;
}

/** A session whose subject wrote `messages` (more can be pushed later, as a person appends one). */
export function createPlatform(messages: string[]): Platform {
  const entries: HistoryEntry[] = [];
  const textOfTurn = new Map<number, string>();
  const append = (source: HistoryEntry["source"], kind: string, payload: Record<string, unknown>) =>
    entries.push({ seq: entries.length + 1, source, kind, payload });
  return {
    messages,
    entries,
    core: (kind, payload) => append("core", kind, payload),
    observe(event) {
      if (event.type === "text") {
        textOfTurn.set(event.turn, (textOfTurn.get(event.turn) ?? "") + event.delta);
      } else if (event.type === "tool_call") {
        // run-agent posts a turn's text before its first call runs, so a released pod keeps it.
        const text = textOfTurn.get(event.turn);
        if (text) append("agent", "assistant_text", { turn: event.turn, text });
        textOfTurn.delete(event.turn);
      } else if (event.type === "turn_end" && event.final) {
        append("agent", "final_answer", { turn: event.turn, text: event.text });
      }
    },
    resume: () => planResume({ messages: messages.map((text) => ({ text })), history: entries }),
  };
}
