/**
 * The `aps` provider's capability handlers: each turns a validated InvokeRequest into one APS call made
 * as the bound business account (`request.account`, which Core sends because the manifest requires
 * identity) — never as the Kubernetes user, so the APS's own rights decide. The idempotency key is
 * passed on so the APS itself deduplicates drafts and publishes.
 */
import { type InvokeRequest, ProviderError } from "@gatehouse/provider-sdk";
import type { CapabilityHandler } from "@gatehouse/provider-sdk/server";
import type { ApsClient } from "./aps-client.ts";
import { draftResult, publishResult } from "./receipts.ts";

// Arguments were checked against the capability's strict inputSchema by the SDK before dispatch.
type ReadArguments = { planId: string };
type DraftArguments = { planId: string; shiftDays: number };
type PublishArguments = { planId: string; version: number };

/**
 * The APS user a request acts as: its bound business account. Throws `ProviderError("forbidden")`
 * without one — acting as nobody, or guessing from the Kubernetes user name, would bypass the binding.
 */
export function actingAccount(request: InvokeRequest): string {
  if (request.account === undefined || request.account === "") {
    throw new ProviderError(
      "forbidden",
      `aps acts only as a bound APS account and the call for ${request.subject.user} carries none ` +
        "(an identity-binding Secret maps Kubernetes users to APS accounts)",
    );
  }
  return request.account;
}

/** Handlers for `aps.schedule.read`, `aps.schedule.draft` and `aps.schedule.publish`. */
export function apsHandlers(aps: ApsClient): Record<string, CapabilityHandler> {
  return {
    "aps.schedule.read": async (request, { signal }) => {
      const { planId } = request.arguments as ReadArguments;
      const plan = await aps.readPlan(planId, { user: actingAccount(request), signal });
      return { result: plan };
    },
    "aps.schedule.draft": async (request, { signal }) => {
      const { planId, shiftDays } = request.arguments as DraftArguments;
      const draft = await aps.createDraft(planId, shiftDays, {
        user: actingAccount(request),
        idempotencyKey: request.idempotencyKey,
        signal,
      });
      return draftResult(draft);
    },
    "aps.schedule.publish": async (request, { signal }) => {
      const { planId, version } = request.arguments as PublishArguments;
      const publication = await aps.publish(planId, version, {
        user: actingAccount(request),
        idempotencyKey: request.idempotencyKey,
        signal,
      });
      return publishResult(publication);
    },
  };
}
