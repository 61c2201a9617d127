/**
 * The messages between the Pi adapter (in the agent process) and our extension (inside Pi), one JSON
 * object per line over a Unix socket in Pi's writable directory. The adapter drives; the extension
 * only registers the session's tools and hands each execution back.
 */
import type { RuntimeEvent, RuntimeTool } from "../../runtime.ts";

/** The environment variable naming the socket, set on Pi's process. */
export const BRIDGE_SOCKET_ENV = "GATEHOUSE_PI_BRIDGE";

/** The custom message that makes Pi answer without a new user message; the extension hides it from the model. */
export const CONTINUE_MESSAGE_TYPE = "gatehouse-continue";

/** What the model is told for the coming run. */
export interface RunSetup {
  system: string;
  /** Sent as the request's `model`. */
  model: string;
  tools: RuntimeTool[];
  /** Ask the model with `tool_choice: "none"` (the session's tool calls are used up). */
  toolChoiceNone: boolean;
  /**
   * The arguments of every call in the conversation so far, in order, as the model gets them back:
   * Pi keeps only the parsed object and would send its re-serialisation.
   */
  callArguments: string[];
  /** The model's window: requests are compacted to fit it (compaction.ts); absent, never. */
  context?: RequestContext;
}

/** Tokens of the model's context window, and those kept free for the answer. */
export interface RequestContext {
  window: number;
  reserve: number;
}

/** A compaction of the request about to be sent: the `compaction` runtime event without its turn. */
export type CompactionReport = Omit<Extract<RuntimeEvent, { type: "compaction" }>, "type" | "turn">;

/** Adapter → extension. Each carries an `id` the extension echoes in a `done`. */
export type ToExtension =
  /** Before each run: registers and activates exactly `tools`, and restarts the message count. */
  | ({ type: "setup"; id: number } & RunSetup)
  /** During a run: from the next model request on, `tool_choice: "none"`. */
  | { type: "tool_choice_none"; id: number }
  /** During a run: the arguments of a new answer's calls, before Pi gets their results. */
  | { type: "call_arguments"; id: number; callArguments: string[] }
  /** The endpoint refused the last request as too long (saying so, when it did): compact the next for it. */
  | { type: "refused"; id: number; limit?: number; used?: number }
  /** Starts a turn without a user message (the history ends in tool results). */
  | { type: "continue"; id: number }
  /** The answer to an `execute`. `terminate`: Pi asks the model no more in this run. */
  | { type: "answer"; id: number; content: string; terminate: boolean }
  /** The adapter has a `compaction`: the request may leave (so the event comes before the turn's). */
  | { type: "compaction_seen"; id: number };

/** Extension → adapter. */
export type FromExtension =
  | { type: "done"; id: number }
  /**
   * Pi executes a call: the `message`-th assistant message since the setup (0-based), the call's
   * position among that message's calls.
   */
  | { type: "execute"; id: number; message: number; position: number; callId: string; name: string }
  | { type: "failed"; id: number; error: string }
  /** The request about to be sent was compacted; Pi sends it once the adapter answers `compaction_seen`. */
  | ({ type: "compaction"; id: number } & CompactionReport);
