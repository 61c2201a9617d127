/**
 * Builds the non-2xx answers of a provider (`ProtocolError` in `contract.ts`): the kind, its HTTP status
 * and a message saying what to fix, plus the offending fields when a body was refused.
 */
import type { z } from "zod";
import {
  type ProtocolError,
  type ProtocolErrorKind,
  type ProtocolIssue,
  protocolErrorStatus,
} from "./contract.ts";

/** An HTTP status with its `ProtocolError` body. */
export interface ProtocolFailure {
  statusCode: number;
  body: ProtocolError;
}

/** The failure of `kind` with its standard status (400/401/403/404/500). */
export function protocolFailure(
  kind: ProtocolErrorKind,
  message: string,
  issues?: ProtocolIssue[],
): ProtocolFailure {
  const body: ProtocolError = issues && issues.length > 0 ? { kind, message, issues } : { kind, message };
  return { statusCode: protocolErrorStatus[kind], body };
}

/** zod issues as `{path, message}`; the path is dotted (`subject.user`), `(body)` for the body itself. */
export function issuesOf(error: z.ZodError): ProtocolIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.length > 0 ? issue.path.map(String).join(".") : "(body)",
    message: issue.message,
  }));
}

/**
 * The answer to an error fastify raised before a route ran because of the request itself (JSON that does
 * not parse, an empty body, a wrong content type, a body over the limit): the client status fastify chose
 * with kind `invalid_request`. Undefined for anything else, which is a provider bug.
 */
export function httpLayerError(error: unknown): ProtocolFailure | undefined {
  const statusCode = (error as { statusCode?: unknown }).statusCode;
  if (typeof statusCode !== "number" || statusCode < 400 || statusCode > 499) return undefined;
  const detail = error instanceof Error ? error.message : String(error);
  return {
    statusCode,
    body: {
      kind: "invalid_request",
      message: `the request was refused before reaching the provider: ${detail}; send a JSON body with content-type application/json`,
      issues: [{ path: "(body)", message: detail }],
    },
  };
}
