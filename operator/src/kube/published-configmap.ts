/**
 * What the controller publishes for the gateway in a ConfigMap of the operator's namespace (grant
 * public keys, identity bindings): a read-modify-write that creates the ConfigMap if absent, replaces
 * it carrying the read resourceVersion only when its data differs, and re-reads on 409 (another writer
 * was first) up to five times.
 */
import type { CoreV1Api, V1ConfigMap } from "@kubernetes/client-node";
import { MANAGED_BY } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { describeApiError, isConflict, isNotFound } from "./runtime/client.ts";

const MAX_ATTEMPTS = 5;

/** The ConfigMap `name` of `namespace`, or undefined when it does not exist. Errors: `unavailable`. */
export async function readConfigMap(
  core: CoreV1Api,
  namespace: string,
  name: string,
): Promise<V1ConfigMap | undefined> {
  try {
    return await core.readNamespacedConfigMap({ name, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new GatehouseError(
      "unavailable",
      `cannot read ConfigMap ${namespace}/${name}: ${describeApiError(error)}`,
      { cause: error },
    );
  }
}

/**
 * Writes the data `desired` computes from the current data (undefined: the ConfigMap does not exist),
 * or nothing when `desired` returns undefined or the data is unchanged. Resolves true when it wrote.
 * Errors: `unavailable` for an API error, `conflict` after five rounds of concurrent changes.
 */
export async function publishConfigMap(
  core: CoreV1Api,
  namespace: string,
  name: string,
  desired: (current: Record<string, string> | undefined) => Record<string, string> | undefined,
): Promise<boolean> {
  const where = `ConfigMap ${namespace}/${name}`;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await readConfigMap(core, namespace, name);
    const data = desired(current ? (current.data ?? {}) : undefined);
    if (data === undefined || (current && sameData(current.data ?? {}, data))) return false;
    const resourceVersion = current?.metadata?.resourceVersion;
    const body: V1ConfigMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace,
        labels: { ...MANAGED_BY, "app.kubernetes.io/part-of": "gatehouse" },
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      data,
    };
    try {
      if (current) await core.replaceNamespacedConfigMap({ name, namespace, body });
      else await core.createNamespacedConfigMap({ namespace, body });
      return true;
    } catch (error) {
      if (!isConflict(error)) {
        throw new GatehouseError("unavailable", `cannot write ${where}: ${describeApiError(error)}`, {
          cause: error,
        });
      }
      // AlreadyExists or a resourceVersion conflict: another writer was first; compare again.
    }
  }
  throw new GatehouseError("conflict", `${where}: ${MAX_ATTEMPTS} writes met a concurrent change`);
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
