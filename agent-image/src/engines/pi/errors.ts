/**
 * What a failed Pi run becomes: an `error` event with a kind from the shared list. Pi reports a model
 * request that failed for good (after its own retries) as an assistant message with `stopReason:
 * "error"` and the SDK's message, which starts with the HTTP status when there was one.
 */
import { BUDGET_EXCEEDED } from "@gatehouse/operator/agent-protocol";
import type { RuntimeEvent } from "../../runtime.ts";
import { kindOfStatus } from "../model-errors.ts";

/** The error event for Pi's failed model request `message`. */
export function modelFailure(message: string): Extract<RuntimeEvent, { type: "error" }> {
  if (message.includes(BUDGET_EXCEEDED.code) || message.includes(BUDGET_EXCEEDED.type))
    return { type: "error", kind: "limit_exceeded", message, final: true };
  const status = /^(\d{3})\b/.exec(message.trim());
  if (status) {
    const code = Number(status[1]);
    // A 4xx other than 429 refuses the request itself: a new pod would send the same (as the builtin engine).
    const final = code >= 400 && code < 500 && code !== 429;
    return {
      type: "error",
      kind: kindOfStatus(code),
      message: `model endpoint answered HTTP ${message}`,
      ...(final ? { final: true as const } : {}),
    };
  }
  if (/timed? ?out/i.test(message)) return { type: "error", kind: "timeout", message };
  if (/connect|ECONNREFUSED|ECONNRESET|fetch failed|network/i.test(message))
    return { type: "error", kind: "unavailable", message: `model endpoint unreachable: ${message}` };
  return { type: "error", kind: "internal", message };
}

/** Maps whatever stopped a run to an `error` event. */
export function errorEvent(error: unknown, signal: AbortSignal): Extract<RuntimeEvent, { type: "error" }> {
  if (signal.aborted) return { type: "error", kind: "aborted", message: "the run was aborted" };
  const kind = (error as { kind?: unknown }).kind;
  return {
    type: "error",
    kind: typeof kind === "string" ? kind : "internal",
    message: error instanceof Error ? error.message : String(error),
  };
}
