import type { V1PodStatus } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type ContainerView, type PodView, podStatusPatch, statusDrift } from "./pod-status.ts";

const now = new Date("2026-12-03T12:00:00Z");

function readyContainer(name: string): ContainerView {
  return {
    name,
    image: "gatehouse/testbox:dev",
    state: { kind: "running", startedAt: new Date("2026-12-03T11:59:00Z"), containerID: "localnode://1" },
    lastState: undefined,
    restartCount: 0,
    started: true,
    ready: true,
    willRestart: false,
  };
}

const runningReady: PodView = {
  phase: "Running",
  hostIP: "10.88.0.1",
  podIP: "10.88.0.2",
  startTime: new Date("2026-12-03T11:59:00Z"),
  sandboxReady: true,
  initialized: true,
  initContainers: [],
  sidecars: [],
  containers: [readyContainer("app")],
  readinessGates: [],
  currentConditions: [],
};

/** The stored status after the node's patch of `view` was applied, as the API server returns it. */
function storedAfter(view: PodView): V1PodStatus {
  return podStatusPatch(view, now) as V1PodStatus;
}

describe("statusDrift", () => {
  it("finds none while the stored status is what the node wrote", () => {
    expect(statusDrift(podStatusPatch(runningReady, now), storedAfter(runningReady))).toEqual([]);
  });

  it("names the Ready condition the node lifecycle controller set to False while the node was NotReady", () => {
    const stored = storedAfter(runningReady);
    stored.conditions = stored.conditions?.map((c) =>
      c.type === "Ready" ? { ...c, status: "False", reason: "NodeNotReady" } : c,
    );
    expect(statusDrift(podStatusPatch(runningReady, now), stored)).toEqual(["Ready=False, not True"]);
  });

  it("ignores conditions the node does not own, such as a readiness gate's", () => {
    const stored = storedAfter(runningReady);
    stored.conditions = [...(stored.conditions ?? []), { type: "example.com/gate", status: "False" }];
    expect(statusDrift(podStatusPatch(runningReady, now), stored)).toEqual([]);
  });

  it("names a phase the stored status lacks", () => {
    expect(statusDrift(podStatusPatch(runningReady, now), { phase: "Pending" })).toContain(
      "phase Pending, not Running",
    );
  });
});
