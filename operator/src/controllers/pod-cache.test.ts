/**
 * The controller's cached pod (pod-cache.ts) against the whole pod: every reader of a cached pod in
 * the controller — the session reconciler's pass, the provider reconciler's pod problems, approved
 * dispatch's Sidecar address, the indexes — answers the same on both.
 */
import { serialize } from "node:v8";
import type { KubernetesObject, V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession, ProviderInstance } from "../api/kinds.ts";
import { GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import { sidecarEndpoint } from "../providers/endpoints.ts";
import {
  approval,
  completed,
  pass,
  podOf,
  type Row,
  RUNNING,
  sessionOf,
} from "./agentsession/plan-fixtures.ts";
import { agentPodFor } from "./agentsession/pod.ts";
import { sidecarsFor } from "./agentsession/sidecars.ts";
import { podForController } from "./pod-cache.ts";
import { currentRolloutPods, podProblemOf } from "./providerinstance/plan.ts";

const provider = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "ProviderInstance",
  metadata: { name: "fx", namespace: "plant-a", uid: "u-fx" },
  spec: { type: "fixture", image: "gatehouse/provider-fixture:dev", placement: "Sidecar" },
} as unknown as ProviderInstance & KubernetesObject;

/**
 * The pod as the API server serves it: the controller's own agent pod for `session` (containers,
 * environment, volumes, a Sidecar provider), managedFields, and the kubelet's status around `status`
 * (plan-fixtures.ts podOf: the phase, reason and the agent container's end).
 */
function served(session: AgentSession, status: V1Pod["status"], metadata: V1Pod["metadata"]): V1Pod {
  const built = agentPodFor(session, session.status?.attempt ?? 1, {
    image: "gatehouse/agent:dev",
    gatewayUrl: "http://10.88.0.1:8443",
    remainingSeconds: 600,
    resources: { requests: { cpu: "50m", memory: "128Mi" } },
    sidecars: sidecarsFor([provider], "http://10.88.0.1:8443", session.metadata.uid ?? ""),
  });
  const started = new Date("2026-12-01T09:58:00Z");
  return structuredClone({
    ...built,
    metadata: {
      ...built.metadata,
      ...metadata,
      labels: { ...built.metadata?.labels, ...metadata?.labels },
      resourceVersion: "42",
      creationTimestamp: started,
      managedFields: [{ manager: "gatehouse-controller", operation: "Update", fieldsType: "FieldsV1" }],
    },
    spec: { ...built.spec!, nodeName: "local-node" },
    status: {
      podIP: "10.88.0.5",
      podIPs: [{ ip: "10.88.0.5" }],
      hostIP: "10.88.0.1",
      qosClass: "Burstable",
      startTime: started,
      conditions: [{ type: "Ready", status: "False", reason: "PodCompleted" }],
      initContainerStatuses: [
        {
          name: "provider-fx",
          ready: true,
          started: true,
          restartCount: 0,
          image: "gatehouse/provider-fixture:dev",
          imageID: "sha256:1",
          containerID: "containerd://1",
          state: { running: { startedAt: started } },
        },
      ],
      ...status,
      containerStatuses: status?.containerStatuses?.map((c) => ({
        ...c,
        image: "gatehouse/agent:dev",
        imageID: "sha256:2",
        containerID: "containerd://2",
        started: false,
      })),
    },
  });
}

/** `podOf`'s pod of `session` in `phase`, as served: whole and as the controller caches it. */
function both(session: AgentSession, phase: string | undefined, o: Parameters<typeof podOf>[2] = {}) {
  const fixture = podOf(session, phase, o);
  const whole = served(session, fixture.status, fixture.metadata);
  return { whole, cached: podForController(structuredClone(whole)) };
}

