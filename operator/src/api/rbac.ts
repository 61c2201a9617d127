/**
 * RBAC shipped with the API (DESIGN §7): the four persona ClusterRoles and the operator's own
 * ClusterRole.
 *
 * The personas are aggregated ClusterRoles, the way Kubernetes builds admin/edit/view: each persona
 * selects rule fragments by the label `gatehouse.dev/aggregate-to-<persona>: "true"`, so a platform
 * team extends a persona by labelling a ClusterRole of its own. Bind them with RoleBindings per
 * namespace. The read fragment also aggregates into the built-in `view` role.
 *
 *   gatehouse-view          read the four kinds
 *   gatehouse-session-user  + create and patch AgentSessions (admission: only as their own subject)
 *   gatehouse-approver      + patch Approvals (admission: only to append their own decision)
 *   gatehouse-platform      + write Capabilities and ProviderInstances (policy authority), delete
 *                             AgentSessions and cancel them (the custom verb `cancel`, plus patch,
 *                             which admission narrows to setting spec.cancel); never Approvals, which
 *                             are evidence and the operator's to keep
 *
 * Nobody but the operator gets `create` on approvals or any `*\/status`: RBAC and admission both say so.
 */
import { RESOLVE_VERB } from "./admission.ts";
import { GROUP } from "./kinds.ts";
import { GRANT_KEYS_SECRET, OPERATOR_SERVICE_ACCOUNT, WITNESS_KEY_SECRET } from "./well-known.ts";

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
 * `list` on Secrets, for the identity-binding Secrets labelled `gatehouse.dev/identity-binding` in
 * provider namespaces (kube/identities.ts). RBAC cannot narrow it to a label: cluster-wide unless the
 * chart's `rbac.identityBindingNamespaces` names the provider namespaces (one Role each).
 */
export const IDENTITY_BINDING_RULE: Rule = { apiGroups: [""], resources: ["secrets"], verbs: ["list"] };

/**
 * The operator's cluster-wide permissions: exactly the verbs it uses across all namespaces (the chart's
 * audit-log test, test/e2e/operator-rbac-verbs.test.ts, checks them: none unused, none missing).
 * Secrets: `list` only, for the identity-binding Secrets labelled `gatehouse.dev/identity-binding` in
 * provider namespaces (kube/identities.ts); the operator's own Secrets are in {@link operatorRoleRules}.
 */
