/**
 * Typed errors for Core and the store: every error carries a kind. The kinds are the shared
 * error-kind list of the provider contract, so an error can travel to the model, a condition or an
 * audit row without translation.
 */
import type { ErrorKind } from "@gatehouse/provider-sdk";

/**
 * An error with a `kind` from the shared list, a message a human can act on, and the cause.
 * Example: `new GatehouseError("conflict", "Approval apr-… exists with a different spec", { cause })`.
 */
export class GatehouseError extends Error {
  readonly kind: ErrorKind;

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatehouseError";
    this.kind = kind;
  }
}

/** True when `error` is a {@link GatehouseError}, optionally of the given kind. */
export function isGatehouseError(error: unknown, kind?: ErrorKind): error is GatehouseError {
  return error instanceof GatehouseError && (kind === undefined || error.kind === kind);
}
