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
import { GROUP } from "./kinds.ts";

type Manifest = Record<string, unknown>;
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

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

/** The operator's permissions: exactly the verbs it uses (the chart issue checks them against the audit log). */
export const OPERATOR_RULES: Rule[] = [
  { apiGroups: [GROUP], resources: KINDS, verbs: READ },
  { apiGroups: [GROUP], resources: ["approvals"], verbs: ["create"] },
  // Finalizer of AgentSessions (metadata only; admission lets no one else touch it).
  { apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["patch"] },
  { apiGroups: [GROUP], resources: KINDS.map((k) => `${k}/status`), verbs: ["get", "patch", "update"] },
  { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "create", "delete"] },
  { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["create"] },
  { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["create"] },
  { apiGroups: [""], resources: ["services"], verbs: ["get", "list", "watch", "create", "patch"] },
  // get: the grant keys; list: identity-binding Secrets by label (kube/identities.ts).
  { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list"] },
  { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "create", "patch"] },
  { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: READ },
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
  {
    apiGroups: ["admissionregistration.k8s.io"],
    resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
    verbs: ["get"],
  },
];

/** Persona roles, their fragments and the operator's ClusterRole. */
export function rbacManifests(): Manifest[] {
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
      ],
    ),
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "gatehouse-operator", labels: PART_OF },
      rules: OPERATOR_RULES,
    },
  ];
}
