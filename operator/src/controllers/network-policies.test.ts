import { PatchStrategy } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { ProviderInstance } from "../api/kinds.ts";
import { COMPONENT_POD_LABELS, FIELD_MANAGER } from "../api/well-known.ts";
import type { KubeClients } from "../kube/client.ts";
import { agentNetworkPolicy, applyNetworkPolicy, networkPolicyApplied } from "./agentsession/reconciler.ts";
import { networkPolicyFor } from "./providerinstance/workload.ts";

const operatorNamespace = { matchLabels: { "kubernetes.io/metadata.name": "gatehouse-system" } };
const peer = (component: "gateway" | "controller") => ({
  namespaceSelector: operatorNamespace,
  podSelector: { matchLabels: { ...COMPONENT_POD_LABELS[component] } },
});

describe("the agent NetworkPolicy", () => {
  const policy = agentNetworkPolicy("plant-a", 8443, "gatehouse-system");

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

describe("applying the agent NetworkPolicy", () => {
  /** Clients whose only used part, `objects.patch`, records its arguments. */
  function recordingClients() {
    const calls: unknown[][] = [];
    const clients = {
      objects: {
        patch: async (...args: unknown[]) => {
          calls.push(args);
          return args[0];
        },
      },
    } as unknown as KubeClients;
    return { clients, calls };
  }

  it("is a forced server-side apply as FIELD_MANAGER, so a policy of an older release is corrected", async () => {
    const { clients, calls } = recordingClients();
    await applyNetworkPolicy(clients, "plant-a", 8443, "gatehouse-system");
    expect(calls).toEqual([
      [
        agentNetworkPolicy("plant-a", 8443, "gatehouse-system"),
        undefined,
        undefined,
        FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      ],
    ]);
  });

  it("is remembered per namespace and client set: running sessions apply it once per process", async () => {
    const { clients } = recordingClients();
    expect(networkPolicyApplied(clients, "plant-a")).toBe(false);
    await applyNetworkPolicy(clients, "plant-a", 8443, "gatehouse-system");
    expect(networkPolicyApplied(clients, "plant-a")).toBe(true);
    expect(networkPolicyApplied(clients, "plant-b")).toBe(false);
    expect(networkPolicyApplied(recordingClients().clients, "plant-a")).toBe(false);
  });
});
