/**
 * RBAC shipped with the API (DESIGN §7): the four persona ClusterRoles and those of the two components,
 * the gateway and the controller, each holding only what it uses.
 *
 * The personas are aggregated ClusterRoles, the way Kubernetes builds admin/edit/view: each persona
 * selects rule fragments by the label `gatehouse.dev/aggregate-to-<persona>: "true"`, so a platform
 * team extends a persona by labelling a ClusterRole of its own. Bind them with RoleBindings per
 * namespace. The read fragment also aggregates into the built-in `view` role.
 *
 *   gatehouse-view          read the four kinds
 *   gatehouse-session-user  + create and patch AgentSessions (admission: only as their own subject),
 *                             read their own sessions' transcripts (get; TRANSCRIPT_READER_ROLE
 *                             reads anyone's, get-any, and is bound explicitly)
 *   gatehouse-approver      + patch Approvals (admission: only to append their own decision)
 *   gatehouse-platform      + write Capabilities and ProviderInstances (policy authority), delete
 *                             AgentSessions and cancel them (the custom verb `cancel`, plus patch,
 *                             which admission narrows to setting spec.cancel); never Approvals, which
 *                             are evidence and the operator's to keep
 *
 * Nobody but the components gets `create` on approvals, and nobody but the controller any `*\/status`:
 * RBAC and admission both say so.
 */
import { RESOLVE_VERB } from "./admission-approval.ts";
import { GROUP } from "./kinds.ts";
import { GET_ANY_VERB, TRANSCRIPTS_GROUP, TRANSCRIPTS_RESOURCE } from "./transcripts-api.ts";
import {
  AGENT_NETWORK_POLICY,
  COMPONENT_SERVICE_ACCOUNTS,
  COMPONENTS,
  type Component,
  GRANT_KEYS_SECRETS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
  IDENTITY_BINDINGS_CONFIGMAP,
  WITNESS_KEY_SECRET,
} from "./well-known.ts";

type Manifest = Record<string, unknown>;
/** A PolicyRule (rbac.authorization.k8s.io/v1). */
export type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
/** A PolicyRule that may name its objects. */
export type NamedRule = Rule & { resourceNames?: string[] };

export const PERSONAS = ["view", "session-user", "approver", "platform"] as const;
export type Persona = (typeof PERSONAS)[number];

const PART_OF = { "app.kubernetes.io/part-of": "gatehouse" };
const KINDS = ["agentsessions", "capabilities", "providerinstances", "approvals"];
const READ = ["get", "list", "watch"];

/** The persona ClusterRole's name. */
export function personaRole(persona: Persona): string {
  return `gatehouse-${persona}`;
}

function aggregateLabel(persona: Persona): string {
  return `${GROUP}/aggregate-to-${persona}`;
}

/** A rule fragment, aggregated into the given personas. */
function fragment(
  name: string,
  personas: readonly Persona[],
  rules: Rule[],
  extra: Record<string, string> = {},
) {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name,
      labels: {
        ...PART_OF,
        ...Object.fromEntries(personas.map((p) => [aggregateLabel(p), "true"])),
        ...extra,
      },
    },
    rules,
  };
}

function persona(p: Persona): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: personaRole(p), labels: PART_OF },
    // No `rules`: the clusterrole-aggregation controller owns them, and a server-side apply that
    // names them would conflict with it.
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregateLabel(p)]: "true" } }] },
  };
}

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
 * it already there, delete them (controllers/agentsession/reconciler.ts). Bound by RoleBinding in each
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
 * What both components' pod and EndpointSlice informers read (kube/caches.ts): Gatehouse's pods — a
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
 * The built-in Role (in kube-system, on every cluster) that reads ConfigMap
 * `extension-apiserver-authentication`: the front proxy's CA and header names the transcripts API
 * trusts (gateway/front-proxy.ts). Bound to the gateway there.
 */
export const EXTENSION_AUTHENTICATION_READER_ROLE = "extension-apiserver-authentication-reader";

/**
 * Reads any session's transcript in the namespaces where it is bound (verbs `get` and `get-any` on
 * agentsessiontranscripts; api/transcripts-api.ts). In no persona and not in `view`: a transcript holds
 * what the agent fetched under its subject's business identity, so the platform grants it explicitly,
 * e.g. to approvers who need a session's context. A session's subject reads their own through
 * `gatehouse-session-user` (verb `get`).
 */
