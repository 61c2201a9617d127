import {
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1Role,
} from "@kubernetes/client-node";
import { createIfAbsent } from "./kube-errors.ts";

/** The operator's namespace. */
const OPERATOR_NAMESPACE = "gatehouse-system";

/** The components' ServiceAccounts (their RBAC comes from deploy/gateway-rbac.yaml and controller-rbac.yaml). */
export const GATEWAY_IDENTITY = { namespace: "gatehouse-system", name: "gatehouse-gateway" } as const;
export const CONTROLLER_IDENTITY = { namespace: "gatehouse-system", name: "gatehouse-controller" } as const;

/** ServiceAccount the local node acts as (never admin). */
export const LOCAL_NODE_IDENTITY = { namespace: "kube-system", name: "local-node" } as const;

/** Lifetime of the kubeconfig tokens minted for the two ServiceAccounts: one year, in seconds. */
export const SERVICE_ACCOUNT_TOKEN_SECONDS = 365 * 24 * 3600;

const LOCAL_NODE_ROLE = "gatehouse:local-node";

/** What a kubelet-like process needs, cluster-wide (leases are granted in kube-node-lease only). */
const LOCAL_NODE_CLUSTER_RULES: V1ClusterRole["rules"] = [
  { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch", "create", "update", "patch"] },
  { apiGroups: [""], resources: ["nodes/status"], verbs: ["get", "update", "patch"] },
  { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "delete"] },
  { apiGroups: [""], resources: ["pods/status"], verbs: ["get", "update", "patch"] },
  { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"] },
  { apiGroups: [""], resources: ["secrets", "configmaps"], verbs: ["get", "list", "watch"] },
  { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "update", "patch"] },
  // The Service proxy (service-proxy.ts) follows EndpointSlices, as kube-proxy's system:node-proxier may.
  { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
  // NetworkPolicy enforcement (network-policy/enforcer.ts) plans from policies and namespace labels.
  { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["list", "watch"] },
  { apiGroups: [""], resources: ["namespaces"], verbs: ["list", "watch"] },
];

const LOCAL_NODE_LEASE_RULES: V1Role["rules"] = [
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
];

/** Bearer tokens minted for the ServiceAccount identities. */
export type ServiceAccountTokens = {
  gateway: string;
  controller: string;
  localNode: string;
};

/**
 * As admin (`kc`): creates Namespace `gatehouse-system` with ServiceAccounts `gatehouse-gateway`,
 * `gatehouse-controller`, ServiceAccount `kube-system/local-node` with ClusterRole/Binding `gatehouse:local-node` plus a
 * Role/Binding for Leases in `kube-node-lease`, and mints a one-year token for each ServiceAccount through
 * the TokenRequest API. Idempotent for the objects; always mints new tokens.
 */
export async function bootstrapIdentities(kc: KubeConfig): Promise<ServiceAccountTokens> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  for (const name of [OPERATOR_NAMESPACE, "kube-node-lease"]) {
    await createIfAbsent(() => core.createNamespace({ body: { metadata: { name } } }));
  }
  for (const sa of [GATEWAY_IDENTITY, CONTROLLER_IDENTITY, LOCAL_NODE_IDENTITY]) {
    await createIfAbsent(() =>
      core.createNamespacedServiceAccount({ namespace: sa.namespace, body: { metadata: { name: sa.name } } }),
    );
  }
  const subject = { kind: "ServiceAccount", ...LOCAL_NODE_IDENTITY };
  const roleRef = { apiGroup: "rbac.authorization.k8s.io", name: LOCAL_NODE_ROLE };
  await createIfAbsent(() =>
    rbac.createClusterRole({
      body: { metadata: { name: LOCAL_NODE_ROLE }, rules: LOCAL_NODE_CLUSTER_RULES },
    }),
  );
  await createIfAbsent(() =>
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name: LOCAL_NODE_ROLE },
        roleRef: { ...roleRef, kind: "ClusterRole" },
        subjects: [subject],
      },
    }),
  );
  await createIfAbsent(() =>
    rbac.createNamespacedRole({
      namespace: "kube-node-lease",
      body: { metadata: { name: LOCAL_NODE_ROLE }, rules: LOCAL_NODE_LEASE_RULES },
    }),
  );
  await createIfAbsent(() =>
    rbac.createNamespacedRoleBinding({
      namespace: "kube-node-lease",
      body: {
        metadata: { name: LOCAL_NODE_ROLE },
        roleRef: { ...roleRef, kind: "Role" },
        subjects: [subject],
      },
    }),
  );
  return {
    gateway: await mintToken(core, GATEWAY_IDENTITY),
    controller: await mintToken(core, CONTROLLER_IDENTITY),
    localNode: await mintToken(core, LOCAL_NODE_IDENTITY),
  };
}

async function mintToken(core: CoreV1Api, sa: { namespace: string; name: string }): Promise<string> {
  const answer = await core.createNamespacedServiceAccountToken({
    name: sa.name,
    namespace: sa.namespace,
    body: { spec: { audiences: [], expirationSeconds: SERVICE_ACCOUNT_TOKEN_SECONDS } },
  });
  const token = answer.status?.token;
  if (!token) throw new Error(`TokenRequest for ${sa.namespace}/${sa.name} returned no token`);
  return token;
}
