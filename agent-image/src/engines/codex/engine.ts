/**
 * The `codex` engine (DESIGN §9): `codex app-server` runs the model loop; Gatehouse keeps the state.
 *   - each `send` starts a new Codex thread, gives it the session's transcript as Responses items
 *     (`thread/inject_items`) and starts a turn with the user's text, or, continuing, with none;
 *   - the session's capability tools are the thread's `dynamicTools`; every call of a model answer
 *     goes to the ToolExecutor here, one after another in position order, each once, with the model's
 *     raw arguments string (Codex's raw response items carry it), and Codex gets the executor's answer;
 *   - every decision or input Codex asks for (commands, file changes, permissions, questions to the
 *     user) is declined at once and reported through `onDeclined`; nothing is ever run by Codex itself;
 *   - calls the history left without a result are finished here before Codex is asked;
 *   - `maxTurns` and `maxToolCalls`: the answer that reaches one ends the run (`limit_exceeded`);
 *   - Codex compacts the thread itself near the window: the summary request it makes then is not an
 *     answer of the session, so its items are skipped (and no `compaction` event is reported);
 *   - Codex's own retries take failed model requests (config-files.ts); a turn that failed for good
 *     ends the run with an error of the shared kinds (errors.ts); a Codex that exits ends it with its
 *     exit code and stderr tail;
 *   - a turn Codex fails after the model's answer came whole with each call answered (an answer cut
 *     off at the token limit, whose arguments Codex could not parse and answered itself) is recorded
 *     as any answer and continued in a new thread, so the model reads Core's answers, not Codex's.
 */
import type { Logger } from "pino";
import {
  type AgentRuntime,
  type CreateSessionOptions,
  type RuntimeEvent,
  type RuntimeSession,
  type ToolAnswer,
  type ToolExecutor,
  type TranscriptCall,
  type TranscriptItem,
  toolResultItem,
} from "../../runtime.ts";
import { sessionSend } from "../session-send.ts";
import { describeExit, EngineProcessError, type ExitInfo } from "../subprocess/child.ts";
import { errorEvent, turnFailure } from "./errors.ts";
import { historyItems } from "./history.ts";
import type { CodexHost, CodexNotification } from "./host.ts";
import { ThreadStarted, type TurnError, TurnStarted } from "./protocol.ts";
import { Inbox } from "./queue.ts";

/** A decision or input Codex asked for and was refused (`method` names the request). */
export interface DeclinedRequest {
  method: string;
  turn: number;
}

export interface CodexRuntimeOptions {
  host: CodexHost;
  /** The model name the requests carry. */
  model: string;
  tools: ToolExecutor;
  maxTurns: number;
  maxToolCalls: number;
  logger: Logger;
  /** Called for each request Codex made that was declined (the agent reports it to the gateway). */
  onDeclined?(request: DeclinedRequest): void;
}

type Received =
  | { kind: "notification"; notification: CodexNotification }
  | { kind: "tool_call"; callId: string; answer(result: unknown): void }
  | { kind: "declined"; method: string };

/** The item of a turn during which Codex compacts the thread (asks the model for a summary). */
const COMPACTION_ITEM = "contextCompaction";

/** The calls of the last assistant message that the history left without a result. */
function unansweredOf(history: TranscriptItem[]) {
  const last = history.findLastIndex((item) => item.role === "assistant");
  const assistant = history[last];
  if (assistant?.role !== "assistant" || assistant.calls.length === 0) return undefined;
  const known = new Set<number>();
  for (const item of history.slice(last + 1)) if (item.role === "tool") known.add(item.position);
  const open = assistant.calls.filter((call) => !known.has(call.position));
  return open.length > 0 ? { turn: assistant.turn, calls: open } : undefined;
}

/** A tool answer as Codex takes it: the content as the model's text, `success` when the call ran and succeeded. */
function codexResult(answer: ToolAnswer) {
  return {
    contentItems: [{ type: "inputText", text: answer.content }],
    success: answer.status === "succeeded",
  };
}

/** The Codex engine. */
export function createCodexRuntime(options: CodexRuntimeOptions): AgentRuntime {
  return { createSession: (init) => createCodexSession(options, init) };
}

