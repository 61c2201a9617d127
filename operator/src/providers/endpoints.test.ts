import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, ProviderInstance } from "../api/kinds.ts";
import { GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import { staticCache } from "../kube/runtime/static-cache.ts";
import { providerEndpoints } from "./endpoints.ts";

const NAMESPACE = "plant-a";
const SESSION_UID = "sess-uid-1";

const provider = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "ProviderInstance",
  metadata: { name: "fx", namespace: NAMESPACE, uid: "prov-uid" },
  spec: { type: "fixture", image: "gatehouse/provider-fixture:dev", placement: "Sidecar" },
} as unknown as ProviderInstance;

const session = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "AgentSession",
  metadata: { name: "s1", namespace: NAMESPACE, uid: SESSION_UID },
  spec: {},
  status: { phase: "Running", podName: "s1-agent-1", podUID: "pod-uid-genuine" },
} as unknown as AgentSession;

/**
 * A running pod carrying the session-uid label and a ready `provider-fx` sidecar on 18080: the session's
 * agent pod unless `overrides` change its name, uid or owner.
 */
function agentPod(
  ip: string,
  overrides: { name?: string; uid?: string; owners?: object[] } = {},
): V1Pod & KubernetesObject {
  return {
    metadata: {
      name: overrides.name ?? "s1-agent-1",
      namespace: NAMESPACE,
      uid: overrides.uid ?? "pod-uid-genuine",
      labels: { "app.kubernetes.io/managed-by": "gatehouse", "gatehouse.dev/session-uid": SESSION_UID },
      ownerReferences: (overrides.owners as never) ?? [
        {
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "AgentSession",
          name: "s1",
          uid: SESSION_UID,
          controller: true,
        },
      ],
    },
    spec: {
      containers: [{ name: "agent", image: "gatehouse/agent:dev" }],
      initContainers: [
        {
          name: "provider-fx",
          image: "gatehouse/provider-fixture:dev",
          restartPolicy: "Always",
          ports: [{ containerPort: 18080 }],
        },
      ],
    },
    status: {
      phase: "Running",
      podIP: ip,
      initContainerStatuses: [{ name: "provider-fx", ready: true } as never],
    },
  };
}

function lookupOver(pods: V1Pod[], sessions: AgentSession[] = [session]) {
  const caches = {
    providers: staticCache([provider as ProviderInstance & KubernetesObject]),
    sessions: staticCache(sessions as (AgentSession & KubernetesObject)[], GATEHOUSE_INDEXERS.sessions),
    pods: staticCache(pods as (V1Pod & KubernetesObject)[]),
  } as unknown as Caches;
  return (uid = SESSION_UID) => providerEndpoints(caches)({ name: "fx", namespace: NAMESPACE }, uid);
}

describe("a Sidecar provider's endpoint", () => {
  it("is the sidecar of the pod the session's status records", () => {
    expect(lookupOver([agentPod("10.88.0.5")])()).toBe("http://10.88.0.5:18080");
  });

  it("is never a look-alike pod carrying the session's label and a ready sidecar of the same name", () => {
    // Made by someone who may create pods in the namespace, under another name: not the recorded pod.
    const lookalike = agentPod("10.99.0.66", { name: "s1-agent-1-x", uid: "pod-uid-attacker" });
    expect(lookupOver([lookalike])()).toBeUndefined();
    expect(lookupOver([lookalike, agentPod("10.88.0.5")])()).toBe("http://10.88.0.5:18080");
  });

  it("is not a pod under the recorded name whose uid differs (deleted and re-created by someone else)", () => {
    expect(lookupOver([agentPod("10.99.0.66", { uid: "pod-uid-attacker" })])()).toBeUndefined();
  });

  it("is not the recorded pod when the session does not control it", () => {
    const owners = [
      { apiVersion: "gatehouse.dev/v1alpha1", kind: "AgentSession", name: "s1", uid: SESSION_UID },
    ];
    expect(lookupOver([agentPod("10.88.0.5", { owners })])()).toBeUndefined();
    const other = [{ ...owners[0], uid: "another-session", controller: true }];
    expect(lookupOver([agentPod("10.88.0.5", { owners: other })])()).toBeUndefined();
  });

  it("is none for a session unknown to the caches or without a recorded pod", () => {
    expect(lookupOver([agentPod("10.88.0.5")])("another-session")).toBeUndefined();
    const unstarted = { ...session, status: { phase: "Pending" } } as AgentSession;
    expect(lookupOver([agentPod("10.88.0.5")], [unstarted])()).toBeUndefined();
  });

  it("is none while the sidecar is not ready", () => {
    const pod = agentPod("10.88.0.5");
    pod.status!.initContainerStatuses = [{ name: "provider-fx", ready: false } as never];
    expect(lookupOver([pod])()).toBeUndefined();
  });
});
