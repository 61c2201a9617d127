/**
 * Finalizers on custom resources, written as JSON merge patches (RFC 7386) of `metadata.finalizers`
 * that carry the object's resourceVersion: a list computed from a stale object is refused with 409
 * Conflict rather than dropping someone else's finalizer (merge patch replaces lists whole).
 * Semantics: https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/
 */
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { KindDefinition, Resource } from "../../api/kinds.ts";
import { GROUP, VERSION } from "../../api/kinds.ts";
import type { KubeClients } from "./client.ts";

/** True when `object` carries `finalizer`. */
export function hasFinalizer(object: Resource<unknown, unknown>, finalizer: string): boolean {
  return object.metadata.finalizers?.includes(finalizer) ?? false;
}

/** Adds `finalizer` unless present. Throws the API error (409 when `object` is stale). */
export async function addFinalizer(
  clients: KubeClients,
  kind: KindDefinition,
  object: Resource<unknown, unknown>,
  finalizer: string,
): Promise<void> {
  await addFinalizerWritten(clients, kind, object, finalizer);
}

/**
 * {@link addFinalizer}, returning the object as written (its new resourceVersion is what a following
 * write must carry), or undefined when nothing needed writing.
 */
export async function addFinalizerWritten<T extends Resource<unknown, unknown>>(
  clients: KubeClients,
  kind: KindDefinition,
  object: T,
  finalizer: string,
): Promise<T | undefined> {
  if (hasFinalizer(object, finalizer)) return undefined;
  return await patchFinalizers(clients, kind, object, [...(object.metadata.finalizers ?? []), finalizer]);
}

/** Removes `finalizer` if present. Throws the API error (409 when stale, 404 when already gone). */
export async function removeFinalizer(
  clients: KubeClients,
  kind: KindDefinition,
  object: Resource<unknown, unknown>,
  finalizer: string,
): Promise<void> {
  if (!hasFinalizer(object, finalizer)) return;
  await patchFinalizers(
    clients,
    kind,
    object,
    (object.metadata.finalizers ?? []).filter((f) => f !== finalizer),
  );
}

async function patchFinalizers<T extends Resource<unknown, unknown>>(
  clients: KubeClients,
  kind: KindDefinition,
  object: T,
  finalizers: string[],
): Promise<T> {
  return (await clients.custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      namespace: object.metadata.namespace,
      plural: kind.plural,
      name: object.metadata.name,
      body: { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  )) as T;
}
