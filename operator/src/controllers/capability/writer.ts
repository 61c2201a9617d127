/**
 * What the capability reconciler's applier does to the world, as a small port (a pure planner, a thin
 * applier over this writer): the real one over the API server ({@link kubeCapabilityWriter}); an
 * in-memory one for tests (in-memory-writer.ts).
 */
import type { Capability } from "../../api/kinds.ts";
import { CAPABILITY } from "../../api/kinds.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { writeStatusIfChanged } from "../../kube/runtime/status.ts";
import type { CapabilityStatus } from "./plan.ts";

/** The applier's side effects. Every method throws its dependency's error; the work queue retries. */
export interface CapabilityWriter {
  /**
   * Writes `status` unless it equals the Capability's, guarded by its resourceVersion (409 Conflict
   * when stale). Returns the Capability as written (as given when nothing changed).
   */
  writeStatus(capability: Capability, status: CapabilityStatus): Promise<Capability>;
}

/** What the real writer uses. */
export interface KubeCapabilityWriterDeps {
  clients: KubeClients;
}

/** The writer over the API server (the status subresource). */
export function kubeCapabilityWriter(deps: KubeCapabilityWriterDeps): CapabilityWriter {
  return {
    async writeStatus(capability, status) {
      return (await writeStatusIfChanged(deps.clients, CAPABILITY, capability, status)) ?? capability;
    },
  };
}
