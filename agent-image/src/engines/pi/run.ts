/**
 * One `send` of a Pi session while it holds the host: Pi's events and the extension's execute
 * requests in, the runtime's events out. Pi's stream is read in order, so a turn's text, its calls
 * (run through the executor by the session) and its end come out in the contract's order; an
 * execution Pi asks for is answered once the session has the answer, whichever comes first.
 */
import type { Logger } from "pino";
import type { RuntimeEvent, TokenUsage, ToolAnswer, TranscriptCall, TranscriptItem } from "../../runtime.ts";
import { overflowCounts } from "../builtin/context.ts";
import { describeExit, EngineProcessError, type ExitInfo } from "../subprocess/child.ts";
import type { CompactionReport } from "./bridge-protocol.ts";
import { refusedAsTooLong } from "./compaction.ts";
import { modelFailure } from "./errors.ts";
import type { ExecuteRequest, PiEvent, PiHost, RunSink } from "./host.ts";
import { replayedArguments } from "./session-file.ts";

/** What the run needs of its session. */
export interface DriveContext {
  state: { turn: number; toolCalls: number };
  maxTurns: number;
  maxToolCalls: number;
  transcript: TranscriptItem[];
  runCalls(
    turn: number,
    calls: TranscriptCall[],
    signal: AbortSignal,
  ): AsyncGenerator<RuntimeEvent, Map<number, ToolAnswer>>;
  logger: Logger;
}

type Incoming =
  | { kind: "event"; event: PiEvent }
  | { kind: "compaction"; report: CompactionReport }
  | { kind: "exit"; exit: ExitInfo };

interface AssistantBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  arguments?: unknown;
}

interface AssistantMessage {
  role: string;
  content: AssistantBlock[];
  stopReason?: string;
  errorMessage?: string;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}

/** How long Pi gets to end an aborted run before it is stopped (the SDK under it sleeps out Retry-After unaborted). */
const SETTLE_MS = 1000;

export class PiRun {
  readonly sink: RunSink;
  private readonly items: Incoming[] = [];
  private wake: (() => void) | undefined;
  private readonly answers = new Map<string, { content: string; terminate: boolean }>();
  private readonly requests = new Map<string, number>();
  private messages = -1;
  private started = false;
  private ended = false;

  private readonly host: PiHost;
  private readonly signal: AbortSignal;

  /** Aborted when Pi exits: the executor stops waiting (e.g. for an approval) for a run that is over. */
  private readonly died = new AbortController();

  constructor(host: PiHost, signal: AbortSignal) {
    this.host = host;
    this.signal = AbortSignal.any([signal, this.died.signal]);
    const push = (item: Incoming) => {
      this.items.push(item);
      this.wake?.();
    };
    this.sink = {
      event: (event) => push({ kind: "event", event }),
      exited: (exit) => {
        push({ kind: "exit", exit });
        this.died.abort(new EngineProcessError("unavailable", describeExit("pi", exit), exit));
      },
      execute: (request) => this.onExecute(request),
      compaction: (report) => push({ kind: "compaction", report }),
    };
    this.signal.addEventListener("abort", () => this.wake?.(), { once: true });
  }

  private onExecute(request: ExecuteRequest): void {
    const key = `${request.message}:${request.position}`;
    const answer = this.answers.get(key);
    if (answer) this.host.answer(request.id, answer.content, answer.terminate);
    else this.requests.set(key, request.id);
  }

  private deliver(key: string, content: string, terminate: boolean): void {
    const id = this.requests.get(key);
    this.requests.delete(key);
    if (id !== undefined) this.host.answer(id, content, terminate);
    else this.answers.set(key, { content, terminate });
  }

  /** The next item, or undefined when woken without one; throws once the signal aborts (unless `ignoreAbort`). */
  private async next(ignoreAbort = false): Promise<Incoming | undefined> {
    if (this.signal.aborted && !ignoreAbort) throw this.signal.reason;
    if (this.items.length === 0) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
    return this.items.shift();
  }

