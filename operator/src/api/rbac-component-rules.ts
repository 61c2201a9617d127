/**
 * What each component may do (api/rbac.ts, DESIGN §7): the gateway's and the controller's cluster-wide
 * rules, the rules of the roles bound per namespace (identity bindings, pods), and their rules in the
 * operator's own namespace — each holding only what it uses.
 */
import { GROUP } from "./kinds.ts";
import { KINDS, type NamedRule, type Rule } from "./rbac-objects.ts";
import {
  AGENT_NETWORK_POLICY,
  type Component,
  GRANT_KEYS_SECRETS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
  IDENTITY_BINDINGS_CONFIGMAP,
  WITNESS_KEY_SECRET,
} from "./well-known.ts";

/**
 * `list` and `watch` on Secrets, for the identity-binding Secrets labelled `gatehouse.dev/identity-binding`
 * in provider namespaces (kube/identities.ts, kube/identity-mirror.ts). RBAC cannot narrow it to a
 * label, so it is held nowhere cluster-wide: {@link IDENTITY_BINDINGS_ROLE} grants it, bound by a
 * RoleBinding in each provider namespace the platform lists (chart value `rbac.identityBindingNamespaces`).
 */
export const IDENTITY_BINDING_RULE: Rule = {
  apiGroups: [""],
  resources: ["secrets"],
  verbs: ["list", "watch"],
};

/**
 * ClusterRole holding only {@link IDENTITY_BINDING_RULE}, bound per listed namespace to the controller
 * alone: it resolves approved dispatch from the Secrets and publishes the bindings for the gateway's
 * invoke path in ConfigMap IDENTITY_BINDINGS_CONFIGMAP, so the agent-facing gateway reads no Secret.
 */
export const IDENTITY_BINDINGS_ROLE = "gatehouse-identity-bindings";

/**
 * What the controller does to agent pods one by one: create them, read one back when the create finds
 * it already there, delete them (controllers/agentsession/writer.ts). Bound by RoleBinding in each
 * watched namespace, so a controller confined by WATCH_NAMESPACES cannot start a pod anywhere else; the
 * pod informer's list/watch is {@link POD_READER_RULES}.
 */
export const CONTROLLER_POD_RULE: Rule = {
  apiGroups: [""],
  resources: ["pods"],
  verbs: ["get", "create", "delete"],
};

/** ClusterRole holding only {@link CONTROLLER_POD_RULE}. */
export const CONTROLLER_PODS_ROLE = "gatehouse-controller-pods";

/**
 * What both components' pod and EndpointSlice informers read (kube/runtime/caches.ts): Gatehouse's pods — a
 * token is honoured only for the running agent pod it names (gateway/authenticate.ts), Sidecar providers
 * are reached at their pod's address, the controller follows its agent and provider pods — and the
 * EndpointSlices of provider Services. A label selector narrows what is sent, not what may be read, and
 * a pod's spec carries its environment: {@link POD_READER_ROLE} grants this by RoleBinding in each
 * watched namespace, where the informers then list and watch (cluster-wide only when none is listed).
 * EndpointSlices follow the pods: they list the same pods' addresses, and providers run only in served
 * namespaces (controllers/served-namespaces.ts).
 */
