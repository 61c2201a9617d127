import { serialize } from "node:v8";
import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, ProviderInstance } from "../api/kinds.ts";
import { agentPodFor } from "../controllers/agentsession/pod.ts";
import { sidecarsFor } from "../controllers/agentsession/sidecars.ts";
import { GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import { staticCache } from "../kube/runtime/static-cache.ts";
import { providerEndpoints } from "../providers/endpoints.ts";
import { sessionOfPod } from "./authenticate.ts";
import { podForGateway } from "./pod-cache.ts";

const provider = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "ProviderInstance",
  metadata: { name: "fx", namespace: "plant-a", uid: "u-fx" },
  spec: {
    type: "fixture",
    image: "gatehouse/provider-fixture:dev",
    placement: "Sidecar",
    auth: { kind: "apikey", secretRef: { name: "fx-credentials" } },
  },
} as unknown as ProviderInstance & KubernetesObject;

const sessionOf = (podUID?: string): AgentSession & KubernetesObject => ({
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "AgentSession",
  metadata: { name: "push-plan", namespace: "plant-a", uid: "sess-uid" },
  spec: {
    subject: { user: "alice", groups: [] },
    engine: "builtin",
    model: { name: "scripted/reference-story" },
    instructions: "",
    messages: [{ text: "Push the plan." }],
  },
  status: podUID ? { phase: "Running", podName: "push-plan-agent-1", podUID } : { phase: "Pending" },
});

/** The controller's agent pod with a Sidecar provider, as the API server serves it once it runs. */
function runningPod(): V1Pod & KubernetesObject {
  const pod = agentPodFor(sessionOf(), 1, {
    image: "gatehouse/agent:dev",
    gatewayUrl: "http://10.88.0.1:8443",
    remainingSeconds: 600,
    resources: { requests: { cpu: "50m", memory: "128Mi" } },
    sidecars: sidecarsFor([provider], "http://10.88.0.1:8443", "sess-uid"),
  });
  const started = { startedAt: new Date("2026-12-06T10:00:00Z") };
  return structuredClone({
    ...pod,
    metadata: {
      ...pod.metadata,
      uid: "pod-uid",
      resourceVersion: "42",
      managedFields: [{ manager: "gatehouse-controller", operation: "Update", fieldsType: "FieldsV1" }],
    },
    spec: { ...pod.spec!, nodeName: "local-node" },
    status: {
      phase: "Running",
      podIP: "10.88.0.5",
      podIPs: [{ ip: "10.88.0.5" }],
      hostIP: "10.88.0.1",
      qosClass: "Burstable",
      conditions: [{ type: "Ready", status: "True" }],
      initContainerStatuses: [
        {
          name: "provider-fx",
          ready: true,
          started: true,
          restartCount: 0,
          image: "gatehouse/provider-fixture:dev",
          imageID: "sha256:1",
          state: { running: started },
        },
      ],
      containerStatuses: [
        {
          name: "agent",
          ready: true,
          restartCount: 0,
          image: "gatehouse/agent:dev",
          imageID: "sha256:2",
          state: { running: started },
        },
      ],
    },
  }) as V1Pod & KubernetesObject;
}

const cachesOver = (pod: V1Pod, session: AgentSession & KubernetesObject) =>
  ({
    providers: staticCache([provider]),
    sessions: staticCache([session], GATEHOUSE_INDEXERS.sessions),
    pods: staticCache([pod as V1Pod & KubernetesObject], GATEHOUSE_INDEXERS.pods),
  }) as unknown as Caches;

const endpointOver = (pod: V1Pod) =>
  providerEndpoints(cachesOver(pod, sessionOf("pod-uid")))({ name: "fx", namespace: "plant-a" }, "sess-uid");

describe("the gateway's cached pod", () => {
  it("finds the same Sidecar provider address as the whole pod, and none when the sidecar is not ready", () => {
    expect(endpointOver(runningPod())).toBe("http://10.88.0.5:18080");
    expect(endpointOver(podForGateway(runningPod()))).toBe("http://10.88.0.5:18080");
    const notReady = runningPod();
    notReady.status!.initContainerStatuses![0]!.ready = false;
    expect(endpointOver(podForGateway(notReady))).toBeUndefined();
  });

  it("binds a token to its session as the whole pod does, and refuses a terminating pod", async () => {
    const identity = { namespace: "plant-a", podName: "push-plan-agent-1", podUID: "pod-uid" };
    const session = sessionOf("pod-uid");
    const bound = await sessionOfPod(cachesOver(podForGateway(runningPod()), session), identity, 0);
    expect(bound.metadata.uid).toBe("sess-uid");
    const terminating = runningPod();
    terminating.metadata!.deletionTimestamp = new Date();
    await expect(
      sessionOfPod(cachesOver(podForGateway(terminating), session), identity, 0),
    ).rejects.toMatchObject({ kind: "forbidden", message: "The pod is terminating." });
    // The controller has not recorded the pod yet: the owner reference tells the agent to retry.
    await expect(
      sessionOfPod(cachesOver(podForGateway(runningPod()), sessionOf()), identity, 0),
    ).rejects.toMatchObject({ kind: "unavailable" });
  });

  it("keeps the metadata and drops the containers, their environment and volumes: a fraction of the pod", () => {
    const full = runningPod();
    const cached = podForGateway(runningPod());
    expect(cached.metadata).toEqual({ ...full.metadata, managedFields: undefined });
    expect(cached.spec?.containers).toEqual([]);
    expect(cached.spec?.volumes).toBeUndefined();
    expect(JSON.stringify(cached)).not.toContain("GATEHOUSE_GATEWAY_URL");
    expect(serialize(cached).length).toBeLessThan(serialize(full).length / 3);
  });
});
