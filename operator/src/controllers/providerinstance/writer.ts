/**
 * What the ProviderInstance reconciler's applier does to the world, as a small port (a pure planner,
 * a thin applier over this writer): the real one over the API server ({@link kubeProviderInstanceWriter});
 * an in-memory one for tests (in-memory-writer.ts).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { PatchStrategy } from "@kubernetes/client-node";
import { PROVIDER_INSTANCE, type ProviderInstance } from "../../api/kinds.ts";
import { FIELD_MANAGER } from "../../api/well-known.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { writeStatusIfChanged } from "../../kube/runtime/status.ts";
import type { ProviderInstanceStatus } from "./plan.ts";

/** The applier's side effects. Every method throws the API server's error; the work queue retries. */
export interface ProviderInstanceWriter {
  /** Server-side applies `object` as FIELD_MANAGER (forced); returns the object as the API server holds it. */
  apply<T extends KubernetesObject>(object: T): Promise<T>;
  /**
   * Writes `status` unless it equals the ProviderInstance's, guarded by its resourceVersion (409
   * Conflict when stale).
   */
  writeStatus(provider: ProviderInstance, status: ProviderInstanceStatus): Promise<void>;
}

/** The writer over the API server. */
export function kubeProviderInstanceWriter(clients: KubeClients): ProviderInstanceWriter {
  return {
    async apply(object) {
      return await clients.objects.patch(
        object,
        undefined,
        undefined,
        FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      );
    },
    async writeStatus(provider, status) {
      await writeStatusIfChanged(clients, PROVIDER_INSTANCE, provider, status);
    },
  };
}
