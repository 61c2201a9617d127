/**
 * The error a capability handler throws to answer `failed` with a kind.
 * The SDK turns it into `InvokeResponse {status: "failed", errorKind, message}`; any other thrown value
 * is a provider bug and becomes HTTP 500.
 */
import type { ErrorKind } from "./contract.ts";

/** Kinds after which a retry with the same idempotency key may still change the outcome. */
export const retryableKinds: ReadonlySet<ErrorKind> = new Set([
  "unavailable",
  "timeout",
  "unknown_outcome",
  "internal",
]);

/** A failure with a shared error kind, a message a human can act on, and the cause. */
export class ProviderError extends Error {
  readonly kind: ErrorKind;

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ProviderError";
    this.kind = kind;
  }
}