export const TRANSCRIPT_READER_ROLE = "gatehouse-transcript-reader";

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
    verbs: ["get"],
  },
];

/** Each component's cluster-wide rules, by component. */
export const COMPONENT_RULES: Readonly<Record<Component, NamedRule[]>> = {
  gateway: GATEWAY_RULES,
  controller: CONTROLLER_RULES,
};

/** Lease of the controller's leader election; the gateway runs on every replica and holds none. */
export const LEADER_LEASE = "gatehouse-controller";
/** ConfigMap of the audit checkpoints (kube/witness-configmap-data.ts, DESIGN §6). */
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

const RBAC_GROUP = "rbac.authorization.k8s.io";

/** A ServiceAccount subject of a binding. */
export interface Subject {
  kind: "ServiceAccount";
  name: string;
  namespace: string;
}

/** The subject of `component`'s ServiceAccount in `namespace`. */
export function serviceAccountSubject(component: Component, namespace: string): Subject {
  return { kind: "ServiceAccount", name: COMPONENT_SERVICE_ACCOUNTS[component], namespace };
}

/**
 * A RoleBinding `name` in `namespace` of the ClusterRole or Role `role` to `subjects` (a RoleBinding of a
 * ClusterRole grants its rules in that namespace only).
 */
export function roleBinding(
  name: string,
  namespace: string,
  role: { kind: "ClusterRole" | "Role"; name: string },
  subjects: readonly Subject[],
): Manifest {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "RoleBinding",
    metadata: { name, namespace, labels: PART_OF },
    roleRef: { apiGroup: RBAC_GROUP, ...role },
    subjects: [...subjects],
  };
}

/** A ClusterRoleBinding `name` of the ClusterRole `role` to `subjects`. */
export function clusterRoleBinding(name: string, role: string, subjects: readonly Subject[]): Manifest {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name, labels: PART_OF },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: role },
    subjects: [...subjects],
  };
}

/** A ClusterRole `name` with `rules`. */
export function clusterRole(name: string, rules: readonly Rule[]): Manifest {
  return { apiVersion: `${RBAC_GROUP}/v1`, kind: "ClusterRole", metadata: { name, labels: PART_OF }, rules };
}

/**
 * The ClusterRoles of the components: theirs (named after their ServiceAccounts), identity bindings,
 * the controller's pod writes, both components' pod reads.
 */
export function componentClusterRoles(): Manifest[] {
  return [
    clusterRole(COMPONENT_SERVICE_ACCOUNTS.gateway, GATEWAY_RULES),
    clusterRole(COMPONENT_SERVICE_ACCOUNTS.controller, CONTROLLER_RULES),
    clusterRole(IDENTITY_BINDINGS_ROLE, [IDENTITY_BINDING_RULE]),
    clusterRole(CONTROLLER_PODS_ROLE, [CONTROLLER_POD_RULE]),
    clusterRole(POD_READER_ROLE, POD_READER_RULES),
  ];
}

/** The gateway's (`gatewayName`, ServiceAccount `gateway`) binding in kube-system to {@link EXTENSION_AUTHENTICATION_READER_ROLE}. */
export function extensionAuthenticationReaderBinding(gatewayName: string, gateway: Subject): Manifest {
  return roleBinding(
    `${gatewayName}-authentication-reader`,
    "kube-system",
    { kind: "Role", name: EXTENSION_AUTHENTICATION_READER_ROLE },
    [gateway],
  );
}

/** Where the components run and what the platform lets them reach, for their bindings. */
export interface ComponentBindingOptions {
  /** The operator's namespace: both ServiceAccounts, the Lease, the grant keys, the witness. */
  namespace: string;
  /** The gateway's model key Secrets (in `namespace`). */
  modelKeySecrets: readonly string[];
  /** Provider namespaces whose identity-binding Secrets the controller may list and watch. */
  identityBindingNamespaces: readonly string[];
  /**
   * Namespaces where the controller may create pods and both components read pods and EndpointSlices;
   * empty: every namespace (ClusterRoleBindings).
   */
  watchNamespaces: readonly string[];
}

