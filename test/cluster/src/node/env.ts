import type { V1Container, V1ObjectFieldSelector, V1Pod } from "@kubernetes/client-node";
import { HarnessError } from "../errors.ts";
import { expandVariables } from "./images.ts";
import type { ObjectReader } from "./kube-client.ts";
import { resourceFieldValue } from "./resource-field.ts";

/** The variable that tells our images where the pod's root folder is (mount path P → `$LOCAL_NODE_ROOT/P`). */
export const LOCAL_NODE_ROOT = "LOCAL_NODE_ROOT";

/** Node-level facts a container's environment is built from. */
export type EnvContext = {
  reader: ObjectReader;
  podIP: string;
  hostIP: string;
  /** The pod's root folder (value of `LOCAL_NODE_ROOT`). */
  podRoot: string;
  /** Where pods reach the API server (there is no kube-proxy, so this is the bridge address). */
  apiServerHost: string;
  apiServerPort: number;
  /** PATH given to containers (the host's, so `node` and tools resolve). */
  path: string;
};

/**
 * Builds a container's environment the way the kubelet does: the `kubernetes` Service variables
 * (`KUBERNETES_SERVICE_HOST`/`_PORT` = the API server on the bridge), HOSTNAME, PATH, then `envFrom`,
 * then `env` (later entries win; `$(VAR)` expands to earlier ones), with `valueFrom` fieldRef,
 * resourceFieldRef, secretKeyRef and configMapKeyRef resolved; finally `LOCAL_NODE_ROOT`. Throws a `not_found` or
 * `invalid_arguments` HarnessError (→ CreateContainerConfigError) for a missing non-optional reference or
 * an unsupported source.
 */
export async function containerEnv(
  pod: V1Pod,
  container: V1Container,
  ctx: EnvContext,
): Promise<Record<string, string>> {
  const namespace = pod.metadata?.namespace ?? "default";
  const env: Record<string, string> = {
    PATH: ctx.path,
    HOSTNAME: pod.spec?.hostname ?? pod.metadata?.name ?? "",
    KUBERNETES_SERVICE_HOST: ctx.apiServerHost,
    KUBERNETES_SERVICE_PORT: String(ctx.apiServerPort),
    KUBERNETES_SERVICE_PORT_HTTPS: String(ctx.apiServerPort),
    KUBERNETES_PORT: `tcp://${ctx.apiServerHost}:${ctx.apiServerPort}`,
  };

  for (const source of container.envFrom ?? []) {
    const prefix = source.prefix ?? "";
    if (source.configMapRef) {
      const cm = await ctx.reader.configMap(namespace, source.configMapRef.name ?? "");
      if (!cm && !source.configMapRef.optional)
        throw missing("configmap", namespace, source.configMapRef.name);
      for (const [k, v] of Object.entries(cm?.data ?? {})) env[prefix + k] = v;
    }
    if (source.secretRef) {
      const secret = await ctx.reader.secret(namespace, source.secretRef.name ?? "");
      if (!secret && !source.secretRef.optional) throw missing("secret", namespace, source.secretRef.name);
      for (const [k, v] of Object.entries(secret?.data ?? {})) env[prefix + k] = decode(v);
    }
  }

  for (const variable of container.env ?? []) {
    if (variable.valueFrom === undefined) {
      env[variable.name] = expandVariables(variable.value ?? "", env);
      continue;
    }
    const from = variable.valueFrom;
    let value: string | undefined;
    if (from.fieldRef) {
      value = fieldValue(pod, from.fieldRef, ctx);
    } else if (from.resourceFieldRef) {
      value = resourceFieldValue(pod, from.resourceFieldRef, container.name);
    } else if (from.secretKeyRef) {
      const ref = from.secretKeyRef;
      const secret = await ctx.reader.secret(namespace, ref.name ?? "");
      const raw = secret?.data?.[ref.key];
      if (raw === undefined && !ref.optional) throw missingKey("secret", namespace, ref.name, ref.key);
      value = raw === undefined ? undefined : decode(raw);
    } else if (from.configMapKeyRef) {
      const ref = from.configMapKeyRef;
      const cm = await ctx.reader.configMap(namespace, ref.name ?? "");
      value = cm?.data?.[ref.key];
      if (value === undefined && !ref.optional) throw missingKey("configmap", namespace, ref.name, ref.key);
    } else {
      throw new HarnessError(
        "invalid_arguments",
        `env ${variable.name}: valueFrom needs fieldRef, resourceFieldRef, secretKeyRef or configMapKeyRef`,
      );
    }
    if (value !== undefined) env[variable.name] = value;
  }

  env[LOCAL_NODE_ROOT] = ctx.podRoot;
  return env;
}

/**
 * The value of a downward-API field path (env `fieldRef` and downwardAPI volume items): metadata.name,
 * .namespace, .uid, .labels, .annotations, .labels['k'], .annotations['k'], spec.nodeName,
 * spec.serviceAccountName, status.podIP(s), status.hostIP(s). Throws `invalid_arguments` for others.
 */
export function fieldValue(
  pod: V1Pod,
  ref: V1ObjectFieldSelector,
  ips: { podIP: string; hostIP: string },
): string {
  const path = ref.fieldPath;
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (keyed) {
    const map = keyed[1] === "labels" ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[keyed[2] ?? ""] ?? "";
  }
  switch (path) {
    case "metadata.name":
      return pod.metadata?.name ?? "";
    case "metadata.namespace":
      return pod.metadata?.namespace ?? "";
    case "metadata.uid":
      return pod.metadata?.uid ?? "";
    case "metadata.labels":
      return formatMap(pod.metadata?.labels);
    case "metadata.annotations":
      return formatMap(pod.metadata?.annotations);
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "default";
    case "status.podIP":
    case "status.podIPs":
      return ips.podIP;
    case "status.hostIP":
    case "status.hostIPs":
      return ips.hostIP;
    default:
      throw new HarnessError("invalid_arguments", `fieldRef ${path} is not supported by the local node`);
  }
}

/** `key="value"` lines sorted by key: the downward API's format for labels and annotations. */
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k] ?? "")}`)
    .join("\n");
}

function decode(base64: string): string {
  return Buffer.from(base64, "base64").toString("utf8");
}

function missing(kind: string, namespace: string, name: string | undefined): HarnessError {
  return new HarnessError("not_found", `${kind} "${namespace}/${name ?? ""}" not found`);
}

function missingKey(kind: string, namespace: string, name: string | undefined, key: string): HarnessError {
  return new HarnessError(
    "not_found",
    `${kind} "${namespace}/${name ?? ""}" has no key "${key}" (or does not exist)`,
  );
}
