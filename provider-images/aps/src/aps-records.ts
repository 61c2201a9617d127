/**
 * What the APS itself knows, asked by calls that act for nobody — so they go as the provider's own
 * integration user (`APS_SERVICE_USER`), not as a bound account:
 *   - `statusOf`: the APS's record of an idempotency key, for `GET /v1/executions/{key}` when the
 *     provider's memory has none (its answer was lost, or the provider restarted);
 *   - `targets.plan`: a plan's current version, for `GET /v1/targets/plan/{id}` (Core's re-check at
 *     dispatch). The current version is the plan's newest version number: an approved publish of draft N
 *     goes Stale when a newer draft or publish moved the plan past N.
 */
import type { ExecutionStatus } from "@gatehouse/provider-sdk";
import type { ServeProviderOptions } from "@gatehouse/provider-sdk/server";
import type { ApsClient } from "./aps-client.ts";
import { receiptOfRecord } from "./receipts.ts";

/** The status reader: the recorded outcome of `key`, or undefined when the APS never saw it. */
export function apsStatusOf(
  aps: ApsClient,
  serviceUser: string,
): (idempotencyKey: string) => Promise<ExecutionStatus | undefined> {
  return async (idempotencyKey) => {
    const record = await aps.operation(idempotencyKey, { user: serviceUser });
    if (!record) return undefined;
    const response = receiptOfRecord(record);
    return { idempotencyKey, status: response.status, response };
  };
}

/** The target readers: `plan` → the plan's newest version number as a string, undefined for no such plan. */
export function apsTargets(
  aps: ApsClient,
  serviceUser: string,
): NonNullable<ServeProviderOptions["targets"]> {
  return {
    plan: async (planId) => {
      const versions = await aps.planVersions(planId, { user: serviceUser });
      return versions ? String(versions.latestVersion) : undefined;
    },
  };
}