function createCodexSession(options: CodexRuntimeOptions, init: CreateSessionOptions): RuntimeSession {
  const { host, tools: executor, maxTurns, maxToolCalls } = options;
  const transcript: TranscriptItem[] = [...init.history];
  const state = {
    turn: transcript.reduce(
      (next, item) => (item.role === "assistant" ? Math.max(next, item.turn + 1) : next),
      0,
    ),
    toolCalls: transcript.reduce(
      (count, item) => (item.role === "assistant" ? count + item.calls.length : count),
      0,
    ),
  };
  const logger = options.logger.child({ engine: "codex", model: options.model });
  const dynamicTools = init.tools.map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    inputSchema: tool.parameters,
  }));

  /** Proposes `call`, asks the executor, waits for an approval it names, and yields the result. */
  async function* runCall(
    turn: number,
    call: TranscriptCall,
    signal: AbortSignal,
  ): AsyncGenerator<RuntimeEvent, ToolAnswer> {
    const base = { turn, position: call.position, callId: call.callId, name: call.name };
    yield { type: "tool_call", ...base, arguments: call.arguments };
    const invocation = await executor.invoke({ ...base, arguments: call.arguments }, { signal });
    let answer: ToolAnswer;
    if (invocation.kind === "pending_approval") {
      yield { type: "approval_required", ...base, approval: invocation.approval };
      answer = await invocation.wait(signal);
    } else {
      answer = { status: invocation.status, content: invocation.content };
    }
    logger.info({ ...base, status: answer.status }, "tool result");
    yield { type: "tool_result", ...base, status: answer.status, content: answer.content };
    return answer;
  }

  /** Records a turn's results after its assistant message, in position order. */
  function recordResults(turn: number, calls: TranscriptCall[], answers: Map<string, ToolAnswer>) {
    for (const call of [...calls].sort((a, b) => a.position - b.position)) {
      const answer = answers.get(call.callId);
      if (answer) transcript.push(toolResultItem(turn, call, answer.content));
    }
  }

  async function* run(text: string | undefined, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const pending = unansweredOf(transcript);
    if (pending) {
      const answers = new Map<string, ToolAnswer>();
      for (const call of pending.calls) answers.set(call.callId, yield* runCall(pending.turn, call, signal));
      recordResults(pending.turn, pending.calls, answers);
    }
    if (state.turn >= maxTurns) {
      yield { type: "error", kind: "limit_exceeded", message: `the session reached maxTurns (${maxTurns})` };
      return;
    }
    // A thread that ends with the model's calls answered but the turn failed goes on in a new thread.
    for (let input = text; (yield* runThread(input, signal)) === "continue"; input = undefined);
  }

  /**
   * One Codex thread: the transcript, then a turn with `text` (or none, to continue). Ends "continue"
   * when Codex failed the turn after the model's answer was whole and each of its calls answered:
   * Codex refuses an answer cut off at the token limit (`Incomplete response returned`) after
   * answering a call whose arguments it cannot parse itself. The answer is recorded as any other, and
   * the model is asked next from the transcript, which holds Core's answers, as a resumed session is.
   */
  async function* runThread(
    text: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<RuntimeEvent, "done" | "continue"> {
    const inbox = new Inbox<Received>();
    const started = ThreadStarted.parse(
      await host.request(
        "thread/start",
        {
          model: options.model,
          baseInstructions: init.system,
          ephemeral: true,
          experimentalRawEvents: true,
          sandbox: "read-only",
          approvalPolicy: "on-request",
          dynamicTools,
        },
        signal,
      ),
    );
    const threadId = started.thread.id;
    // Codex's exit stops whatever the run waits on (the executor, an approval, the inbox) at once.
    const died = new AbortController();
    let exit: ExitInfo | undefined;
    const waiting = AbortSignal.any([signal, died.signal]);
    const detach = host.attach(threadId, {
      notification: (notification) => inbox.push({ kind: "notification", notification }),
      toolCall: (call, answer) => inbox.push({ kind: "tool_call", callId: call.callId, answer }),
      declined: (method) => inbox.push({ kind: "declined", method }),
      exited: (exited) => {
        exit = exited;
        died.abort(new EngineProcessError("unavailable", describeExit("codex", exited), exited));
      },
    });
    let turnId: string | undefined;
    let finished = false;
    try {
      const items = historyItems(transcript);
      if (items.length > 0) await host.request("thread/inject_items", { threadId, items }, signal);
      if (text !== undefined) transcript.push({ role: "user", text });
      // Refusals the relay notes after this mark are this turn's.
      const mark = host.relay.mark;
      const turnStarted = TurnStarted.parse(
        await host.request(
          "turn/start",
          { threadId, input: text === undefined ? [] : [{ type: "text", text, text_elements: [] }] },
          signal,
        ),
      );
      turnId = turnStarted.turn.id;

      // The model answer being received.
      let answerText = "";
      let calls: TranscriptCall[] = [];
      const answers = new Map<string, ToolAnswer>();
      // Codex's requests for a call's result, and results ready before Codex asked.
      const waitingForResult = new Map<string, (result: unknown) => void>();
      let lastError: TurnError | undefined;
      // The turn of the model's latest output item: what Codex asks a person for concerns one of them
      // (Codex also echoes the calls' outputs as items, which belong to no new answer).
      let answering = state.turn;
      // Codex is compacting the thread: the summary it asks the model for is no answer of the session.
      let compacting = false;

      /** Records the model answer received, yields its turn_end; true when a limit ends the run. */
      async function* endAnswer(usage: { inputTokens: number; outputTokens: number }) {
        const turn = state.turn;
        const made = calls.length;
        transcript.push({ role: "assistant", turn, text: answerText, calls });
        recordResults(turn, calls, answers);
        yield {
          type: "turn_end",
          turn,
          text: answerText,
          toolCalls: made,
          final: made === 0,
          usage,
        } as const;
        state.turn += 1;
        state.toolCalls += made;
        answerText = "";
        calls = [];
        const limit =
          made === 0
            ? undefined
            : state.turn >= maxTurns
              ? `maxTurns (${maxTurns})`
              : state.toolCalls >= maxToolCalls
                ? `maxToolCalls (${maxToolCalls})`
                : undefined;
        if (limit)
          yield { type: "error", kind: "limit_exceeded", message: `the session reached ${limit}` } as const;
        return limit !== undefined;
      }

      for (;;) {
        const received = await inbox.next(waiting);
        if (received.kind === "declined") {
          logger.warn({ method: received.method, turn: answering }, "codex asked for a decision: declined");
          options.onDeclined?.({ method: received.method, turn: answering });
          continue;
        }
        if (received.kind === "tool_call") {
          const answer = answers.get(received.callId);
          if (answer) received.answer(codexResult(answer));
          else waitingForResult.set(received.callId, received.answer);
          continue;
        }
        const { notification } = received;
        // The history given to the thread comes back as raw items too, outside the turn.
        if ("turnId" in notification.params && notification.params.turnId !== turnId) continue;
        if (notification.method === "item/started" || notification.method === "item/completed") {
          if (notification.params.item.type !== COMPACTION_ITEM) continue;
          compacting = notification.method === "item/started";
          if (!compacting) logger.info({ turn: state.turn }, "codex compacted the thread");
          continue;
        }
        if (compacting && notification.method.startsWith("rawResponse")) continue;
        if (notification.method === "rawResponseItem/completed") {
          const item = notification.params.item;
          if (item.type === "message" && "role" in item && item.role === "assistant") {
            answering = state.turn;
            const delta = item.content.map((part) => part.text ?? "").join("");
            if (delta) {
              answerText += delta;
              yield { type: "text", turn: state.turn, delta };
            }
          } else if (item.type === "function_call" && "call_id" in item) {
            answering = state.turn;
            const call = {
              position: calls.length,
              callId: item.call_id,
              name: item.name,
              arguments: item.arguments,
            };
            calls.push(call);
            const answer = yield* runCall(state.turn, call, waiting);
            answers.set(call.callId, answer);
            waitingForResult.get(call.callId)?.(codexResult(answer));
            waitingForResult.delete(call.callId);
          }
        } else if (notification.method === "rawResponse/completed") {
          const usage = notification.params.usage;
          if (
            yield* endAnswer({ inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0 })
          )
            return "done";
        } else if (notification.method === "error") {
          if (!notification.params.willRetry) lastError = notification.params.error;
        } else if (notification.method === "turn/completed") {
          finished = true;
          const { status, error } = notification.params.turn;
          if (status === "completed") return "done";
          if (status === "failed" && calls.length > 0 && calls.every((call) => answers.has(call.callId))) {
            logger.info(
              { turn: state.turn, error: (error ?? lastError)?.message },
              "codex failed a turn whose calls are answered: continuing",
            );
            // Codex reports no usage of an answer it refused (the model proxy meters it all the same).
            return (yield* endAnswer({ inputTokens: 0, outputTokens: 0 })) ? "done" : "continue";
          }
          const failure = error ?? lastError;
          yield failure
            ? turnFailure(failure, host.relay.refusedSince(mark, threadId)?.status)
            : { type: "error", kind: "internal", message: `codex ended the turn ${status}` };
          return "done";
        }
      }
    } catch (error) {
      if (exit && !signal.aborted)
        throw new EngineProcessError("unavailable", describeExit("codex", exit), exit);
      throw error;
    } finally {
      detach();
      // A run that stops before Codex finished its turn (abort, a limit) stops the turn too.
      if (turnId && !finished) void host.request("turn/interrupt", { threadId, turnId }).catch(() => {});
      void host.request("thread/unsubscribe", { threadId }).catch(() => {});
    }
  }

  return sessionSend({
    run,
    // A Codex that exited is named by its exit code and stderr tail.
    errorEvent: (error, signal) =>
      error instanceof EngineProcessError && error.exit && !signal.aborted
        ? { type: "error", kind: "unavailable", message: describeExit("codex", error.exit) }
        : errorEvent(error, signal),
    logger,
  });
}