const SCENARIOS: Array<{ name: string; row: Omit<Row, "calls" | "pod">; phase?: string; o?: object }> = [
  { name: "running", row: { name: "", session: sessionOf({ status: RUNNING }) }, phase: "Running" },
  { name: "failed, retried", row: { name: "", session: sessionOf({ status: RUNNING }) }, phase: "Failed" },
  {
    name: "failed finally (exit code 2)",
    row: { name: "", session: sessionOf({ status: RUNNING }) },
    phase: "Failed",
    o: { exitCode: 2 },
  },
  {
    name: "out of time",
    row: { name: "", session: sessionOf({ status: RUNNING }) },
    phase: "Failed",
    o: { reason: "DeadlineExceeded" },
  },
  {
    name: "released, every Approval decided",
    row: {
      name: "",
      session: sessionOf({ status: RUNNING }),
      record: { releases: 1 },
      approvals: [approval("Succeeded")],
    },
    phase: "Succeeded",
    o: { exitCode: 0 },
  },
  {
    name: "answered, a message appended",
    row: { name: "", session: sessionOf({ status: RUNNING, messages: 2 }), record: { finalAnswers: 1 } },
    phase: "Succeeded",
    o: { exitCode: 0 },
  },
  {
    name: "answered every message",
    row: { name: "", session: sessionOf({ status: completed() }), record: { finalAnswers: 1 } },
    phase: "Succeeded",
    o: { exitCode: 0 },
  },
  {
    name: "someone else's",
    row: { name: "", session: sessionOf() },
    phase: "Running",
    o: { owner: "foreign" },
  },
  {
    name: "an earlier session's",
    row: { name: "", session: sessionOf() },
    phase: "Running",
    o: { owner: "earlier" },
  },
];

describe("the controller's cached pod", () => {
  it.each(SCENARIOS)("plans a session's pass as the whole pod does: $name", async ({ row, phase, o }) => {
    const { whole, cached } = both(row.session, phase, o);
    const fromWhole = await pass({ ...row, calls: [], pod: () => whole });
    const fromCached = await pass({ ...row, calls: [], pod: () => cached });
    expect(fromWhole.error).toBeUndefined();
    expect(fromCached.writer.calls).toEqual(fromWhole.writer.calls);
    expect(fromCached.result).toEqual(fromWhole.result);
    expect(fromCached.lines).toEqual(fromWhole.lines);
  });

  it("finds the same provider pod problems and rollout as the whole pods", () => {
    const problem = (pod: V1Pod, name: string, hash: string, statuses: V1ContainerStatus[]) => {
      const changed = structuredClone(pod);
      changed.metadata!.name = name;
      changed.metadata!.labels = { ...changed.metadata!.labels, "pod-template-hash": hash };
      changed.status!.containerStatuses = statuses;
      return changed;
    };
    const base = both(sessionOf({ status: RUNNING }), "Running").whole;
    const container = { image: "p", imageID: "", ready: false, restartCount: 3 };
    const pods = [
      problem(base, "p-new-1", "new", [
        {
          ...container,
          name: "provider",
          state: { waiting: { reason: "ImagePullBackOff", message: "not found" } },
        },
      ]),
      problem(base, "p-new-2", "new", [
        {
          ...container,
          name: "provider",
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: { terminated: { exitCode: 3, reason: "Error" } },
        },
      ]),
      problem(base, "p-old", "old", [
        { ...container, name: "provider", state: { terminated: { exitCode: 1, reason: "OOMKilled" } } },
      ]),
    ];
    pods[2]!.metadata!.creationTimestamp = new Date("2026-12-01T09:00:00Z");
    const cached = pods.map((pod) => podForController(structuredClone(pod)));
    expect(podProblemOf(pods)).toContain("ImagePullBackOff (not found)");
    expect(podProblemOf(cached)).toBe(podProblemOf(pods));
    expect(currentRolloutPods(cached).map((p) => p.metadata?.name)).toEqual(
      currentRolloutPods(pods).map((p) => p.metadata?.name),
    );
  });

  it("finds the same Sidecar provider address and the same index values as the whole pod", () => {
    const session = sessionOf({ status: { ...RUNNING, podUID: "pod-uid-1" } });
    const { whole, cached } = both(session, "Running");
    expect(sidecarEndpoint(whole, session, "fx")).toMatch(/^http:\/\/10\.88\.0\.5:\d+$/);
    expect(sidecarEndpoint(cached, session, "fx")).toBe(sidecarEndpoint(whole, session, "fx"));
    for (const index of Object.values(GATEHOUSE_INDEXERS.pods ?? {})) {
      expect(index(cached as never)).toEqual(index(whole as never));
    }
  });

  it("keeps the metadata and drops the containers, their environment, volumes and conditions", () => {
    const { whole, cached } = both(sessionOf({ status: RUNNING }), "Running");
    expect(cached.metadata).toEqual({ ...whole.metadata, managedFields: undefined });
    expect(cached.spec?.containers).toEqual([]);
    expect(cached.spec?.volumes).toBeUndefined();
    expect(cached.status?.conditions).toBeUndefined();
    expect(JSON.stringify(cached)).not.toContain("GATEHOUSE_GATEWAY_URL");
    expect(serialize(cached).length).toBeLessThan(serialize(whole).length / 2);
  });
});
