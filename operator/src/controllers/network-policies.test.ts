import { PatchStrategy, type V1NetworkPolicy } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { ProviderInstance } from "../api/kinds.ts";
import { COMPONENT_POD_LABELS, FIELD_MANAGER } from "../api/well-known.ts";
import type { KubeClients } from "../kube/runtime/client.ts";
import {
  agentNetworkPolicy,
  agentNetworkPolicyHolds,
  keepAgentNetworkPolicy,
} from "./agentsession/reconciler.ts";
import { networkPolicyFor } from "./providerinstance/workload.ts";

const operatorNamespace = { matchLabels: { "kubernetes.io/metadata.name": "gatehouse-system" } };
const peer = (component: "gateway" | "controller") => ({
  namespaceSelector: operatorNamespace,
  podSelector: { matchLabels: { ...COMPONENT_POD_LABELS[component] } },
});

const GATEWAY = { gatewayPort: 8443, operatorNamespace: "gatehouse-system", offClusterGateways: [] };

describe("the agent NetworkPolicy", () => {
  const policy = agentNetworkPolicy("plant-a", GATEWAY);

  it("lets agent pods send only to the gateway's pods (and DNS), never to the controller's", () => {
    expect(policy.spec?.egress?.[0]).toEqual({
      to: [peer("gateway")],
      ports: [{ protocol: "TCP", port: 8443 }],
    });
    expect(JSON.stringify(policy.spec?.egress)).not.toContain("gatehouse-controller");
  });

  it("lets the components that call providers reach the Sidecar ports: the gateway and the controller", () => {
    expect(policy.spec?.ingress?.[0]?._from).toEqual([peer("gateway"), peer("controller")]);
  });

  it("adds each off-cluster gateway's address block on its port, and nothing else on that block", () => {
    const offCluster = agentNetworkPolicy("plant-a", {
      ...GATEWAY,
      offClusterGateways: [{ cidr: "10.88.0.1/32", port: 34_567 }],
    });
    expect(offCluster.spec?.egress).toHaveLength(3);
    expect(offCluster.spec?.egress?.[1]).toEqual({
      to: [{ ipBlock: { cidr: "10.88.0.1/32" } }],
      ports: [{ protocol: "TCP", port: 34_567 }],
    });
    expect(offCluster.spec?.egress?.[0]).toEqual(policy.spec?.egress?.[0]);
  });

  it("selects no pod by the one-process operator's label", () => {
    expect(JSON.stringify(policy)).not.toContain("gatehouse-operator");
  });
});

describe("the provider NetworkPolicy", () => {
  const provider = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: { name: "aps", namespace: "plant-a", uid: "u-1" },
    spec: { type: "aps", image: "gatehouse/provider-aps:dev", placement: "Shared", replicas: 1 },
  } as unknown as ProviderInstance;

  it("admits the invoke path (gateway) and approved dispatch (controller) on the provider port only", () => {
    const policy = networkPolicyFor(provider, 8080, "gatehouse-system");
    expect(policy.spec?.ingress).toEqual([
      { _from: [peer("gateway"), peer("controller")], ports: [{ protocol: "TCP", port: 8080 }] },
    ]);
    expect(JSON.stringify(policy)).not.toContain("gatehouse-operator");
  });
});

describe("keeping the agent NetworkPolicy", () => {
  const desired = agentNetworkPolicy("plant-a", GATEWAY);
  /** The policy as the informer holds it: raw JSON, where client-node's `_from` is `from`. */
  const onTheWire = (): V1NetworkPolicy =>
    JSON.parse(
      JSON.stringify({
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: "41", uid: "np-uid" },
      }).replaceAll('"_from":', '"from":'),
    );

  /** Clients whose `objects.patch` and `objects.replace` record their arguments; patch answers `answer`. */
  function recordingClients(answer: (sent: V1NetworkPolicy) => V1NetworkPolicy = (sent) => sent) {
    const calls: Array<[string, ...unknown[]]> = [];
    const clients = {
      objects: {
        patch: async (...args: unknown[]) => {
          calls.push(["patch", ...args]);
          return answer(args[0] as V1NetworkPolicy);
        },
        replace: async (...args: unknown[]) => {
          calls.push(["replace", ...args]);
          return args[0];
        },
      },
    } as unknown as KubeClients;
    return { clients, calls };
  }

  it("holds when the cached spec is the desired one, whether raw JSON or typed", () => {
    expect(agentNetworkPolicyHolds(onTheWire(), desired)).toBe(true);
    expect(agentNetworkPolicyHolds(desired, desired)).toBe(true);
  });

  it("does not hold with a rule added, a podSelector narrowed, Gatehouse's label gone, or being deleted", () => {
    const allowAll = onTheWire();
    allowAll.spec!.egress!.push({});
    expect(agentNetworkPolicyHolds(allowAll, desired)).toBe(false);
    const narrowed = onTheWire();
    narrowed.spec!.podSelector = { matchLabels: { ...narrowed.spec!.podSelector?.matchLabels, decoy: "x" } };
    expect(agentNetworkPolicyHolds(narrowed, desired)).toBe(false);
    const ingressOnly = onTheWire();
    ingressOnly.spec!.policyTypes = ["Ingress"];
    expect(agentNetworkPolicyHolds(ingressOnly, desired)).toBe(false);
    const unlabelled = onTheWire();
    unlabelled.metadata!.labels = {};
    expect(agentNetworkPolicyHolds(unlabelled, desired)).toBe(false);
    const deleting = onTheWire();
    deleting.metadata!.deletionTimestamp = new Date();
    expect(agentNetworkPolicyHolds(deleting, desired)).toBe(false);
    expect(agentNetworkPolicyHolds(undefined, desired)).toBe(false);
  });

  it("makes no API call while the cached policy holds", async () => {
    const { clients, calls } = recordingClients();
    expect(await keepAgentNetworkPolicy(clients, desired, onTheWire())).toBe("unchanged");
    expect(calls).toEqual([]);
  });

  it("applies, forced, as FIELD_MANAGER when there is no cached copy or it drifted", async () => {
    const drifted = onTheWire();
    drifted.spec!.egress!.push({});
    for (const cached of [undefined, drifted]) {
      const { clients, calls } = recordingClients();
      expect(await keepAgentNetworkPolicy(clients, desired, cached)).toBe("applied");
      expect(calls).toEqual([
        ["patch", desired, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply],
      ]);
    }
  });

  it("says so, and writes nothing more, when a field outlives the forced apply", async () => {
    // What no NetworkPolicy spec of today allows (all its fields are atomic): a field the apply left.
    const { clients, calls } = recordingClients((sent) => ({
      ...sent,
      spec: { ...sent.spec!, ingress: [...(sent.spec!.ingress ?? []), {}] },
    }));
    await expect(keepAgentNetworkPolicy(clients, desired, undefined)).rejects.toThrow(
      /still differs from the operator's after a forced apply/,
    );
    expect(calls.map((c) => c[0])).toEqual(["patch"]);
  });
});
