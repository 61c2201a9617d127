/**
 * The components' ClusterRoles and every binding of them (api/rbac.ts): cluster-wide, in the operator's
 * namespace, in the provider namespaces and in the watched namespaces.
 */
import {
  CONTROLLER_POD_RULE,
  CONTROLLER_PODS_ROLE,
  CONTROLLER_RULES,
  componentRoleRules,
  GATEWAY_RULES,
  IDENTITY_BINDING_RULE,
  IDENTITY_BINDINGS_ROLE,
  POD_READER_ROLE,
  POD_READER_RULES,
} from "./rbac-component-rules.ts";
import {
  clusterRole,
  clusterRoleBinding,
  type Manifest,
  PART_OF,
  RBAC_GROUP,
  roleBinding,
  type Subject,
  serviceAccountSubject,
} from "./rbac-objects.ts";
import { COMPONENT_SERVICE_ACCOUNTS, COMPONENTS, type Component } from "./well-known.ts";

/**
 * The built-in Role (in kube-system, on every cluster) that reads ConfigMap
 * `extension-apiserver-authentication`: the front proxy's CA and header names the transcripts API
 * trusts (gateway/front-proxy.ts). Bound to the gateway there.
 */
export const EXTENSION_AUTHENTICATION_READER_ROLE = "extension-apiserver-authentication-reader";

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