export const OPERATOR_RULES: Rule[] = [
  // The informers (kube/caches.ts); Approvals are also read and created one by one (kube/approvals.ts).
  { apiGroups: [GROUP], resources: KINDS, verbs: ["list", "watch"] },
  { apiGroups: [GROUP], resources: ["approvals"], verbs: ["get", "create"] },
  // Finalizers of AgentSessions and Approvals (metadata only; admission lets no one else touch them,
  // and lets the operator change nothing else of an Approval: gatehouse-approval-operator).
  { apiGroups: [GROUP], resources: ["agentsessions", "approvals"], verbs: ["patch"] },
  { apiGroups: [GROUP], resources: KINDS.map((k) => `${k}/status`), verbs: ["patch"] },
  { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "create", "delete"] },
  { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["create"] },
  { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["create"] },
  // Server-side apply of the providers' workloads: `patch`, and `create` when the object is new.
  { apiGroups: [""], resources: ["services"], verbs: ["create", "patch"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["create", "patch"] },
  IDENTITY_BINDING_RULE,
  { apiGroups: [""], resources: ["events"], verbs: ["create"] },
  { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  {
    apiGroups: ["admissionregistration.k8s.io"],
    resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
    verbs: ["get"],
  },
];

/** Lease of the operator's leader election (main.ts). */
export const LEADER_LEASE = "gatehouse-operator";
/** ConfigMap of the audit checkpoints (kube/checkpoint-configmap.ts, DESIGN §6). */
export const CHECKPOINTS_CONFIGMAP = "gatehouse-audit-checkpoints";

/**
 * The audit witness's rules in the operator's namespace (DESIGN §6): its ConfigMap (get, create,
 * update) and its signing key Secret (get; create is {@link operatorRoleRules}' unnamed rule). They
 * belong to the component that publishes checkpoints, and to no other.
 */
export function auditWitnessRoleRules(): NamedRule[] {
  return [
    { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
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
 * The operator's rules in its own (leader-election) namespace: the Lease, the grant signing keys
 * Secret and the audit witness's ({@link auditWitnessRoleRules}; DESIGN §5, §6). `create` cannot be
 * limited by name (the object does not exist yet); get and update are.
 */
export function operatorRoleRules(): NamedRule[] {
  return [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      resourceNames: [LEADER_LEASE],
      verbs: ["get", "update"],
    },
    { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    { apiGroups: [""], resources: ["secrets"], resourceNames: [GRANT_KEYS_SECRET], verbs: ["get", "update"] },
    ...auditWitnessRoleRules(),
  ];
}

/**
 * `get` on the model endpoints' key Secrets (MODEL_ENDPOINTS' keySecretRef names, in the operator's
 * namespace; kube/model-keys.ts). `names` must not be empty: a rule without resourceNames would cover
 * every Secret of the namespace.
 */
export function modelKeyRule(names: readonly string[]): NamedRule {
  if (names.length === 0) throw new Error("modelKeyRule needs at least one Secret name");
  return { apiGroups: [""], resources: ["secrets"], resourceNames: [...names], verbs: ["get"] };
}

/** Where and as whom the operator runs, for its bindings. */
export interface OperatorIdentity {
  namespace: string;
  serviceAccount: string;
  /** Name of its ClusterRole, ClusterRoleBinding, Role and RoleBinding. */
  name: string;
}

/**
 * The operator's ClusterRoleBinding (to the ClusterRole named `identity.name`), its Role in its own
 * namespace ({@link operatorRoleRules}, plus {@link modelKeyRule} when `modelKeySecrets` is not empty)
 * and that Role's binding: what deploy/operator-rbac.yaml holds for the local cluster.
 */
export function operatorBindingManifests(
  identity: OperatorIdentity,
  modelKeySecrets: readonly string[],
): Manifest[] {
  const subjects = [{ kind: "ServiceAccount", name: identity.serviceAccount, namespace: identity.namespace }];
  const rbac = "rbac.authorization.k8s.io";
  return [
    {
      apiVersion: `${rbac}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name: identity.name, labels: PART_OF },
      roleRef: { apiGroup: rbac, kind: "ClusterRole", name: identity.name },
      subjects,
    },
    {
      apiVersion: `${rbac}/v1`,
      kind: "Role",
      metadata: { name: identity.name, namespace: identity.namespace, labels: PART_OF },
      rules: [...operatorRoleRules(), ...(modelKeySecrets.length > 0 ? [modelKeyRule(modelKeySecrets)] : [])],
    },
    {
      apiVersion: `${rbac}/v1`,
      kind: "RoleBinding",
      metadata: { name: identity.name, namespace: identity.namespace, labels: PART_OF },
      roleRef: { apiGroup: rbac, kind: "Role", name: identity.name },
      subjects,
    },
  ];
}

/** The operator's ClusterRole named `name`. */
export function operatorClusterRole(name: string): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name, labels: PART_OF },
    rules: OPERATOR_RULES,
  };
}

/** The persona ClusterRoles and their aggregated rule fragments. */
export function personaManifests(): Manifest[] {
  return [
    ...PERSONAS.map(persona),
    fragment("gatehouse-aggregate-read", PERSONAS, [{ apiGroups: [GROUP], resources: KINDS, verbs: READ }], {
      "rbac.authorization.k8s.io/aggregate-to-view": "true",
    }),
    fragment(
      "gatehouse-aggregate-session-user",
      ["session-user"],
      [{ apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["create", "patch", "update"] }],
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

/** Persona roles, their fragments and the operator's ClusterRole (crds/rbac.yaml). */
export function rbacManifests(): Manifest[] {
  return [...personaManifests(), operatorClusterRole(OPERATOR_SERVICE_ACCOUNT)];
}
