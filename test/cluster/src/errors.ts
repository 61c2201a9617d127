/**
 * Error kinds used across Gatehouse (every error carries a kind); the harness uses the subset that
 * applies to starting and stopping local processes and talking to the local API server.
 */
export type HarnessErrorKind =
  | "invalid_arguments"
  | "unavailable"
  | "timeout"
  | "conflict"
  | "not_found"
  | "forbidden"
  | "internal";

/** A harness failure with a machine-readable `kind`, a message a human can act on, and the cause. */
export class HarnessError extends Error {
  readonly kind: HarnessErrorKind;

  constructor(kind: HarnessErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HarnessError";
    this.kind = kind;
  }
}
