/**
 * The `aps` provider's capability handlers: each turns a validated InvokeRequest into one APS call.
 * The acting APS user is the bound business account when Core sends one, else the subject's user name;
 * the idempotency key is passed on so the APS itself deduplicates drafts and publishes.
 */
import type { InvokeRequest } from "@gatehouse/provider-sdk";
import type { CapabilityHandler } from "@gatehouse/provider-sdk/server";
import type { ApsClient } from "./aps-client.ts";

// Arguments were checked against the capability's strict inputSchema by the SDK before dispatch.
type ReadArguments = { planId: string };
type DraftArguments = { planId: string; shiftDays: number };
type PublishArguments = { planId: string; version: number };

/** The APS user a request acts as: `account` (identity binding) or the subject's user. */
export function actingUser(request: InvokeRequest): string {
  return request.account ?? request.subject.user;
}

/** Handlers for `aps.schedule.read`, `aps.schedule.draft` and `aps.schedule.publish`. */
export function apsHandlers(aps: ApsClient): Record<string, CapabilityHandler> {
  return {
    "aps.schedule.read": async (request, { signal }) => {
      const { planId } = request.arguments as ReadArguments;
      const plan = await aps.readPlan(planId, { user: actingUser(request), signal });
      return { result: plan };
    },
    "aps.schedule.draft": async (request, { signal }) => {
      const { planId, shiftDays } = request.arguments as DraftArguments;
      const draft = await aps.createDraft(planId, shiftDays, {
        user: actingUser(request),
        idempotencyKey: request.idempotencyKey,
        signal,
      });
      return { result: draft, evidence: { system: "aps", reference: `${draft.id}@v${draft.version}` } };
    },
    "aps.schedule.publish": async (request, { signal }) => {
      const { planId, version } = request.arguments as PublishArguments;
      const publication = await aps.publish(planId, version, {
        user: actingUser(request),
        idempotencyKey: request.idempotencyKey,
        signal,
      });
      return { result: publication, evidence: { system: "aps", reference: publication.publicationId } };
    },
  };
}
