/**
 * Names, labels and audiences that several parts of Gatehouse (and its users) rely on: part of the
 * API, like the kinds themselves.
 */

/** Label on every object the operator creates. */
export const MANAGED_BY = { "app.kubernetes.io/managed-by": "gatehouse" } as const;
/** Label selector form of MANAGED_BY. */
export const MANAGED_BY_SELECTOR = "app.kubernetes.io/managed-by=gatehouse";
/** Label carrying a session's UID (names can exceed the 63-character label limit; UIDs cannot). */
export const SESSION_UID_LABEL = "gatehouse.dev/session-uid";
/** Label by which an EndpointSlice names its Service (discovery.k8s.io/v1). */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/**
 * Label naming who keeps an EndpointSlice, and the value of the slices the EndpointSlice controller
 * keeps for a Service's selector: provider endpoints are read from those alone, as anyone allowed to
 * create EndpointSlices can write the service-name label on a slice of their own.
 */
export const ENDPOINT_SLICE_MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
export const ENDPOINT_SLICE_CONTROLLER = "endpointslice-controller.k8s.io";
/** Label naming the ProviderInstance a workload serves. */
export const PROVIDER_LABEL = "gatehouse.dev/provider";
/**
 * Label of an identity-binding Secret: its value names the ProviderInstance (same namespace) whose
 * business accounts the Secret's data maps (data key = Kubernetes user name, value = account).
 */
export const IDENTITY_BINDING_LABEL = "gatehouse.dev/identity-binding";
/** Finalizer on every AgentSession: its Pending Approvals are Cancelled before it goes. */
export const SESSION_FINALIZER = "gatehouse.dev/cancel-approvals";
/**
 * Finalizer on every Approval: before it goes, the operator records in the audit chain the decisions
 * it holds and how it ended (a Pending one deleted ends Cancelled), so no request is left without an end.
 */
export const APPROVAL_FINALIZER = "gatehouse.dev/audit-lifecycle";
/** The NetworkPolicy that confines agent pods in each session namespace (egress: gateway and DNS only). */
export const AGENT_NETWORK_POLICY = "gatehouse-agent";
/**
 * The two long-running components (DESIGN §3): the gateway, which agent pods reach (agent routes, model
 * proxy, the invoke path), and the controller, which nothing agent-facing reaches (reconcilers, approved
 * dispatch, the audit witness). Each runs as its own ServiceAccount with its own RBAC, grant keys and
 * database role.
 */
export const COMPONENTS = ["gateway", "controller"] as const;
export type Component = (typeof COMPONENTS)[number];
/** Each component's ServiceAccount in the operator's namespace (and its Deployment's name in the chart). */
export const COMPONENT_SERVICE_ACCOUNTS: Readonly<Record<Component, string>> = {
  gateway: "gatehouse-gateway",
  controller: "gatehouse-controller",
};
/** The user name the API server authenticates a component's ServiceAccount as. */
export function componentUsername(component: Component, namespace: string = OPERATOR_NAMESPACE): string {
  return `system:serviceaccount:${namespace}:${COMPONENT_SERVICE_ACCOUNTS[component]}`;
}
/** The components' pod labels; the agent NetworkPolicy allows egress to the gateway's. */
export const COMPONENT_POD_LABELS: Readonly<Record<Component, Readonly<Record<string, string>>>> = {
  gateway: { "app.kubernetes.io/name": "gatehouse-gateway" },
  controller: { "app.kubernetes.io/name": "gatehouse-controller" },
};
/**
 * Each component's grant signing keys (providers/grant-keys.ts, DESIGN §5): the gateway signs the grants of
 * Auto calls, the controller those of approved dispatch; neither can read the other's private keys.
 */
export const GRANT_KEYS_SECRETS: Readonly<Record<Component, string>> = {
  gateway: "gatehouse-gateway-grant-keys",
  controller: "gatehouse-controller-grant-keys",
};
/**
 * ConfigMap in the operator's namespace where the controller publishes its grant public keys (JWKs,
 * no private part), so the gateway's JWKS serves both rings (providers/grant-public-keys.ts).
 */
export const GRANT_PUBLIC_KEYS_CONFIGMAP = "gatehouse-grant-public-keys";
/**
 * ConfigMap in the operator's namespace where the controller publishes the identity bindings it reads
 * from the labelled Secrets (user names and accounts only), so the gateway needs no Secret access
 * (kube/identities.ts, kube/identity-mirror.ts).
 */
export const IDENTITY_BINDINGS_CONFIGMAP = "gatehouse-identity-bindings";
/** The agent pod's container that runs Sidecar provider `providerName` (a DNS label). */
export function sidecarContainerName(providerName: string): string {
  return `provider-${providerName}`.slice(0, 63).replace(/-+$/, "");
}
/** The ServiceAccount agent pods run as, in each session namespace. */
export const AGENT_SERVICE_ACCOUNT = "gatehouse-agent";
/** Audience of the agent pods' projected token; never one of the API server's own audiences. */
export const GATEHOUSE_AUDIENCE = "gatehouse";
/** Field manager of the operator's server-side applies. */
export const FIELD_MANAGER = "gatehouse-operator";
/** Namespace the components run in (the chart makes it the release namespace). */
export const OPERATOR_NAMESPACE = "gatehouse-system";
/**
 * The controller's user name in {@link OPERATOR_NAMESPACE}: the admission policies name it as the only
 * writer of status and finalizers (the chart and kube/admission/drift.ts substitute the real one).
 */
export const CONTROLLER_USERNAME = componentUsername("controller");
/** The gateway's user name in {@link OPERATOR_NAMESPACE}; admission lets it create Approvals. */
export const GATEWAY_USERNAME = componentUsername("gateway");
/** The garbage collector's user name (kube-controller-manager, --use-service-account-credentials). */
export const GARBAGE_COLLECTOR_USERNAME = "system:serviceaccount:kube-system:generic-garbage-collector";
/** Secret in the operator's namespace holding the grant signing keys (providers/grant-keys.ts, DESIGN §5). */
export const GRANT_KEYS_SECRET = "gatehouse-grant-keys";
/**
 * Secret in the operator's namespace holding the audit witness's signing keys (kube/witness/key.ts,
 * DESIGN §6). Only the component that publishes checkpoints reads it.
 */
export const WITNESS_KEY_SECRET = "gatehouse-audit-witness-key";
/** The gateway's path of the grant verification keys (RFC 7517 JWK Set), unauthenticated. */
export const GRANT_JWKS_PATH = "/v1/grants/jwks";
