/**
 * What the gateway answers for a request that failed: a session over its request limits 429 with
 * `Retry-After` (session-limits.ts), a typed error by its kind (403, 400, 404, 409, 503; else 500), a
 * body zod refused 400, fastify's own refusal of a body (too large 413, not JSON 400) with its status,
 * the database unavailable 503 `unavailable` — which the agent retries with the same execution
 * identity, so nothing runs twice, where a 500 would end its tool call (store/unavailable.ts) — and
 * anything else 500 without its details.
 */
import { z } from "zod";
import { isGatehouseError } from "../core/errors.ts";
import { isDatabaseUnavailable } from "../store/unavailable.ts";
import { isSessionRateLimited } from "./session-limits.ts";

const STATUS_OF_KIND: Record<string, number> = {
  forbidden: 403,
  invalid_arguments: 400,
  not_found: 404,
  conflict: 409,
  unavailable: 503,
};

/** The answer to `error`: status code, body, and the level to log it at (none for a typed refusal). */
export interface ErrorReply {
  code: number;
  body: { kind: string; message: string };
  /** Headers of the answer: `retry-after` (seconds) on a 429. */
  headers?: Record<string, string>;
  log?: "warn" | "error";
}

/** See the file comment. Pure. */
export function errorReply(error: unknown): ErrorReply {
  if (isSessionRateLimited(error)) {
    return {
      code: 429,
      body: { kind: error.kind, message: error.message },
      headers: { "retry-after": String(error.retryAfterSeconds) },
    };
  }
  if (isGatehouseError(error)) {
    return { code: STATUS_OF_KIND[error.kind] ?? 500, body: { kind: error.kind, message: error.message } };
  }
  if (error instanceof z.ZodError) {
    return { code: 400, body: { kind: "invalid_arguments", message: z.prettifyError(error) } };
  }
  const status = (error as { statusCode?: unknown } | undefined)?.statusCode;
  if (error instanceof Error && typeof status === "number" && status >= 400 && status < 500) {
    // fastify's own refusals: a body that is not JSON (400), too large (413), of another type (415).
    return { code: status, body: { kind: "invalid_arguments", message: error.message } };
  }
  if (isDatabaseUnavailable(error)) {
    return {
      code: 503,
      body: { kind: "unavailable", message: "The operator's database does not answer; retry shortly." },
      log: "warn",
    };
  }
  return { code: 500, body: { kind: "internal", message: "internal error" }, log: "error" };
}
