/**
 * The conversation the builtin engine keeps, and the view of it each model request sends
 * (`compaction.ts` plans the view). It keeps two copies of the session: the transcript items — the
 * platform's record it was given (`createSession`'s history) plus what this run added, the same rows
 * the gateway stores — and the Chat Completions messages replayed from them. Before each request it
 * plans the view and checks that every call in it has its result and every result its call; when not
 * (a bug here, not something to send), or when the endpoint refused a request as too long, it
 * re-seeds the messages from the items and plans again, once per request: the engine ends the run if
 * that does not help, instead of sending the same refused request again.
 *
 * The estimate (`estimateMessage`) is scaled up when the endpoint reports more prompt tokens than it
 * estimated for the request (its tokenizer counts more than the estimate assumes); after a refusal as
 * too long, to the counts the refusal names (`overflowCounts`).
 */
import { isBudgetExceeded } from "@gatehouse/operator/agent-protocol";
import OpenAI from "openai";
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import { type TranscriptCall, type TranscriptItem, toolResultItem } from "../../runtime.ts";
import {
  type ApprovalNote,
  type ChatMessage,
  estimateMessage,
  estimateTools,
  pairingProblems,
  planContext,
} from "./compaction.ts";
import { assistantMessage, type ReplayedConversation, replayConversation } from "./messages.ts";

/** The context window assumed when the model endpoint's configuration names none (tokens). */
export { DEFAULT_CONTEXT_WINDOW } from "@gatehouse/operator/agent-protocol";

/** Tokens kept free for the answer: an eighth of the window, at most 16 384. */
export function answerReserve(window: number): number {
  return Math.min(16_384, Math.ceil(window / 8));
}

/** Why the view was compacted: it outgrew the window, the endpoint refused it, or its pairing broke. */
export type CompactionReason = "window" | "refused" | "pairing";

/** A compaction, for the `compaction` runtime event; tokens are estimates. */
export interface CompactionReport {
  reason: CompactionReason;
  summarizedTurns: number;
  keptTurns: number;
  tokensBefore: number;
  tokensAfter: number;
  window: number;
}

/** The context cannot be made into a valid request; `final`: a new pod would meet the same. */
export class ContextError extends Error {
  readonly kind: string;
  readonly final = true;

  constructor(kind: string, message: string) {
    super(message);
    this.name = "ContextError";
    this.kind = kind;
  }
}

/**
 * Whether the endpoint refused a request as too long for the model's context: OpenAI's
 * `context_length_exceeded`, vLLM's and others' "maximum context length", HTTP 413. Not the model
 * proxy's token-budget refusal, nor a refusal of the pairing of calls and results: the engine checks
 * that before every request, so re-sending from the same transcript would be refused again.
 */
export function isContextOverflow(error: unknown): boolean {
  if (!(error instanceof OpenAI.APIError) || isBudgetExceeded(error)) return false;
  if (error.status === 413) return true;
  return (
    error.status === 400 &&
    /context_length_exceeded|context length|context window|maximum context|too many tokens|prompt is too long/i.test(
      `${error.code ?? ""} ${error.message}`,
    )
  );
}

/**
 * What a refusal as too long says about the endpoint's window: its `limit` and the tokens the request
 * `used`, in the words of OpenAI ("maximum context length is N tokens … your messages resulted in M
 * tokens", "exceed the configured limit of N tokens") and vLLM ("… you requested M tokens (K in the
 * messages, …)": K, the messages alone). Either may be absent.
 */
export function overflowCounts(message: string): { limit?: number; used?: number } {
  const number = (pattern: RegExp) => {
    const found = pattern.exec(message)?.[1];
    return found === undefined ? undefined : Number(found);
  };
  const limit = number(/maximum context length is (\d+)/i) ?? number(/limit of (\d+) tokens/i);
  const used =
    number(/(\d+) in the messages/i) ??
    number(/resulted in (\d+) tokens/i) ??
    number(/requested (\d+) tokens/i);
  return { ...(limit !== undefined ? { limit } : {}), ...(used !== undefined ? { used } : {}) };
}

/** Options of {@link ModelContext}. */
export interface ModelContextOptions {
  system: string;
  history: TranscriptItem[];
  tools: ChatCompletionTool[];
  /** The model's context window in tokens. */
  window: number;
}

/** The engine's conversation and its compacted view (see the file comment). */
export class ModelContext {
  /** Calls of the history's last turn still without a result, for the engine to run first. */
  readonly unanswered: ReplayedConversation["unanswered"];
  /** Approvals by call id, for the summary. */
  readonly approvals = new Map<string, ApprovalNote>();
  /** The window planned for: the configured one, lowered by refusals as too long. */
  window: number;
  private readonly system: string;
  private readonly tools: ChatCompletionTool[];
  private readonly items: TranscriptItem[];
  private messages: ChatMessage[];
  private boundary = 0;
  private scale = 1;
  private lastEstimate = 0;
  private reseed: CompactionReason | undefined;
  private readonly sizes = new WeakMap<ChatMessage, number>();
  private readonly summaries = new Map<string, ChatMessage>();

