/**
 * The runtime interface (DESIGN §5): an engine runs the model loop, Gatehouse keeps the
 * state. `createSession` receives everything the loop needs — subject, system prompt, tools, the stored
 * transcript — and `send` yields what happens, one event at a time. Tools never run inside the engine:
 * they go through a `ToolExecutor` (in production, the gateway, i.e. Core).
 */

/** Who the agent acts for (the session's `spec.subject`). */
export interface RuntimeSubject {
  user: string;
  groups: string[];
}

/** A tool as the model sees it (OpenAI function-tool shape; `name` is the capability id with `.` → `_`). */
export interface RuntimeTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** One tool call of an assistant turn, as the model produced it; `arguments` is the raw string. */
export interface TranscriptCall {
  position: number;
  callId: string;
  name: string;
  arguments: string;
}

/**
 * The engine-neutral transcript. A turn is one model answer (0-based over the whole session) plus the
 * execution of its tool calls; `position` orders the calls within a turn.
 */
export type TranscriptItem =
  | { role: "user"; text: string }
  | { role: "assistant"; turn: number; text: string; calls: TranscriptCall[] }
  | { role: "tool"; turn: number; position: number; callId: string; name: string; content: string };

/** The transcript's record of `content` as the result of `call`, made in `turn`. */
export function toolResultItem(turn: number, call: TranscriptCall, content: string): TranscriptItem {
  return { role: "tool", turn, position: call.position, callId: call.callId, name: call.name, content };
}

/** Token counts of model calls. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** What `send` yields. `arguments` and `content` are for the caller, never for logs. */
export type RuntimeEvent =
  | { type: "text"; turn: number; delta: string }
  | { type: "tool_call"; turn: number; position: number; callId: string; name: string; arguments: string }
  | {
      type: "approval_required";
      turn: number;
      position: number;
      callId: string;
      name: string;
      approval: string;
    }
  | {
      type: "tool_result";
      turn: number;
      position: number;
      callId: string;
      name: string;
      status: string;
      content: string;
    }
  | { type: "turn_end"; turn: number; text: string; toolCalls: number; final: boolean; usage: TokenUsage }
  /**
   * The engine compacted what the model sees before asking it in `turn` (the transcript keeps it all):
   * `summarizedTurns` units (user messages, assistant turns with their results) were replaced by a
   * summary, `keptTurns` kept whole; tokens are the engine's estimates. `reason`: the view outgrew the
   * window, the endpoint refused it, or a call lost its result (re-seeded from the history).
   */
  | {
      type: "compaction";
      turn: number;
      reason: "window" | "refused" | "pairing";
      summarizedTurns: number;
      keptTurns: number;
      tokensBefore: number;
      tokensAfter: number;
      window: number;
    }
  /**
   * The run failed. `final: true` when the engine knows a new pod would meet the same failure (e.g. the
   * model endpoint answered `x-should-retry: false`), whatever the kind; absent → by kind (run-agent.ts).
   */
  | { type: "error"; kind: string; message: string; final?: true };

/** One tool call handed to the executor. */
export interface ToolCallRequest {
  turn: number;
  position: number;
  callId: string;
  name: string;
  arguments: string;
}

/** A tool's final answer: `content` goes back to the model as the tool result. */
export interface ToolAnswer {
  status: string;
  content: string;
}

/** What invoking a tool gave: an answer now, or an approval to wait for. */
export type ToolInvocation =
  | ({ kind: "done" } & ToolAnswer)
  | { kind: "pending_approval"; approval: string; wait(signal: AbortSignal): Promise<ToolAnswer> };

/** Runs tool calls on the engine's behalf. Throws (with a `kind`) only when the run cannot go on. */
export interface ToolExecutor {
  invoke(call: ToolCallRequest, options: { signal: AbortSignal }): Promise<ToolInvocation>;
}

/** `createSession` input. `history` is replayed as the conversation so far. */
export interface CreateSessionOptions {
  subject: RuntimeSubject;
  system: string;
  tools: RuntimeTool[];
  history: TranscriptItem[];
}

/** A conversation an engine drives. */
export interface RuntimeSession {
  /**
   * Adds the user's `text` (none: continue from the history, first finishing tool calls the history
   * left without a result) and runs turns until the model answers without tool calls, a limit is hit,
   * or an error occurs (then an `error` event is the last one).
   */
  send(text: string | undefined, options?: { signal?: AbortSignal }): AsyncIterable<RuntimeEvent>;
  /** Stops the running `send` (it ends with an `error` event of kind `aborted`). */
  abort(): void;
}

/** An engine. */
export interface AgentRuntime {
  createSession(options: CreateSessionOptions): RuntimeSession;
}
