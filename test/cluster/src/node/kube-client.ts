import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Secret,
} from "@kubernetes/client-node";
import { apiStatusCode } from "../kube-errors.ts";

/** The API clients the local node uses, all acting as one kubeconfig context. */
export type NodeClients = { kc: KubeConfig; core: CoreV1Api; coordination: CoordinationV1Api };

/** Builds {@link NodeClients} for `context` of the kubeconfig file at `path`. */
export function createNodeClients(path: string, context: string): NodeClients {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  kc.setCurrentContext(context);
  return { kc, core: kc.makeApiClient(CoreV1Api), coordination: kc.makeApiClient(CoordinationV1Api) };
}

/**
 * Request options for strategic-merge patches of built-in kinds' status (conditions merge by `type`,
 * container statuses by `name`, as the kubelet does), chosen explicitly rather than left to
 * client-node's default.
 */
export const STRATEGIC_MERGE_PATCH = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);

/** Request options for JSON merge patches (RFC 7386). */
export const MERGE_PATCH = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Reads the Secrets and ConfigMaps pods refer to; `undefined` when the object does not exist. */
export type ObjectReader = {
  secret(namespace: string, name: string): Promise<V1Secret | undefined>;
  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
};

/** An {@link ObjectReader} that GETs through the API server on every call. */
export function apiObjectReader(core: CoreV1Api): ObjectReader {
  const orUndefined = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if (apiStatusCode(err) === 404) return undefined;
      throw err;
    }
  };
  return {
    secret: (namespace, name) => orUndefined(() => core.readNamespacedSecret({ namespace, name })),
    configMap: (namespace, name) => orUndefined(() => core.readNamespacedConfigMap({ namespace, name })),
  };
}

/** A timestamp from either a typed list (Date) or a raw watch event (RFC 3339 string). */
export function asDate(value: Date | string | undefined | null): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** RFC 3339 with second precision, the format of metav1.Time. */
export function rfc3339(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
