/**
 * Sidecar providers of a session (DESIGN §2: placement Sidecar — read and draft capabilities only): each
 * ProviderInstance with `placement: Sidecar` behind a Capability the session may see runs as a native
 * sidecar (an init container with `restartPolicy: Always`) in the session's agent pod, listening on its
 * own port from SIDECAR_BASE_PORT on. Its business credentials (`spec.auth.secretRef`) are mounted into
 * that container only, never into the agent's. Core reaches it at the pod's IP (providers/endpoints.ts).
 */
import { GRANT_ENVIRONMENT } from "@gatehouse/provider-sdk";
import type { V1Container, V1EnvVar, V1ResourceRequirements, V1Volume } from "@kubernetes/client-node";
import type { AgentSession, ProviderInstance } from "../../api/kinds.ts";
import { sidecarContainerName } from "../../api/well-known.ts";
import { visibleCapabilities } from "../../kube/catalog.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import { grantEnvironmentFor } from "../providerinstance/workload.ts";

/** The first sidecar's port; the n-th (by provider name) listens on SIDECAR_BASE_PORT + n. */
export const SIDECAR_BASE_PORT = 18080;
/** At most this many sidecars per agent pod. */
export const MAX_SIDECARS = 20;
/** Where a sidecar finds its credentials (the Secret's keys as files). */
export const SIDECAR_CREDENTIALS_DIR = "/var/run/secrets/gatehouse/provider";
/**
 * Mode of the credential files: the kubelet writes them as root, group the pod's fsGroup (pod.ts
 * AGENT_POD_ID), so the non-root sidecar reads them by group; 0400 would leave them root's alone.
 */
export const SIDECAR_CREDENTIALS_MODE = 0o440;

/**
 * The Sidecar providers behind the Capabilities `session` may see (spec.capabilities, else every
 * Capability of its namespace), enabled ones only, sorted by name, at most MAX_SIDECARS.
 */
export function sidecarProvidersFor(caches: Caches, session: AgentSession): ProviderInstance[] {
  const namespace = session.metadata.namespace;
  const names = new Set(
    visibleCapabilities(caches, namespace, session.spec.capabilities)
      .filter((c) => (c.spec.providerRef.namespace ?? namespace) === namespace)
      .map((c) => c.spec.providerRef.name),
  );
  return [...names]
    .map((name) => caches.providers.get(name, namespace))
    .filter((p): p is NonNullable<typeof p> => p?.spec.placement === "Sidecar" && !p.spec.disabled)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    .slice(0, MAX_SIDECARS);
}

/**
 * The native sidecar containers and the credential volumes they need. Each verifies grants against
 * the gateway at `gatewayUrl` (the agent pod's egress reaches it), as a Shared provider does, and
 * admits only grants for session `sessionUid` (`GATEHOUSE_GRANT_SESSION`): the agent shares the
 * sidecar's network, and another session's grant carries the same audience.
 */
export function sidecarsFor(
  providers: ProviderInstance[],
  gatewayUrl: string,
  sessionUid: string,
): {
  containers: V1Container[];
  volumes: V1Volume[];
} {
  const containers: V1Container[] = [];
  const volumes: V1Volume[] = [];
  providers.forEach((provider, index) => {
    const name = sidecarContainerName(provider.metadata.name);
    const port = SIDECAR_BASE_PORT + index;
    const env: V1EnvVar[] = Object.entries(provider.spec.config ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, value]) => ({ name: k, value }));
    env.push({ name: "PORT", value: String(port) }, ...grantEnvironmentFor(provider, gatewayUrl), {
      name: GRANT_ENVIRONMENT.session,
      value: sessionUid,
    });
    const secret = provider.spec.auth?.secretRef?.name;
    const volumeName = `${name}-credentials`.slice(0, 63);
    if (secret) {
      env.push({ name: "CREDENTIALS_DIR", value: SIDECAR_CREDENTIALS_DIR });
      volumes.push({
        name: volumeName,
        secret: { secretName: secret, defaultMode: SIDECAR_CREDENTIALS_MODE },
      });
    }
    containers.push({
      name,
      image: provider.spec.image,
      restartPolicy: "Always",
      env,
      ports: [{ name: `p${index}`, containerPort: port }],
      startupProbe: { httpGet: { path: "/v1/health", port }, periodSeconds: 1, failureThreshold: 60 },
      readinessProbe: { httpGet: { path: "/v1/health", port }, periodSeconds: 2 },
      securityContext: {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
      },
      ...(provider.spec.resources ? { resources: provider.spec.resources as V1ResourceRequirements } : {}),
      ...(secret
        ? { volumeMounts: [{ name: volumeName, mountPath: SIDECAR_CREDENTIALS_DIR, readOnly: true }] }
        : {}),
    });
  });
  return { containers, volumes };
}
