/**
 * Writes a custom resource's status through the `/status` subresource with a JSON merge patch
 * (RFC 7386), only when it differs from what the cache holds — reconcilers stay level-triggered
 * without write storms.
 */
import { isDeepStrictEqual } from "node:util";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KindDefinition, Resource } from "../api/kinds.ts";
import { GROUP, VERSION } from "../api/kinds.ts";
import type { KubeClients } from "./client.ts";

/** Patches `status` of `object` to `desired` if it changed; returns whether a write happened. */
export async function writeStatusIfChanged<S extends object>(
  clients: KubeClients,
  kind: KindDefinition,
  object: Resource<unknown, S>,
  desired: S,
): Promise<boolean> {
  if (isDeepStrictEqual(object.status ?? {}, desired)) return false;
  const nulled: Record<string, unknown> = {};
  for (const key of Object.keys(object.status ?? {})) if (!(key in desired)) nulled[key] = null;
  await clients.custom.patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      namespace: object.metadata.namespace,
      plural: kind.plural,
      name: object.metadata.name,
      body: { status: { ...nulled, ...desired } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
  return true;
}
