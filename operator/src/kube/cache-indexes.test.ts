import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, Approval, Capability } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { PROVIDER_LABEL } from "../api/well-known.ts";
import {
  approvalsInPhase,
  approvalsOfSession,
  approvalsOnCapability,
  capabilitiesByToolName,
  capabilitiesOfProvider,
  GATEHOUSE_INDEXERS,
  podsOfProvider,
  sessionByPodUid,
  sessionByUid,
  sessionsNamingCapability,
} from "./cache-indexes.ts";
import type { Caches } from "./runtime/caches.ts";
import { staticCache } from "./runtime/static-cache.ts";

type Cached<T> = T & KubernetesObject;

const session = (namespace: string, name: string, capabilities?: string[], podUID?: string) =>
  ({
    metadata: { namespace, name, uid: `${namespace}-${name}` },
    spec: { ...(capabilities ? { capabilities } : {}) },
    ...(podUID ? { status: { podUID } } : {}),
  }) as unknown as Cached<AgentSession>;

const approval = (namespace: string, name: string, sessionUid: string, capability: string, phase?: string) =>
  ({
    metadata: { namespace, name },
    spec: { sessionRef: { name: "s", uid: sessionUid }, capability },
    ...(phase ? { status: { phase } } : {}),
  }) as unknown as Cached<Approval>;

const capability = (
  namespace: string,
  name: string,
  id: string,
  provider: { name: string; namespace?: string },
) =>
  ({ metadata: { namespace, name }, spec: { id, providerRef: provider } }) as unknown as Cached<Capability>;

const names = (objects: KubernetesObject[]) =>
  objects.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();

function caches(): Caches {
  return {
    sessions: staticCache(
      [
        session("a", "one", ["publish"], "pod-1"),
        session("a", "two", ["read"]),
        session("b", "one", ["publish"]),
      ],
      GATEHOUSE_INDEXERS.sessions,
    ),
    approvals: staticCache(
      [
        approval("a", "apr-1", "a-one", "publish"),
        approval("a", "apr-2", "a-one", "read", ApprovalPhase.Rejected),
        approval("a", "apr-3", "a-two", "publish", ApprovalPhase.Pending),
        approval("b", "apr-1", "a-one", "publish"),
      ],
      GATEHOUSE_INDEXERS.approvals,
    ),
    capabilities: staticCache(
      [
        capability("a", "publish", "aps.schedule.publish", { name: "aps" }),
        capability("b", "borrowed", "aps.schedule.publish", { name: "aps", namespace: "a" }),
        capability("b", "own", "aps.schedule.read", { name: "aps" }),
      ],
      GATEHOUSE_INDEXERS.capabilities,
    ),
    pods: staticCache(
      [
        { metadata: { namespace: "a", name: "aps-1", labels: { [PROVIDER_LABEL]: "aps" } } },
        { metadata: { namespace: "a", name: "agent-1" } },
      ] as V1Pod[],
      GATEHOUSE_INDEXERS.pods,
    ),
  } as unknown as Caches;
}

describe("the caches' indexes", () => {
  it("find a session's Approvals in its own namespace only", () => {
    expect(names(approvalsOfSession(caches(), "a", "a-one"))).toEqual(["a/apr-1", "a/apr-2"]);
  });

  it("find a session by its uid and by its pod's uid, in the namespace asked", () => {
    expect(sessionByUid(caches(), "a", "a-two")?.metadata.name).toBe("two");
    expect(sessionByUid(caches(), "b", "a-two")).toBeUndefined();
    expect(sessionByUid(caches(), "a", undefined)).toBeUndefined();
    expect(sessionByPodUid(caches(), "a", "pod-1")?.metadata.name).toBe("one");
  });

  it("find the sessions naming a Capability and the Approvals on it", () => {
    expect(names(sessionsNamingCapability(caches(), "a", "publish"))).toEqual(["a/one"]);
    expect(names(approvalsOnCapability(caches(), "a", "publish"))).toEqual(["a/apr-1", "a/apr-3"]);
  });

  it("find a provider's Capabilities wherever they are, by the namespace their providerRef resolves to", () => {
    expect(names(capabilitiesOfProvider(caches(), "a", "aps"))).toEqual(["a/publish", "b/borrowed"]);
    expect(names(capabilitiesOfProvider(caches(), "b", "aps"))).toEqual(["b/own"]);
  });

  it("find Capabilities by the tool name the model calls", () => {
    expect(names(capabilitiesByToolName(caches(), "b", "aps_schedule_publish"))).toEqual(["b/borrowed"]);
  });

  it("count an Approval with no phase written yet as Pending", () => {
    expect(approvalsInPhase(caches(), ApprovalPhase.Pending)).toBe(3);
    expect(approvalsInPhase(caches(), ApprovalPhase.Rejected)).toBe(1);
  });

  it("find a provider's pods by their label", () => {
    expect(names(podsOfProvider(caches(), "a", "aps"))).toEqual(["a/aps-1"]);
  });
});
