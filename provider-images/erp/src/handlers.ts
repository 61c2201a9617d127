/**
 * The `erp` provider's capability handlers: each turns a validated InvokeRequest into one ERP read as
 * the acting user — the bound business account when Core sends one, else the subject's user name — so
 * the ERP's own authorisation (which plants a user may see) decides.
 */
import type { InvokeRequest } from "@gatehouse/provider-sdk";
import type { CapabilityHandler } from "@gatehouse/provider-sdk/server";
import type { ErpClient } from "./erp-client.ts";

// Arguments were checked against the capability's strict inputSchema by the SDK before dispatch.
type StockArguments = { materialId: string; plant: string };
type MaterialArguments = { materialId: string };

/** The ERP user a request acts as: `account` (identity binding) or the subject's user. */
export function actingUser(request: InvokeRequest): string {
  return request.account ?? request.subject.user;
}

/** Handlers for `erp.material.stock` and `erp.material-master.read`. */
export function erpHandlers(erp: ErpClient): Record<string, CapabilityHandler> {
  return {
    "erp.material.stock": async (request, { signal }) => {
      const { materialId, plant } = request.arguments as StockArguments;
      return { result: await erp.readStock(materialId, plant, { user: actingUser(request), signal }) };
    },
    "erp.material-master.read": async (request, { signal }) => {
      const { materialId } = request.arguments as MaterialArguments;
      return { result: await erp.readMaterial(materialId, { user: actingUser(request), signal }) };
    },
  };
}
