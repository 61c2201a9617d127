/**
 * The `erp` provider's `/v1/health`: `ok` while the ERP answers its health route within the deadline,
 * `degraded` with the reason otherwise (the provider itself still serves, but reads will fail
 * `unavailable`), so the ProviderInstance's Healthy condition tells the truth about the ERP.
 */
import type { Health } from "@gatehouse/provider-sdk";
import type { ErpClient } from "./erp-client.ts";

/** A health function for `serveProvider`; `timeoutMs` bounds the ERP ping (default 2000 ms). */
export function erpHealth(erp: ErpClient, timeoutMs = 2_000): () => Promise<Health> {
  return async () => {
    try {
      await erp.ping(AbortSignal.timeout(timeoutMs));
      return { status: "ok" };
    } catch (error) {
      return { status: "degraded", message: error instanceof Error ? error.message : String(error) };
    }
  };
}
