/**
 * The `pi` engine (DESIGN §9): Pi (`pi --mode rpc`) runs the model loop; Gatehouse keeps the state.
 *   - each `send` loads the session's transcript into Pi as a fresh session file (host.ts) — Pi holds
 *     memory only — and asks with the user's text, or, continuing, with a marker the model never sees;
 *   - Pi knows only the session's capability tools (our extension, `--no-builtin-tools`); when the
 *     model calls them, the calls of an answer go to the ToolExecutor here, one after another in
 *     position order, each once, with the model's raw arguments string (rebuilt from Pi's stream);
 *     approvals are all proposed before the first is waited for — through the executor, never a Pi
 *     dialog —, and Pi's executions get the answers once the batch is done;
 *   - calls the history left without a result are finished here before Pi starts;
 *   - `maxTurns` and `maxToolCalls` as the builtin engine: the batch that reaches a limit tells Pi to
 *     stop (`terminate`), `tool_choice: "none"` once the calls are used up;
 *   - Pi's own retries take failed model requests (settings.json); a request that failed for good ends
 *     the run with an error of the shared kinds (errors.ts); a Pi that exits ends it with its exit
 *     code and stderr tail.
 */
import type { Logger } from "pino";
import {
  type AgentRuntime,
  type CreateSessionOptions,
  type RuntimeEvent,
  type RuntimeSession,
  type ToolAnswer,
  type ToolExecutor,
  type ToolInvocation,
  type TranscriptCall,
  type TranscriptItem,
  toolResultItem,
} from "../../runtime.ts";
import { sessionSend } from "../session-send.ts";
import { describeExit, EngineProcessError } from "../subprocess/child.ts";
import { MODEL_ID, PROVIDER } from "./config-files.ts";
import { errorEvent } from "./errors.ts";
import type { PiHosts } from "./host.ts";
import { PiRun } from "./run.ts";
import { replayedArguments, sessionFileText } from "./session-file.ts";

export interface PiRuntimeOptions {
  /** Where runs get their Pi (a host, one run at a time, or a pool of hosts). */
  host: PiHosts;
  /** The model name the requests carry. */
  model: string;
  tools: ToolExecutor;
  maxTurns: number;
  maxToolCalls: number;
  logger: Logger;
}

/** The calls of the last assistant message that the history left without a result. */
function unansweredOf(history: TranscriptItem[]) {
  const last = history.findLastIndex((item) => item.role === "assistant");
  const assistant = history[last];
  if (assistant?.role !== "assistant" || assistant.calls.length === 0) return undefined;
  const known = new Map<number, string>();
  for (const item of history.slice(last + 1))
    if (item.role === "tool") known.set(item.position, item.content);
  if (assistant.calls.every((call) => known.has(call.position))) return undefined;
  return { turn: assistant.turn, calls: assistant.calls, known };
}

/** The Pi engine. */
export function createPiRuntime(options: PiRuntimeOptions): AgentRuntime {
  return { createSession: (init) => createPiSession(options, init) };
}

function createPiSession(options: PiRuntimeOptions, init: CreateSessionOptions): RuntimeSession {
  const { tools: executor, maxTurns, maxToolCalls } = options;
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
  const logger = options.logger.child({ engine: "pi", model: options.model });

  /**
   * Runs `calls` through the executor (those with a `known` result excepted), in position order, all
   * proposed before any approval is waited for; records the results in the transcript (a turn's
   * results in position order) and returns every call's answer by position.
   */
  async function* runCalls(
    turn: number,
    calls: TranscriptCall[],
    signal: AbortSignal,
    known: ReadonlyMap<number, string> = new Map(),
  ): AsyncGenerator<RuntimeEvent, Map<number, ToolAnswer>> {
    const answers = new Map<number, ToolAnswer>();
    const waiting: {
      call: TranscriptCall;
      invocation: Extract<ToolInvocation, { kind: "pending_approval" }>;
    }[] = [];
    const base = (call: TranscriptCall) => ({
      turn,
      position: call.position,
      callId: call.callId,
      name: call.name,
    });
    const answered = (call: TranscriptCall, answer: ToolAnswer): RuntimeEvent => {
      answers.set(call.position, answer);
      logger.info({ ...base(call), status: answer.status }, "tool result");
      return { type: "tool_result", ...base(call), status: answer.status, content: answer.content };
    };
    for (const call of [...calls].sort((a, b) => a.position - b.position)) {
      const result = known.get(call.position);
      if (result !== undefined) {
        answers.set(call.position, { status: "recorded", content: result });
        continue;
      }
      yield { type: "tool_call", ...base(call), arguments: call.arguments };
      const invocation = await executor.invoke({ ...base(call), arguments: call.arguments }, { signal });
      if (invocation.kind === "pending_approval") {
        yield { type: "approval_required", ...base(call), approval: invocation.approval };
        waiting.push({ call, invocation });
      } else {
        yield answered(call, { status: invocation.status, content: invocation.content });
      }
    }
    for (const { call, invocation } of waiting) yield answered(call, await invocation.wait(signal));
    // The turn's results follow its assistant message, in position order.
    const at = transcript.findLastIndex((item) => item.role === "assistant" && item.turn === turn);
    transcript.splice(at + 1);
    for (const call of [...calls].sort((a, b) => a.position - b.position)) {
      transcript.push(toolResultItem(turn, call, answers.get(call.position)!.content));
    }
    return answers;
  }

  async function* run(text: string | undefined, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const pending = unansweredOf(transcript);
    if (pending) yield* runCalls(pending.turn, pending.calls, signal, pending.known);
    if (state.turn >= maxTurns) {
      yield { type: "error", kind: "limit_exceeded", message: `the session reached maxTurns (${maxTurns})` };
      return;
    }
    const { host, release } = await options.host.acquire();
    const piRun = new PiRun(host, signal);
    try {
      // The user's text reaches Pi as the prompt, so the file holds the transcript before it.
      await host.load(
        sessionFileText(transcript, { provider: PROVIDER, model: MODEL_ID, cwd: "/" }),
        {
          system: init.system,
          model: options.model,
          tools: init.tools,
          toolChoiceNone: state.toolCalls >= maxToolCalls,
          callArguments: transcript.flatMap((item) =>
            item.role === "assistant" ? item.calls.map((call) => replayedArguments(call.arguments)) : [],
          ),
        },
        piRun.sink,
        signal,
      );
      if (text !== undefined) transcript.push({ role: "user", text });
      yield* piRun.drive(text, { state, maxTurns, maxToolCalls, transcript, runCalls, logger });
    } finally {
      // The run's last event need not wait for Pi to go idle; the next run does (the host stays taken).
      void piRun.settle(logger).finally(release);
    }
  }

  return sessionSend({
    run,
    // A Pi that exited is named by its exit code and stderr tail, not by what its end made the run throw.
    errorEvent: (error, signal) =>
      error instanceof EngineProcessError && error.exit && !signal.aborted
        ? { type: "error", kind: "unavailable", message: describeExit("pi", error.exit) }
        : errorEvent(error, signal),
    logger,
  });
}
