/**
 * One agent pod's work, start to end: fetch the session from the gateway, rebuild the conversation,
 * let the engine run, report to the gateway, and say which exit code the process should have.
 *   - a turn's text that comes with tool calls → `assistant_text`, posted before the first call runs (so
 *     it is in the transcript even when the pod is released during an approval wait);
 *   - the model's last answer → `final_answer` with its text and this pod's token usage → exit 0;
 *   - an engine or gateway error → `error` event (best effort) → exit 1, or exit 2 when the error is
 *     final — a limit reached, the model endpoint refusing the request as such (4xx other than 429),
 *     or the endpoint saying a retry cannot succeed (`x-should-retry: false`, the engine's `final`) —
 *     so the operator does not start a pod that would meet the same refusal;
 *   - a compaction of what the model sees → `compaction` event (best effort), so the transcript marks
 *     where it happened and the session's status counts it;
 *   - approvals still undecided after `limits.holdPodForSeconds` → the run is aborted, the event
 *     `released` is posted, exit 0: the pod is released, the session stays AwaitingApproval, and a new
 *     pod resumes from the stored history once the Approval settles;
 *   - stopped by `signal` (SIGTERM: the pod is deleted) → no event, exit 0, since a new pod resumes the
 *     session from its history.
 */

import type { Logger } from "pino";
import type { AgentSessionView, GatewayClient } from "./gateway-client.ts";
import type { AgentRuntime, RuntimeEvent, RuntimeSession, TokenUsage } from "./runtime.ts";
import { planResume } from "./transcript.ts";

/** Exit code of a run that failed for a reason a new pod would meet again (the operator does not retry it). */
export const EXIT_FINAL = 2;

/** Error kinds that are final: limits, and model refusals other than overload (DESIGN §9: no retry for 4xx). */
const FINAL_ERROR_KINDS = new Set([
  "limit_exceeded",
  "invalid_arguments",
  "not_found",
  "forbidden",
  "conflict",
]);

/** Inputs of `runAgent`; `createRuntime` builds the engine once the session (model, limits) is known. */
export interface RunAgentOptions {
  gateway: GatewayClient;
  createRuntime(session: AgentSessionView): AgentRuntime;
  logger: Logger;
  signal: AbortSignal;
}

function errorText(error: unknown): { kind: string; message: string } {
  const kind = (error as { kind?: unknown }).kind;
  return {
    kind: typeof kind === "string" ? kind : "internal",
    message: error instanceof Error ? error.message : String(error),
  };
}