/**
 * Every binding (and namespace Role) of both components on one cluster, for the ClusterRoles of
 * {@link componentClusterRoles}: what deploy/ holds for the local cluster.
 */
export function componentBindingManifests(options: ComponentBindingOptions): Manifest[] {
  const { namespace } = options;
  const subject = (c: Component) => [serviceAccountSubject(c, namespace)];
  const perComponent = COMPONENTS.flatMap((c) => {
    const name = COMPONENT_SERVICE_ACCOUNTS[c];
    return [
      clusterRoleBinding(name, name, subject(c)),
      {
        apiVersion: `${RBAC_GROUP}/v1`,
        kind: "Role",
        metadata: { name, namespace, labels: PART_OF },
        rules: componentRoleRules(c, options.modelKeySecrets),
      },
      roleBinding(name, namespace, { kind: "Role", name }, subject(c)),
    ];
  });
  const identities = options.identityBindingNamespaces.map((ns) =>
    roleBinding(
      IDENTITY_BINDINGS_ROLE,
      ns,
      { kind: "ClusterRole", name: IDENTITY_BINDINGS_ROLE },
      subject("controller"),
    ),
  );
  /** `role` bound to `subjects` in each watched namespace, or cluster-wide when none is listed. */
  const inWatched = (role: string, subjects: Subject[]) =>
    options.watchNamespaces.length === 0
      ? [clusterRoleBinding(role, role, subjects)]
      : options.watchNamespaces.map((ns) =>
          roleBinding(role, ns, { kind: "ClusterRole", name: role }, subjects),
        );
  return [
    ...perComponent,
    extensionAuthenticationReaderBinding(
      COMPONENT_SERVICE_ACCOUNTS.gateway,
      serviceAccountSubject("gateway", namespace),
    ),
    ...identities,
    ...inWatched(CONTROLLER_PODS_ROLE, subject("controller")),
    ...inWatched(POD_READER_ROLE, [...subject("gateway"), ...subject("controller")]),
  ];
}

/** The persona ClusterRoles, their aggregated rule fragments, and the transcript reader. */
export function personaManifests(): Manifest[] {
  return [
    ...PERSONAS.map(persona),
    clusterRole(TRANSCRIPT_READER_ROLE, [
      { apiGroups: [TRANSCRIPTS_GROUP], resources: [TRANSCRIPTS_RESOURCE], verbs: ["get", GET_ANY_VERB] },
    ]),
    fragment("gatehouse-aggregate-read", PERSONAS, [{ apiGroups: [GROUP], resources: KINDS, verbs: READ }], {
      "rbac.authorization.k8s.io/aggregate-to-view": "true",
    }),
    fragment(
      "gatehouse-aggregate-session-user",
      ["session-user"],
      [
        { apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["create", "patch", "update"] },
        // Their own sessions' transcripts only: the transcripts API checks the session's subject.
        { apiGroups: [TRANSCRIPTS_GROUP], resources: [TRANSCRIPTS_RESOURCE], verbs: ["get"] },
      ],
    ),
    fragment(
      "gatehouse-aggregate-approver",
      ["approver"],
      [{ apiGroups: [GROUP], resources: ["approvals"], verbs: ["patch", "update"] }],
    ),
    fragment(
      "gatehouse-aggregate-platform",
      ["platform"],
      [
        {
          apiGroups: [GROUP],
          resources: ["capabilities", "providerinstances"],
          verbs: ["create", "update", "patch", "delete", "deletecollection"],
        },
        { apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["patch", "update", "delete", "cancel"] },
        // Settling an Unknown outcome takes someone who can check the business system: the platform
        // team. Admission lets `patch` append only a resolution (or, as a listed approver, a decision).
        { apiGroups: [GROUP], resources: ["approvals"], verbs: ["patch", "update", RESOLVE_VERB] },
      ],
    ),
  ];
}

/** Persona roles, their fragments, the transcript reader and the components' ClusterRoles (crds/rbac.yaml). */
export function rbacManifests(): Manifest[] {
  return [...personaManifests(), ...componentClusterRoles()];
}
