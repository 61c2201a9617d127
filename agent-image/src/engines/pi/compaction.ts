/**
 * Context compaction for the pi engine, run by our extension on every request Pi sends (Pi's own
 * compaction is off): the builtin engine's pure planner (`../builtin/compaction.ts`) applied to the
 * request's Chat Completions messages. Pi keeps the whole conversation in memory and the platform
 * keeps the transcript; only what leaves for the model is shortened, so a call stays with its result
 * and the summary is the builtin's.
 *
 * The boundary only moves forward within a conversation: it is kept with a digest of the messages
 * before it and dropped when the next request's do not start with the same messages (Pi switched to
 * another session's file, or a resumed one), as a new builtin session starts again at the start. The
 * estimate is scaled up when the endpoint reports more prompt tokens than estimated, as in
 * `../builtin/context.ts`.
 *
 * This file runs inside Pi (loaded with the extension): it imports only the pure planner.
 */
import { createHash } from "node:crypto";
import {
  type ChatMessage,
  estimateMessage,
  estimateTools,
  pairingProblems,
  planContext,
} from "../builtin/compaction.ts";
import type { CompactionReport, RequestContext } from "./bridge-protocol.ts";

/**
 * Whether Pi's message for a failed request says the endpoint refused it as too long: HTTP 413, or a
 * 400 whose text names the context length (the wording `../builtin/context.ts` recognises).
 */
export function refusedAsTooLong(message: string): boolean {
  const status = /^\s*(\d{3})\b/.exec(message)?.[1];
  if (status === "413") return true;
  return (
    status === "400" &&
    /context_length_exceeded|context length|context window|maximum context|too many tokens|prompt is too long/i.test(
      message,
    )
  );
}

function digest(messages: readonly unknown[]): string {
  const hash = createHash("sha256");
  for (const message of messages) hash.update(JSON.stringify(message)).update("\n");
  return hash.digest("hex");
}

/** Compacts the requests of one Pi process (see the file comment). */
export class RequestCompactor {
  private boundary = 0;
  /** Digest of the messages before the boundary (the system prompt excluded). */
  private prefix = "";
  private scale = 1;
  private lastEstimate = 0;
  private readonly summaries = new Map<string, ChatMessage>();
  /** The window a refusal named (or half the refused request), below the configured one. */
  private windowCap = Number.POSITIVE_INFINITY;
  private refusal = false;

  /**
   * The endpoint refused the last request as too long, naming its `limit` and the tokens it `used`
   * when it did: the next request is planned again from the start for that window, with the estimate
   * scaled to that count, and compacted whether or not it seems to fit (as `../builtin/context.ts`).
   */
  refused(counts: { limit?: number; used?: number }): void {
    const { limit, used } = counts;
    if (limit !== undefined) this.windowCap = Math.min(this.windowCap, limit);
    if (used !== undefined && this.lastEstimate > 0 && used > this.lastEstimate)
      this.scale = Math.min(8, (this.scale * used) / this.lastEstimate);
    if (limit === undefined && used === undefined && this.lastEstimate > 0)
      this.windowCap = Math.min(this.windowCap, Math.floor(this.lastEstimate / 2));
    this.refusal = true;
  }

  /** The endpoint counted `inputTokens` for the last request: scale the estimate up when it counted more. */
  observeUsage(inputTokens: number): void {
    if (this.lastEstimate > 0 && inputTokens > this.lastEstimate)
      this.scale = Math.min(8, (this.scale * inputTokens) / this.lastEstimate);
  }

  /**
   * The messages to send instead of `messages` (the system prompt first), and the compaction when
   * the boundary moved. A view that cannot fit is sent anyway: the endpoint's refusal ends the run.
   */
  plan(
    messages: ChatMessage[],
    tools: unknown[],
    context: RequestContext,
  ): { messages: ChatMessage[]; compaction: CompactionReport | undefined } {
    const head = messages[0]?.role === "system" ? 1 : 0;
    let reason: CompactionReport["reason"] = this.refusal ? "refused" : "window";
    const force = this.refusal;
    this.refusal = false;
    if (
      force ||
      this.boundary > messages.length ||
      digest(messages.slice(head, Math.max(head, this.boundary))) !== this.prefix
    )
      this.restart();
    const window = Math.min(context.window, this.windowCap);
    const estimate = (message: ChatMessage) => Math.ceil(estimateMessage(message) * this.scale);
    const fixed = Math.ceil(estimateTools(tools as never) * this.scale) + 3;
    const reserve =
      window === context.window ? context.reserve : Math.min(context.reserve, Math.ceil(window / 8));
    const budget = window - reserve - fixed;
    const plan = () =>
      planContext({ messages, boundary: this.boundary, budget, estimate, summaries: this.summaries, force });
    let view = plan();
    if (pairingProblems(view.messages).length > 0 && !force) {
      // Not expected (units never split); planned again from the start rather than sent broken.
      this.restart();
      reason = "pairing";
      view = plan();
    }
    this.lastEstimate = view.tokens + fixed;
    const moved = view.boundary !== this.boundary;
    this.boundary = view.boundary;
    this.prefix = digest(messages.slice(head, Math.max(head, view.boundary)));
    return {
      messages: view.messages,
      compaction:
        view.compacted || force || (reason === "pairing" && moved)
          ? {
              reason,
              summarizedTurns: view.summarizedUnits,
              keptTurns: view.keptUnits,
              tokensBefore: view.tokensBefore + fixed,
              tokensAfter: view.tokens + fixed,
              window,
            }
          : undefined,
    };
  }

  private restart(): void {
    this.boundary = 0;
    this.prefix = digest([]);
    this.summaries.clear();
  }
}