/** Runs the session once; resolves to the process exit code (0, 1, or {@link EXIT_FINAL}). Never throws. */
export async function runAgent(options: RunAgentOptions): Promise<number> {
  const { gateway, logger, signal } = options;
  let lastTurn = 0;
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };

  /**
   * Posts the error (best effort) and gives the exit code: 2 when a new pod would fail the same way —
   * the engine said so (`final`) or the kind is final.
   */
  async function reportError(kind: string, message: string, final = false): Promise<number> {
    logger.error({ kind, message }, "agent run failed");
    try {
      await gateway.postEvent({
        kind: "error",
        turn: lastTurn,
        text: `${kind}: ${message}`.slice(0, 65_536),
        usage,
      });
    } catch (error) {
      logger.error({ ...errorText(error) }, "could not report the error to the gateway");
    }
    return final || FINAL_ERROR_KINDS.has(kind) ? EXIT_FINAL : 1;
  }

  try {
    const session = await gateway.getSession(signal);
    const log = logger.child({ namespace: session.namespace, name: session.name, sessionUID: session.uid });
    const plan = planResume(session);
    if (plan.skipped > 0)
      log.warn({ skipped: plan.skipped }, "history entries with an unexpected payload were skipped");
    if (plan.done) {
      log.info("every message is answered; nothing to do");
      return 0;
    }
    log.info({ historyItems: plan.history.length, resuming: plan.next === undefined }, "session loaded");
    const runtime = options.createRuntime(session);
    const conversation = runtime.createSession({
      subject: session.subject,
      system: session.instructions,
      tools: session.tools,
      history: plan.history,
    });
    let finalText: string | undefined;
    const textOfTurn = new Map<number, string>();
    const hold = holdFor(session.limits.holdPodForSeconds, conversation);
    try {
      for await (const event of conversation.send(plan.next, { signal })) {
        hold.observe(event);
        if (event.type === "text") {
          textOfTurn.set(event.turn, (textOfTurn.get(event.turn) ?? "") + event.delta);
        } else if (event.type === "tool_call") {
          const text = textOfTurn.get(event.turn);
          if (text) {
            textOfTurn.delete(event.turn);
            await gateway.postEvent(
              { kind: "assistant_text", turn: event.turn, text: text.slice(0, 65_536) },
              signal,
            );
          }
        } else if (event.type === "compaction") {
          const { type: _, turn, ...compaction } = event;
          log.info({ turn, ...compaction }, "context compacted");
          // Best effort: the mark is for people reading the transcript; the run does not depend on it.
          await gateway
            .postEvent({ kind: "compaction", turn, compaction }, signal)
            .catch((error: unknown) => log.warn({ ...errorText(error) }, "could not report the compaction"));
        } else if (event.type === "turn_end") {
          lastTurn = event.turn;
          usage.inputTokens += event.usage.inputTokens;
          usage.outputTokens += event.usage.outputTokens;
          if (event.final) finalText = event.text;
        } else if (event.type === "error") {
          if (hold.released) {
            // Tell the operator this exit is a release, not a run that ended without an answer.
            await gateway.postEvent({ kind: "released", turn: lastTurn }, new AbortController().signal);
            log.info(
              { approvals: hold.released, holdPodForSeconds: session.limits.holdPodForSeconds },
              "released while awaiting approval; a new pod will resume the session once it is decided",
            );
            return 0;
          }
          if (signal.aborted) {
            log.info("stopped by signal; a new pod will resume the session");
            return 0;
          }
          return await reportError(event.kind, event.message, event.final === true);
        }
      }
    } finally {
      hold.stop();
    }
    if (finalText === undefined)
      return await reportError("internal", "the engine ended without a final answer");
    await gateway.postEvent(
      { kind: "final_answer", turn: lastTurn, text: finalText.slice(0, 65_536), usage },
      signal,
    );
    log.info({ turn: lastTurn, ...usage }, "final answer posted");
    return 0;
  } catch (error) {
    if (signal.aborted) {
      logger.info("stopped by signal; a new pod will resume the session");
      return 0;
    }
    const { kind, message } = errorText(error);
    return await reportError(kind, message);
  }
}

/** The pod hold of one run: see {@link holdFor}. */
interface PodHold {
  /** Feeds every event of the run. */
  observe(event: RuntimeEvent): void;
  /** The undecided Approvals once the hold ran out and the run was aborted; undefined before. */
  readonly released: string[] | undefined;
  stop(): void;
}

/**
 * Waits at most `holdSeconds` (undefined: without end) while approvals are undecided: the clock starts
 * when the first `approval_required` of a quiet spell arrives and stops when every such call has its
 * `tool_result`; when it runs out, `conversation` is aborted.
 */
function holdFor(holdSeconds: number | undefined, conversation: RuntimeSession): PodHold {
  const undecided = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let released: string[] | undefined;
  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return {
    observe(event) {
      const key = "position" in event ? `${event.turn}:${event.position}` : "";
      if (event.type === "approval_required") {
        undecided.set(key, event.approval);
        if (holdSeconds !== undefined && timer === undefined) {
          timer = setTimeout(() => {
            released = [...undecided.values()];
            conversation.abort();
          }, holdSeconds * 1000);
        }
      } else if (event.type === "tool_result" && undecided.delete(key) && undecided.size === 0) {
        stop();
      }
    },
    get released() {
      return released;
    },
    stop,
  };
}