  /** Asks Pi (`text`, or continuing) and yields the runtime's events until Pi's run ends. */
  async *drive(text: string | undefined, ctx: DriveContext): AsyncGenerator<RuntimeEvent> {
    const { state } = ctx;
    this.started = true;
    if (text !== undefined) await this.host.rpc({ type: "prompt", message: text });
    else await this.host.toExtension({ type: "continue" });
    let raw = new Map<number, string>();
    let failure: string | undefined;
    let final = false;
    let stop: string | undefined;
    let abortSent = false;
    let refusedOnce = false;
    for (;;) {
      const item = await this.next();
      if (!item) continue;
      if (item.kind === "exit")
        throw new EngineProcessError("unavailable", describeExit("pi", item.exit), item.exit);
      if (item.kind === "compaction") {
        // Reported before the request leaves: it precedes the turn it makes.
        ctx.logger.info({ turn: state.turn, ...item.report }, "context compacted");
        yield { type: "compaction", turn: state.turn, ...item.report };
        continue;
      }
      const event = item.event;
      if (event.type === "agent_end") {
        // Refused as too long: compacted for what the endpoint said and asked once more, as builtin does.
        if (failure !== undefined && !refusedOnce && refusedAsTooLong(failure) && !this.signal.aborted) {
          refusedOnce = true;
          const counts = overflowCounts(failure);
          failure = undefined;
          await this.host.toExtension({ type: "refused", ...counts });
          await this.host.toExtension({ type: "continue" });
          continue;
        }
        this.ended = true;
        break;
      }
      const message = event.message as AssistantMessage | undefined;
      if (event.type === "message_start" && message?.role === "assistant") {
        raw = new Map();
        // A limit was reached but Pi asks the model again (a call it answered itself): stop it.
        if (stop !== undefined && !abortSent) {
          abortSent = true;
          void this.host.rpc({ type: "abort" }).catch(() => {});
        }
      } else if (event.type === "message_update" && stop === undefined) {
        const update = event.assistantMessageEvent as { type: string; contentIndex: number; delta?: string };
        if (update.type === "text_delta" && update.delta)
          yield { type: "text", turn: state.turn, delta: update.delta };
        else if (update.type === "toolcall_start") raw.set(update.contentIndex, "");
        else if (update.type === "toolcall_delta")
          raw.set(update.contentIndex, (raw.get(update.contentIndex) ?? "") + (update.delta ?? ""));
      } else if (event.type === "message_end" && message?.role === "assistant") {
        this.messages += 1;
        if (stop !== undefined) continue;
        if (message.stopReason === "error" || message.stopReason === "aborted") {
          failure = message.errorMessage ?? message.stopReason;
          continue;
        }
        failure = undefined;
        const outcome = yield* this.turn(message, raw, ctx);
        final = outcome.final;
        stop = outcome.stop;
      }
    }
    if (this.signal.aborted) throw this.signal.reason;
    if (failure !== undefined) {
      yield modelFailure(failure);
      return;
    }
    if (stop !== undefined) {
      yield { type: "error", kind: "limit_exceeded", message: stop };
      return;
    }
    if (!final) yield { type: "error", kind: "internal", message: "pi ended the run without a final answer" };
  }

  /** One model answer: its calls through the executor, Pi's executions answered, then `turn_end`. */
  private async *turn(
    message: AssistantMessage,
    raw: Map<number, string>,
    ctx: DriveContext,
  ): AsyncGenerator<RuntimeEvent, { final: boolean; stop: string | undefined }> {
    const { state } = ctx;
    const turn = state.turn;
    const calls: TranscriptCall[] = [];
    message.content.forEach((block, index) => {
      if (block.type !== "toolCall") return;
      calls.push({
        position: calls.length,
        callId: block.id ?? "",
        name: block.name ?? "",
        // The model's own string; Pi keeps only what it could parse of it.
        arguments: raw.get(index) ?? JSON.stringify(block.arguments ?? {}),
      });
    });
    const text = message.content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
    const usage: TokenUsage = {
      inputTokens:
        (message.usage?.input ?? 0) + (message.usage?.cacheRead ?? 0) + (message.usage?.cacheWrite ?? 0),
      outputTokens: message.usage?.output ?? 0,
    };
    ctx.logger.info(
      { turn, toolCalls: calls.length, stopReason: message.stopReason, ...usage },
      "model answered",
    );
    const withoutTools = state.toolCalls >= ctx.maxToolCalls;
    ctx.transcript.push({ role: "assistant", turn, text, calls });
    state.toolCalls += calls.length;
    state.turn += 1;
    let stop: string | undefined;
    if (calls.length > 0) {
      if (withoutTools)
        stop = `the session reached maxToolCalls (${ctx.maxToolCalls}) and the model kept calling tools`;
      else if (state.turn >= ctx.maxTurns) stop = `the session reached maxTurns (${ctx.maxTurns})`;
      // Before any answer reaches Pi, so its next request already goes without tools.
      else if (state.toolCalls >= ctx.maxToolCalls) await this.host.toExtension({ type: "tool_choice_none" });
      await this.host.toExtension({
        type: "call_arguments",
        callArguments: calls.map((call) => replayedArguments(call.arguments)),
      });
      const answers = yield* ctx.runCalls(turn, calls, this.signal);
      for (const call of calls)
        this.deliver(
          `${this.messages}:${call.position}`,
          answers.get(call.position)!.content,
          stop !== undefined,
        );
    }
    yield { type: "turn_end", turn, text, toolCalls: calls.length, final: calls.length === 0, usage };
    return { final: calls.length === 0, stop };
  }

  /** After the run, however it ended: Pi must be idle before another run loads, else it is stopped. */
  async settle(logger: Logger): Promise<void> {
    if (!this.started || this.ended) return;
    // Pi's abort waits for its tool executions: answer the open ones (never recorded anywhere).
    for (const id of this.requests.values())
      this.host.answer(id, "The run was stopped before this call was answered.", true);
    this.requests.clear();
    void this.host.rpc({ type: "abort" }).catch(() => {});
    const deadline = Date.now() + SETTLE_MS;
    const timer = setTimeout(() => this.wake?.(), SETTLE_MS);
    try {
      while (Date.now() < deadline) {
        const item = await this.next(true);
        if (item?.kind === "exit" || (item?.kind === "event" && item.event.type === "agent_end")) return;
      }
      logger.warn({ engine: "pi" }, "pi did not end an aborted run; stopping it");
      await this.host.restart();
    } finally {
      clearTimeout(timer);
    }
  }
}
