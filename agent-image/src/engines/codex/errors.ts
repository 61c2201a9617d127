/**
 * What a failed Codex turn becomes: an `error` event with a kind from the shared list. Codex reports
 * a model request that failed for good (after its own retries) as the turn's error, with the upstream
 * HTTP status inside `codexErrorInfo` on connection and stream failures; a refused request's status
 * comes from the loopback relay (status-relay.ts).
 */
import { BUDGET_EXCEEDED } from "@gatehouse/operator/agent-protocol";
import type { RuntimeEvent } from "../../runtime.ts";
import { kindOfStatus } from "../model-errors.ts";
import type { TurnError } from "./protocol.ts";

type ErrorEvent = Extract<RuntimeEvent, { type: "error" }>;

/** The first `httpStatusCode` inside Codex's error info, if any. */
function statusOf(info: unknown): number | undefined {
  if (info === null || typeof info !== "object") return undefined;
  for (const [key, value] of Object.entries(info)) {
    if (key === "httpStatusCode" && typeof value === "number") return value;
    const nested = statusOf(value);
    if (nested !== undefined) return nested;
  }
  return undefined;
}

/** The shared kind of an OpenAI error body's `type`, and whether a new pod would meet it again. */
const ERROR_TYPES: Record<string, { kind: string; final: boolean }> = {
  invalid_request_error: { kind: "invalid_arguments", final: true },
  authentication_error: { kind: "forbidden", final: true },
  permission_error: { kind: "forbidden", final: true },
  not_found_error: { kind: "not_found", final: true },
  rate_limit_error: { kind: "unavailable", final: false },
  server_error: { kind: "unavailable", final: false },
};

/**
 * A request the endpoint refused, as Codex reports it when it does not retry (a 4xx but 429): the
 * response body itself, an OpenAI error object, without the HTTP status.
 */
function refusalOf(message: string): ErrorEvent | undefined {
  let body: unknown;
  try {
    body = JSON.parse(message);
  } catch {
    return undefined;
  }
  const parsed = body as { error?: { type?: unknown; message?: unknown } } | null;
  const type = parsed?.error?.type;
  if (typeof type !== "string") return undefined;
  const known = ERROR_TYPES[type] ?? { kind: "invalid_arguments", final: true };
  const text = typeof parsed?.error?.message === "string" ? parsed.error.message : message;
  return {
    type: "error",
    kind: known.kind,
    message: `model endpoint refused the request (${type}): ${text}`,
    ...(known.final ? { final: true as const } : {}),
  };
}

/**
 * The error event of a turn that failed with `error`; `refusedStatus` is the status the loopback
 * relay saw the endpoint refuse this turn's request with, which Codex does not report itself.
 */
export function turnFailure(error: TurnError, refusedStatus?: number): ErrorEvent {
  const message = [error.message, error.additionalDetails].filter(Boolean).join(": ");
  if (message.includes(BUDGET_EXCEEDED.code) || message.includes(BUDGET_EXCEEDED.type))
    return { type: "error", kind: "limit_exceeded", message, final: true };
  const info = error.codexErrorInfo;
  const refusal = refusalOf(error.message);
  const status = statusOf(info) ?? refusedStatus;
  if (status !== undefined) {
    // A 4xx other than 429 refuses the request itself: a new pod would send the same (as the builtin engine).
    const final = status >= 400 && status < 500 && status !== 429;
    return {
      type: "error",
      kind: kindOfStatus(status),
      message: `model endpoint answered HTTP ${status}: ${refusal?.message ?? message}`,
      ...(final ? { final: true as const } : {}),
    };
  }
  if (refusal) return refusal;
  if (info === "badRequest" || info === "contextWindowExceeded")
    return { type: "error", kind: "invalid_arguments", message, final: true };
  if (info === "unauthorized") return { type: "error", kind: "forbidden", message, final: true };
  if (typeof info === "object" && info !== null)
    // A connection that failed without an HTTP status: the endpoint could not be reached.
    return { type: "error", kind: "unavailable", message: `model endpoint unreachable: ${message}` };
  if (info === "serverOverloaded" || info === "internalServerError" || info === "rateLimitExceeded")
    return { type: "error", kind: "unavailable", message };
  return { type: "error", kind: "internal", message };
}

/** Maps whatever stopped a run to an `error` event. */
export function errorEvent(error: unknown, signal: AbortSignal): ErrorEvent {
  if (signal.aborted) return { type: "error", kind: "aborted", message: "the run was aborted" };
  const kind = (error as { kind?: unknown }).kind;
  return {
    type: "error",
    kind: typeof kind === "string" ? kind : "internal",
    message: error instanceof Error ? error.message : String(error),
  };
}
