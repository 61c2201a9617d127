/**
 * Model endpoint keys (DESIGN §7: the gateway holds model keys, an agent pod never does): read from the
 * Secret an endpoint's `keySecretRef` names in the operator's namespace, cached briefly so a busy agent
 * does not cost one API call per model request, yet a rotated key is in use within `ttlMs`.
 */
import type { CoreV1Api } from "@kubernetes/client-node";
import { GatehouseError } from "../core/errors.ts";
import { describeApiError, isNotFound } from "./runtime/client.ts";

/** A key reference: `data[key]` of Secret `name` in the operator's namespace. */
export interface KeySecretRef {
  name: string;
  key: string;
}

/** Reads model keys. */
export interface ModelKeys {
  /**
   * The key `ref` names (surrounding whitespace trimmed: files made with a trailing newline are common).
   * Errors: `unavailable` when the Secret or its key is missing or empty, or the API server fails.
   */
  keyOf(ref: KeySecretRef): Promise<string>;
}

/** How long a read key is used before the Secret is read again, in milliseconds. */
export const MODEL_KEY_TTL_MS = 30_000;

/** Keys from Secrets in `namespace`, each cached for `ttlMs`; failures are not cached. */
export function secretModelKeys(
  core: CoreV1Api,
  namespace: string,
  ttlMs = MODEL_KEY_TTL_MS,
  now: () => number = Date.now,
): ModelKeys {
  const cache = new Map<string, { key: string; until: number }>();
  return {
    async keyOf(ref) {
      const id = `${ref.name}\u0000${ref.key}`;
      const hit = cache.get(id);
      if (hit && hit.until > now()) return hit.key;
      let data: Record<string, string> | undefined;
      try {
        data = (await core.readNamespacedSecret({ namespace, name: ref.name })).data;
      } catch (error) {
        const why = isNotFound(error) ? "does not exist" : `cannot be read (${describeApiError(error)})`;
        throw new GatehouseError(
          "unavailable",
          `The model endpoint's key Secret ${namespace}/${ref.name} ${why}.`,
          { cause: error },
        );
      }
      const encoded = data?.[ref.key];
      const key = encoded === undefined ? "" : Buffer.from(encoded, "base64").toString("utf8").trim();
      if (!key) {
        throw new GatehouseError(
          "unavailable",
          `The model endpoint's key Secret ${namespace}/${ref.name} has no value under ${ref.key}.`,
        );
      }
      cache.set(id, { key, until: now() + ttlMs });
      return key;
    },
  };
}
