/**
 * The namespace's agent NetworkPolicy (DESIGN §7): what Gatehouse writes ({@link agentNetworkPolicy}),
 * whether the API server's copy still is that ({@link agentNetworkPolicyHolds}), and keeping it so
 * ({@link keepAgentNetworkPolicy}); reconciler.ts re-exports them for its importers.
 */
import { isDeepStrictEqual } from "node:util";
import { PatchStrategy, type V1NetworkPolicy } from "@kubernetes/client-node";
import {
  AGENT_NETWORK_POLICY,
  COMPONENT_POD_LABELS,
  FIELD_MANAGER,
  MANAGED_BY,
} from "../../api/well-known.ts";
import type { OperatorConfig } from "../../config.ts";
import type { KubeClients } from "../../kube/runtime/client.ts";
import { MAX_SIDECARS, SIDECAR_BASE_PORT } from "./sidecars.ts";

/** Where agent pods find the gateway, as the agent NetworkPolicy names it. */
export type AgentPolicyGateway = Pick<
  OperatorConfig,
  "gatewayPort" | "operatorNamespace" | "offClusterGateways"
>;

/**
 * The namespace's agent NetworkPolicy (DESIGN §7): agent pods accept ingress only on the Sidecar
 * providers' ports, from the components that call providers — the gateway (invoke path) and the
 * controller (approved dispatch) — and may send only to the gateway's pods (namespace
 * `operatorNamespace`, the operator's POD_NAMESPACE; labels COMPONENT_POD_LABELS.gateway, the gateway
 * port), to each off-cluster gateway's address block on its port (OFF_CLUSTER_GATEWAYS; no selector
 * names a host) and to cluster DNS. Enforced only where the CNI enforces NetworkPolicy. Its spec is
 * Gatehouse's alone ({@link keepAgentNetworkPolicy}); labels and annotations a platform adds stay.
 */
export function agentNetworkPolicy(namespace: string, gateway: AgentPolicyGateway): V1NetworkPolicy {
  const { gatewayPort, operatorNamespace, offClusterGateways } = gateway;
  const inOperatorNamespace = { matchLabels: { "kubernetes.io/metadata.name": operatorNamespace } };
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: AGENT_NETWORK_POLICY, namespace, labels: { ...MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-agent" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        {
          _from: (["gateway", "controller"] as const).map((component) => ({
            namespaceSelector: inOperatorNamespace,
            podSelector: { matchLabels: { ...COMPONENT_POD_LABELS[component] } },
          })),
          ports: [
            { protocol: "TCP", port: SIDECAR_BASE_PORT, endPort: SIDECAR_BASE_PORT + MAX_SIDECARS - 1 },
          ],
        },
      ],
      egress: [
        {
          to: [
            {
              namespaceSelector: inOperatorNamespace,
              podSelector: { matchLabels: { ...COMPONENT_POD_LABELS.gateway } },
            },
          ],
          ports: [{ protocol: "TCP", port: gatewayPort }],
        },
        ...offClusterGateways.map(({ cidr, port }) => ({
          to: [{ ipBlock: { cidr } }],
          ports: [{ protocol: "TCP", port }],
        })),
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    },
  };
}

/**
 * `policy`'s spec as JSON on the wire: the informer holds raw JSON, while client-node's typed objects
 * name `from` `_from` and carry absent fields as undefined.
 */
function wireSpecOf(policy: V1NetworkPolicy): unknown {
  const spec = JSON.parse(JSON.stringify(policy.spec ?? {})) as { ingress?: Record<string, unknown>[] };
  if (spec.ingress) {
    spec.ingress = spec.ingress.map(({ _from, ...rule }) =>
      _from === undefined ? rule : { ...rule, from: _from },
    );
  }
  return spec;
}

/**
 * Whether `live` is the agent NetworkPolicy as Gatehouse writes it (`desired`): exactly its spec, and
 * Gatehouse's label. Anything else is drift, above all a rule added (NetworkPolicy rules only ever
 * allow more) or a podSelector label no agent pod carries (the policy would confine none) (pure).
 */
export function agentNetworkPolicyHolds(
  live: V1NetworkPolicy | undefined,
  desired: V1NetworkPolicy,
): boolean {
  if (!live || live.metadata?.deletionTimestamp) return false;
  const labels = live.metadata?.labels ?? {};
  return (
    Object.entries(MANAGED_BY).every(([key, value]) => labels[key] === value) &&
    isDeepStrictEqual(wireSpecOf(live), wireSpecOf(desired))
  );
}

/**
 * Keeps the namespace's agent NetworkPolicy as `desired` (DESIGN §7): nothing when `cached` (the
 * informer's copy; undefined to check the API server's) holds it; otherwise a forced server-side apply
 * (FIELD_MANAGER), which creates it or takes back its spec whole — every field of a NetworkPolicy spec
 * is atomic (podSelector, policyTypes, ingress, egress), so no other manager's part of it survives the
 * apply: an edited rule, an added rule or a narrowed podSelector are all undone. Should a field ever
 * outlive the apply (a spec field added by a later Kubernetes), the error says so and the reconcile is
 * retried. Says what it wrote.
 */
export async function keepAgentNetworkPolicy(
  clients: KubeClients,
  desired: V1NetworkPolicy,
  cached: V1NetworkPolicy | undefined,
): Promise<"unchanged" | "applied"> {
  if (agentNetworkPolicyHolds(cached, desired)) return "unchanged";
  const applied = await clients.objects.patch(
    desired,
    undefined,
    undefined,
    FIELD_MANAGER,
    true,
    PatchStrategy.ServerSideApply,
  );
  if (!agentNetworkPolicyHolds(applied, desired)) {
    throw new Error(
      `NetworkPolicy ${desired.metadata?.namespace}/${AGENT_NETWORK_POLICY} still differs from the operator's after a forced apply: ${JSON.stringify(wireSpecOf(applied))}`,
    );
  }
  return "applied";
}
