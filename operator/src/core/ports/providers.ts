/** Budgets and providers: the session's counted limits and the provider a call goes to; ../ports.ts gathers every port. */

import type { ExecutionStatus, InvokeRequest, InvokeResponse } from "@gatehouse/provider-sdk";
import type { ProviderRef, SessionLimits } from "./sessions.ts";

// ---------------------------------------------------------------------------------------------------
// Budgets

/** What a reservation holds of a session's limits: one tool call (`maxToolCalls`) or one write (`maxWrites`). */
export type BudgetResource = "tool_call" | "write";

/**
 * A request to reserve, for one execution identity, a tool call and (for a write capability) a write
 * of the session's limits, before anything is approved or executed.
 */
export interface BudgetRequest {
  sessionUid: string;
  /** The execution identity (`core/execution-identity.ts`); a repeat of it reserves nothing new. */
  executionId: string;
  /** Whether the call needs a write (`maxWrites`); every call needs a tool call (`maxToolCalls`). */
  write: boolean;
  limits: Pick<SessionLimits, "maxToolCalls" | "maxWrites">;
  atMicros: number;
}

/**
 * Result of {@link BudgetLedger.reserve}: `reserved` (now or by an earlier call of the same identity),
 * or `exceeded` with the limit that has no room left — then nothing was reserved.
 */
export type BudgetReservation =
  | { kind: "reserved" }
  | { kind: "exceeded"; resource: BudgetResource; limit: number };

/**
 * The sessions' budgets (backed by Postgres `budget_reservations`): one reservation per execution
 * identity and resource, counted against the session's limits. A reservation is `reserved` until the
 * call's fate is known, `consumed` once it ran or was handed to approvers, `released` when it turned
 * out to consume nothing; reserved and consumed ones count.
 */
export interface BudgetLedger {
  /**
   * Reserves what `request` needs, atomically per session: of any number of concurrent reserves for
   * one session, never more succeed than the limits leave room for. Idempotent per execution identity:
   * a reservation that exists (not released) is `reserved` again without counting twice; a released
   * one is reserved anew, within the limits.
   */
  reserve(request: BudgetRequest): Promise<BudgetReservation>;
  /** Marks the reservations of `executionId` consumed (they keep counting). Unknown ids: nothing. */
  consume(executionId: string, atMicros: number): Promise<void>;
  /**
   * Releases the reservations of `executionId` — only `resource`'s when given — that are not consumed:
   * they stop counting. Unknown ids: nothing.
   */
  release(executionId: string, atMicros: number, resource?: BudgetResource): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// Providers

/**
 * What happened to one provider call. The adapter classifies transport failures:
 * - `answered`: a 2xx with a valid `InvokeResponse` (succeeded or failed; `forbidden` is final);
 * - `not_sent`: the request certainly never reached the provider (connection refused, DNS failure,
 *   grant could not be signed) — safe to report as failed/`unavailable`;
 * - `lost`: it may have reached the provider (timeout, connection reset after sending, 5xx or an
 *   unparseable body) — the outcome is unknown, never failed or succeeded.
 */
export type ProviderCallOutcome =
  | { kind: "answered"; response: InvokeResponse }
  | { kind: "not_sent"; message: string }
  | { kind: "lost"; reason: "timeout" | "connection_lost" | "bad_response"; message: string };

/** What a target query (`GET /v1/targets/{kind}/{id}`) found: the current version, or that the object is gone. */
export type ProviderTargetOutcome =
  | { kind: "answered"; version: string }
  | { kind: "not_found"; message: string }
  | { kind: "unavailable"; message: string };

/** What happened to a status query (`GET /v1/executions/{idempotencyKey}`). */
export type ProviderStatusOutcome =
  | { kind: "answered"; status: ExecutionStatus }
  | { kind: "not_sent"; message: string }
  | { kind: "lost"; message: string };

/**
 * How one provider call is made: its deadline in milliseconds, and the session it serves (a Sidecar
 * provider is reached inside that session's agent pod).
 */
export interface ProviderCallOptions {
  deadlineMs: number;
  sessionUid: string;
}

/** Calls providers (the gateway's HTTP client; it signs the grant from the request, DESIGN §5). */
export interface ProviderClient {
  invoke(
    provider: ProviderRef,
    request: InvokeRequest,
    options: ProviderCallOptions,
  ): Promise<ProviderCallOutcome>;
  status(
    provider: ProviderRef,
    idempotencyKey: string,
    options: ProviderCallOptions,
  ): Promise<ProviderStatusOutcome>;
  /** The current version of business object `kind/id`, as the provider's system reports it now. */
  target(
    provider: ProviderRef,
    target: { kind: string; id: string },
    options: ProviderCallOptions,
  ): Promise<ProviderTargetOutcome>;
}