  constructor(options: ModelContextOptions) {
    this.system = options.system;
    this.tools = options.tools;
    this.window = options.window;
    this.items = [...options.history];
    const replay = replayConversation(options.system, options.history);
    this.messages = replay.messages;
    this.unanswered = replay.unanswered;
  }

  addUser(text: string): void {
    this.items.push({ role: "user", text });
    this.messages.push({ role: "user", content: text });
  }

  addAssistant(turn: number, text: string, calls: TranscriptCall[]): void {
    this.items.push({ role: "assistant", turn, text, calls });
    this.messages.push(assistantMessage(text, calls));
  }

  /** The results of `turn`'s calls, one tool message per call in position order. */
  addResults(turn: number, calls: TranscriptCall[], contentOf: (call: TranscriptCall) => string): void {
    // A resumed turn's recorded results are in the items already: its full set replaces them.
    const kept = this.items.filter((item) => !(item.role === "tool" && item.turn === turn));
    this.items.splice(0, this.items.length, ...kept);
    for (const call of calls) {
      const content = contentOf(call);
      this.items.push(toolResultItem(turn, call, content));
      this.messages.push({ role: "tool", tool_call_id: call.callId, content });
    }
  }

  /** The model reported `inputTokens` for the last request: scale the estimate up when it counted more. */
  observeUsage(inputTokens: number): void {
    if (this.lastEstimate > 0 && inputTokens > this.lastEstimate)
      this.scale = Math.min(8, (this.scale * inputTokens) / this.lastEstimate);
  }

  /**
   * The endpoint refused the last view as too long, saying `message`: the next view is re-seeded and
   * compacted for the window it names, with the estimate scaled to the count it names; when it names
   * neither, for half the refused view's estimate.
   */
  refusedAsTooLong(message: string): void {
    const { limit, used } = overflowCounts(message);
    if (limit !== undefined) this.window = Math.min(this.window, limit);
    if (used !== undefined && this.lastEstimate > 0 && used > this.lastEstimate)
      this.scale = Math.min(8, (this.scale * used) / this.lastEstimate);
    if (limit === undefined && used === undefined && this.lastEstimate > 0)
      this.window = Math.min(this.window, Math.floor(this.lastEstimate / 2));
    this.reseed = "refused";
  }

  /** The messages of the next request, and the compaction that produced them if there was one. */
  next(): { messages: ChatMessage[]; compaction: CompactionReport | undefined } {
    const estimate = (message: ChatMessage) => {
      let size = this.sizes.get(message);
      if (size === undefined) {
        size = estimateMessage(message);
        this.sizes.set(message, size);
      }
      return Math.ceil(size * this.scale);
    };
    const fixed = Math.ceil(estimateTools(this.tools) * this.scale) + 3;
    const budget = this.window - answerReserve(this.window) - fixed;
    let reason = this.reseed;
    this.reseed = undefined;
    const plan = () => {
      if (reason !== undefined) {
        this.messages = replayConversation(this.system, this.items).messages;
        this.boundary = 0;
        this.summaries.clear();
      }
      return planContext({
        messages: this.messages,
        boundary: this.boundary,
        budget,
        estimate,
        approvals: this.approvals,
        summaries: this.summaries,
        force: reason === "refused",
      });
    };
    let view = plan();
    if (pairingProblems(view.messages).length > 0 && reason === undefined) {
      reason = "pairing";
      view = plan();
    }
    const problems = pairingProblems(view.messages);
    if (problems.length > 0)
      throw new ContextError(
        "internal",
        `the conversation re-seeded from the transcript is not a valid request: ${problems.slice(0, 3).join("; ")}`,
      );
    if (!view.fits)
      throw new ContextError(
        "limit_exceeded",
        `the model's context window (${this.window} tokens, ${budget} for messages) cannot hold the system prompt, a summary and the latest turn (about ${view.tokens} tokens)`,
      );
    this.boundary = view.boundary;
    this.lastEstimate = view.tokens + fixed;
    const compacted = view.compacted || reason !== undefined;
    return {
      messages: view.messages,
      compaction: compacted
        ? {
            reason: reason ?? "window",
            summarizedTurns: view.summarizedUnits,
            keptTurns: view.keptUnits,
            tokensBefore: view.tokensBefore + fixed,
            tokensAfter: view.tokens + fixed,
            window: this.window,
          }
        : undefined,
    };
  }
}
