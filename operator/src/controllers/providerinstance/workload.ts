/**
 * The Deployment and Service of a Shared ProviderInstance (pure functions; DESIGN §2). The provider is
 * reached only by the operator: the Service selects its pods, and the operator calls their ready
 * endpoints.
 */
import { GRANT_ENVIRONMENT, grantAudience } from "@gatehouse/provider-sdk";
import type {
  V1Deployment,
  V1EnvVar,
  V1NetworkPolicy,
  V1ResourceRequirements,
  V1Service,
} from "@kubernetes/client-node";
import type { ProviderInstance } from "../../api/kinds.ts";
import { API_VERSION } from "../../api/kinds.ts";
import { COMPONENT_POD_LABELS, GRANT_JWKS_PATH, MANAGED_BY, PROVIDER_LABEL } from "../../api/well-known.ts";

/** Name of the Deployment and Service: `prov-<name>` (a ProviderInstance name is a DNS label ≤ 63; trimmed to stay one). */
export function workloadName(provider: ProviderInstance): string {
  return `prov-${provider.metadata.name}`.slice(0, 63).replace(/-+$/, "");
}

function labels(provider: ProviderInstance): Record<string, string> {
  return {
    ...MANAGED_BY,
    "app.kubernetes.io/name": "gatehouse-provider",
    [PROVIDER_LABEL]: provider.metadata.name,
  };
}

function ownerReference(provider: ProviderInstance) {
  return {
    apiVersion: API_VERSION,
    kind: "ProviderInstance",
    name: provider.metadata.name,
    uid: provider.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * What a provider container verifies grants with (DESIGN §5; the SDK's `grantVerifierFromEnvironment`
 * reads it): `GATEHOUSE_GRANT_AUDIENCE` = `<namespace>/<name>` of the ProviderInstance and
 * `GATEHOUSE_JWKS_URL` = the gateway's `/v1/grants/jwks` at `gatewayUrl`. Listed after spec.config, so
 * a variable of the same name there cannot redirect it (the last duplicate wins).
 */
export function grantEnvironmentFor(provider: ProviderInstance, gatewayUrl: string): V1EnvVar[] {
  return [
    {
      name: GRANT_ENVIRONMENT.audience,
      value: grantAudience(provider.metadata.namespace, provider.metadata.name),
    },
    { name: GRANT_ENVIRONMENT.jwksUrl, value: `${gatewayUrl.replace(/\/+$/, "")}${GRANT_JWKS_PATH}` },
  ];
}

/**
 * The desired Deployment: spec.config as environment variables, the provider port, the grant
 * verification settings ({@link grantEnvironmentFor}), a readiness probe on /v1/health. A Sidecar
 * provider gets one replica, used only to read its manifest and health (its calls run in the agent
 * pods' sidecars).
 */
export function deploymentFor(provider: ProviderInstance, port: number, gatewayUrl: string): V1Deployment {
  const env: V1EnvVar[] = Object.entries(provider.spec.config ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => ({ name, value }));
  env.push({ name: "PORT", value: String(port) }, ...grantEnvironmentFor(provider, gatewayUrl));
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: workloadName(provider),
      namespace: provider.metadata.namespace,
      labels: labels(provider),
      ownerReferences: [ownerReference(provider)],
    },
    spec: {
      replicas: provider.spec.placement === "Sidecar" ? 1 : provider.spec.replicas,
      selector: { matchLabels: { [PROVIDER_LABEL]: provider.metadata.name } },
      template: {
        metadata: { labels: labels(provider) },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "provider",
              image: provider.spec.image,
              env,
              ports: [{ name: "http", containerPort: port }],
              readinessProbe: { httpGet: { path: "/v1/health", port: port }, periodSeconds: 2 },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
              ...(provider.spec.resources
                ? { resources: provider.spec.resources as V1ResourceRequirements }
                : {}),
            },
          ],
        },
      },
    },
  };
}

/**
 * The provider pods' NetworkPolicy: ingress only from the components that call providers (namespace
 * `operatorNamespace`): the gateway (invoke path) and the controller (approved dispatch), each by its
 * COMPONENT_POD_LABELS, on the provider port — agents never reach a Shared provider directly.
 * Egress is left open: the provider must reach its business system, DNS, and the gateway's JWKS to
 * verify grants. Enforced only where the CNI does.
 */
export function networkPolicyFor(
  provider: ProviderInstance,
  port: number,
  operatorNamespace: string,
): V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: workloadName(provider),
      namespace: provider.metadata.namespace,
      labels: labels(provider),
      ownerReferences: [ownerReference(provider)],
    },
    spec: {
      podSelector: { matchLabels: { [PROVIDER_LABEL]: provider.metadata.name } },
      policyTypes: ["Ingress"],
      ingress: [
        {
          _from: (["gateway", "controller"] as const).map((component) => ({
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": operatorNamespace } },
            podSelector: { matchLabels: { ...COMPONENT_POD_LABELS[component] } },
          })),
          ports: [{ protocol: "TCP", port }],
        },
      ],
    },
  };
}

/** The desired Service selecting the provider pods. */
export function serviceFor(provider: ProviderInstance, port: number): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: workloadName(provider),
      namespace: provider.metadata.namespace,
      labels: labels(provider),
      ownerReferences: [ownerReference(provider)],
    },
    spec: {
      selector: { [PROVIDER_LABEL]: provider.metadata.name },
      ports: [{ name: "http", port, targetPort: port }],
    },
  };
}