export const POD_READER_RULES: Rule[] = [
  { apiGroups: [""], resources: ["pods"], verbs: ["list", "watch"] },
  { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
];

/** ClusterRole holding only {@link POD_READER_RULES}, bound to both components. */
export const POD_READER_ROLE = "gatehouse-pod-reader";

/**
 * The gateway's cluster-wide permissions, exactly the verbs it uses (test/e2e/operator-rbac-verbs.test.ts
 * compares them with the API server's audit log): it reads, authenticates agents and records requests;
 * it writes no status, patches nothing, creates no pods and lists no Secrets. Its Secrets and
 * ConfigMaps are in {@link gatewayRoleRules}; pods and EndpointSlices come from {@link POD_READER_ROLE}.
 */
export const GATEWAY_RULES: Rule[] = [
  // The informers of the four kinds; Approvals are also read and created one by one (kube/approvals.ts:
  // the invoke path creates the Approval a call waits on, or the record of an Auto call).
  { apiGroups: [GROUP], resources: KINDS, verbs: ["list", "watch"] },
  { apiGroups: [GROUP], resources: ["approvals"], verbs: ["get", "create"] },
  // Agent pods' projected tokens (gateway/authenticate.ts).
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  // Whether the person the API server proxies a transcripts API request for may read it
  // (kube/access-review.ts), as every aggregated API server asks (system:auth-delegator's verb).
  { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
];

/**
 * The controller's cluster-wide permissions, exactly the verbs it uses (checked like
 * {@link GATEWAY_RULES}). Pods are created and deleted only where {@link CONTROLLER_PODS_ROLE} is bound,
 * and read (with EndpointSlices) where {@link POD_READER_ROLE} is; its own Secrets and ConfigMaps are in
 * {@link controllerRoleRules}. It serves no agent, so it reviews no tokens, and it reads no model key.
 */
export const CONTROLLER_RULES: NamedRule[] = [
  { apiGroups: [GROUP], resources: KINDS, verbs: ["list", "watch"] },
  // The leader's sweep creates the record of an Auto call the gateway could not (core/resolution.ts).
  { apiGroups: [GROUP], resources: ["approvals"], verbs: ["get", "create"] },
  // Finalizers of AgentSessions and Approvals (metadata only; admission lets nobody else touch an
  // Approval's, and lets the controller change nothing else of one but labels and annotations:
  // gatehouse-approval-metadata, gatehouse-approval-operator).
  { apiGroups: [GROUP], resources: ["agentsessions", "approvals"], verbs: ["patch"] },
  { apiGroups: [GROUP], resources: KINDS.map((k) => `${k}/status`), verbs: ["patch"] },
  { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["create"] },
  // Server-side apply on every reconcile: `patch`, and `create` when the object is new (the API server
  // checks both for an apply that creates).
  { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["create", "patch"] },
  // The agent NetworkPolicy is watched by name and restored by the apply above when it drifts (its
  // spec's fields are all atomic: a forced apply takes back all of it; controllers/agentsession).
  {
    apiGroups: ["networking.k8s.io"],
    resources: ["networkpolicies"],
    resourceNames: [AGENT_NETWORK_POLICY],
    verbs: ["list", "watch"],
  },
  { apiGroups: [""], resources: ["services"], verbs: ["create", "patch"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["create", "patch"] },
  { apiGroups: [""], resources: ["events"], verbs: ["create"] },
  {
    apiGroups: ["admissionregistration.k8s.io"],
    resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
    verbs: ["list"],
  },
];

/** Each component's cluster-wide rules, by component. */
export const COMPONENT_RULES: Readonly<Record<Component, NamedRule[]>> = {
  gateway: GATEWAY_RULES,
  controller: CONTROLLER_RULES,
};

/** Lease of the controller's leader election; the gateway runs on every replica and holds none. */
export const LEADER_LEASE = "gatehouse-controller";
/** ConfigMap of the audit checkpoints (kube/witness/configmap-data.ts, DESIGN §6). */
export const CHECKPOINTS_CONFIGMAP = "gatehouse-audit-checkpoints";

/**
 * The audit witness's rules in the operator's namespace (DESIGN §6): its ConfigMap (get, update; create
 * is {@link controllerRoleRules}' unnamed rule) and its signing key Secret (get; create likewise). They
 * belong to the controller, which publishes checkpoints, and to no other component.
 */
export function auditWitnessRoleRules(): NamedRule[] {
  return [
    {
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: [CHECKPOINTS_CONFIGMAP],
      verbs: ["get", "update"],
    },
    { apiGroups: [""], resources: ["secrets"], resourceNames: [WITNESS_KEY_SECRET], verbs: ["get"] },
  ];
}

/**
 * The controller's rules in its own namespace: the Lease, its grant signing keys Secret, the ConfigMaps
 * where it publishes for the gateway (its keys' public half for the JWKS, the identity bindings), and
 * the audit witness's
 * ({@link auditWitnessRoleRules}; DESIGN §5, §6). `create` cannot be limited by name (the object does
 * not exist yet); get and update are.
 */
export function controllerRoleRules(): NamedRule[] {
  return [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      resourceNames: [LEADER_LEASE],
      verbs: ["get", "update"],
    },
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: [GRANT_KEYS_SECRETS.controller],
      verbs: ["get", "update"],
    },
    { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: [GRANT_PUBLIC_KEYS_CONFIGMAP, IDENTITY_BINDINGS_CONFIGMAP],
      verbs: ["get", "update"],
    },
    ...auditWitnessRoleRules(),
  ];
}

/**
 * The gateway's rules in its own namespace: its grant signing keys Secret (get and update only: the
 * controller creates it empty, since `create` cannot be limited by name and a created Secret of type
 * `kubernetes.io/service-account-token` is filled with a token of any ServiceAccount there), what the controller
 * publishes for it — the grant public keys (its JWKS serves both rings) and the identity bindings —
 * read only, and, when `modelKeySecrets` is not empty, the model proxy's key Secrets ({@link modelKeyRule}).
 */
export function gatewayRoleRules(modelKeySecrets: readonly string[]): NamedRule[] {
  return [
    {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: [GRANT_KEYS_SECRETS.gateway],
      verbs: ["get", "update"],
    },
    {
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: [GRANT_PUBLIC_KEYS_CONFIGMAP, IDENTITY_BINDINGS_CONFIGMAP],
      verbs: ["get"],
    },
    ...(modelKeySecrets.length > 0 ? [modelKeyRule(modelKeySecrets)] : []),
  ];
}

/** Each component's namespace Role rules. */
export function componentRoleRules(component: Component, modelKeySecrets: readonly string[]): NamedRule[] {
  return component === "gateway" ? gatewayRoleRules(modelKeySecrets) : controllerRoleRules();
}

/**
 * `get` on the model endpoints' key Secrets (MODEL_ENDPOINTS' keySecretRef names, in the operator's
 * namespace; kube/model-keys.ts): the gateway's model proxy only. `names` must not be empty: a rule
 * without resourceNames would cover every Secret of the namespace.
 */
export function modelKeyRule(names: readonly string[]): NamedRule {
  if (names.length === 0) throw new Error("modelKeyRule needs at least one Secret name");
  return { apiGroups: [""], resources: ["secrets"], resourceNames: [...names], verbs: ["get"] };
}
