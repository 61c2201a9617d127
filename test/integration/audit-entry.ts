/** Audit entries for the integration tests: numbered, with a distinct execution id and timestamp each. */
import type { AuditEntry } from "../../operator/src/core/ports.ts";

/** Entry number `n`; `overrides` replace fields. Timestamps are 1.7e15 µs + n (November 2023). */
export function auditEntry(n: number, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    kind: "execution.finished",
    actor: "alice",
    outcome: "success",
    sessionUid: "11111111-2222-3333-4444-555555555555",
    executionId: `exec-${n}`,
    atMicros: 1_700_000_000_000_000 + n,
    payload: { n },
    ...overrides,
  };
}
