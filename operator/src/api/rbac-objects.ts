/**
 * The shapes of the RBAC objects Gatehouse ships (api/rbac.ts) and their builders: rules, subjects,
 * ClusterRoles and bindings, with the names the persona and component roles share.
 */
import { COMPONENT_SERVICE_ACCOUNTS, type Component } from "./well-known.ts";

export type Manifest = Record<string, unknown>;
/** A PolicyRule (rbac.authorization.k8s.io/v1). */
export type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
/** A PolicyRule that may name its objects. */
export type NamedRule = Rule & { resourceNames?: string[] };

export const PART_OF = { "app.kubernetes.io/part-of": "gatehouse" };
export const KINDS = ["agentsessions", "capabilities", "providerinstances", "approvals"];

export const RBAC_GROUP = "rbac.authorization.k8s.io";

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
