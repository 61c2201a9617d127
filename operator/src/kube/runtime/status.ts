/**
 * Writes a custom resource's status through the `/status` subresource with a JSON merge patch
 * (RFC 7386), only when it differs from what the cache holds — reconcilers stay level-triggered
 * without write storms. The patch carries the cached object's `metadata.resourceVersion`, so a status
 * computed from a stale object is refused with 409 Conflict (optimistic concurrency) instead of
 * overwriting a newer one; the controller then requeues quietly.
 */
import { isDeepStrictEqual } from "node:util";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KindDefinition, Resource } from "../../api/kinds.ts";
import { GROUP, VERSION } from "../../api/kinds.ts";
import type { KubeClients } from "./client.ts";

/**
 * Patches `status` of `object` to `desired` if it changed. Returns the object as written (its new
 * resourceVersion is what a following write must carry), or undefined when nothing needed writing.
 * Throws the API error; 409 Conflict when `object` was stale.
 */
export async function writeStatusIfChanged<T extends Resource<unknown, object>>(
  clients: KubeClients,
  kind: KindDefinition,
  object: T,
  desired: object,
): Promise<T | undefined> {
  if (isDeepStrictEqual(object.status ?? {}, desired)) return undefined;
  const nulled: Record<string, unknown> = {};
  for (const key of Object.keys(object.status ?? {})) if (!(key in desired)) nulled[key] = null;
  return (await clients.custom.patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      namespace: object.metadata.namespace,
      plural: kind.plural,
      name: object.metadata.name,
      body: {
        metadata: { resourceVersion: object.metadata.resourceVersion },
        status: { ...nulled, ...desired },
      },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  )) as T;
}
