import type { V1PodCondition, V1PodStatus } from "@kubernetes/client-node";
import type { ContainerState, Terminated } from "./container.ts";
import { rfc3339 } from "./kube-client.ts";

/** Pod phases of core/v1. */
export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed";

/** What the status builder needs to know about one container. */
export type ContainerView = {
  name: string;
  image: string;
  state: ContainerState;
  lastState: Terminated | undefined;
  restartCount: number;
  /** Running and, if it has a startup probe, past it (core/v1 ContainerStatus.started). */
  started: boolean;
  ready: boolean;
  /** True if the worker will start it again after this termination (restart policy allows it). */
  willRestart: boolean;
};

/** Everything {@link podStatusPatch} turns into a pods/status patch. */
export type PodView = {
  phase: PodPhase;
  reason?: string;
  message?: string;
  hostIP: string;
  podIP?: string;
  startTime?: Date;
  sandboxReady: boolean;
  initialized: boolean;
  initContainers: ContainerView[];
  sidecars: ContainerView[];
  containers: ContainerView[];
  /** Condition types from spec.readinessGates; they must be True (set by others) for Ready. */
  readinessGates: string[];
  /** Conditions as currently stored, to keep lastTransitionTime stable and to read readiness gates. */
  currentConditions: V1PodCondition[];
};

/**
 * The phase of a pod from its containers, as the kubelet's getPhase computes it (pkg/kubelet/
 * kubelet_pods.go): Pending until initialized and every app container has started; Running while one
 * runs or will restart; Succeeded when all exited 0 for good; Failed when all exited for good and one
 * failed. Restarting containers (waiting with a previous termination) count as stopped.
 */
export function podPhase(
  restartPolicy: string,
  initialized: boolean,
  initFailedForGood: boolean,
  containers: readonly ContainerView[],
): PodPhase {
  if (initFailedForGood) return "Failed";
  if (!initialized) return "Pending";
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of containers) {
    if (c.state.kind === "running") running++;
    else if (c.state.kind === "terminated" || c.lastState) {
      stopped++;
      const exit = c.state.kind === "terminated" ? c.state : c.lastState;
      if (exit?.exitCode === 0) succeeded++;
    } else waiting++;
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped === 0) return "Pending";
  if (restartPolicy === "Always") return "Running";
  if (stopped === succeeded) return "Succeeded";
  if (restartPolicy === "Never") return "Failed";
  return containers.some((c) => c.willRestart) ? "Running" : "Failed";
}

/**
 * The strategic-merge patch body for pods/status: phase, reason/message, hostIP(s), podIP(s),
 * startTime, conditions (PodScheduled, PodReadyToStartContainers, Initialized, ContainersReady, Ready —
 * merged by type, so conditions others own, such as readiness gates, are kept) and container statuses
 * (merged by name; unused state keys are nulled because the patch merges into the stored state).
 */
export function podStatusPatch(view: PodView, now: Date): Record<string, unknown> {
  const terminal = view.phase === "Succeeded" || view.phase === "Failed";
  const notReady = [...view.sidecars, ...view.containers].filter((c) => !c.ready).map((c) => c.name);
  const containersReady = !terminal && notReady.length === 0 && view.containers.length > 0;
  const gatesTrue = view.readinessGates.every(
    (gate) => view.currentConditions.find((c) => c.type === gate)?.status === "True",
  );
  const terminalReason = view.phase === "Succeeded" ? "PodCompleted" : "PodFailed";
  const condition = (
    type: string,
    ok: boolean,
    reason?: string,
    message?: string,
  ): Record<string, unknown> => {
    const status = ok ? "True" : "False";
    const current = view.currentConditions.find((c) => c.type === type);
    const since = current?.status === status && current.lastTransitionTime ? current.lastTransitionTime : now;
    return {
      type,
      status,
      lastProbeTime: null,
      lastTransitionTime: rfc3339(new Date(since)),
      reason: ok ? null : (reason ?? null),
      message: ok ? null : (message ?? null),
    };
  };
  const unready = `containers with unready status: [${notReady.join(" ")}]`;
  const ip = (address: string | undefined) => (address ? [{ ip: address }] : null);
  return {
    phase: view.phase,
    reason: view.reason ?? null,
    message: view.message ?? null,
    hostIP: view.hostIP,
    hostIPs: ip(view.hostIP),
    podIP: view.podIP ?? null,
    podIPs: ip(view.podIP),
    startTime: view.startTime ? rfc3339(view.startTime) : null,
    conditions: [
      condition("PodScheduled", true),
      condition("PodReadyToStartContainers", view.sandboxReady),
      condition(
        "Initialized",
        view.initialized,
        "ContainersNotInitialized",
        "containers with incomplete status: init containers",
      ),
      condition(
        "ContainersReady",
        containersReady,
        terminal ? terminalReason : "ContainersNotReady",
        terminal ? undefined : unready,
      ),
      condition(
        "Ready",
        containersReady && gatesTrue,
        terminal ? terminalReason : containersReady ? "ReadinessGatesNotReady" : "ContainersNotReady",
        terminal
          ? undefined
          : containersReady
            ? "corresponding condition of pod readiness gate is not True"
            : unready,
      ),
    ],
    initContainerStatuses: [...view.initContainers, ...view.sidecars].map((c) => containerStatus(c)),
    containerStatuses: view.containers.map((c) => containerStatus(c)),
  };
}

function containerStatus(c: ContainerView): Record<string, unknown> {
  const current = c.state;
  return {
    name: c.name,
    image: c.image,
    imageID: "",
    containerID: current.kind === "waiting" || current.containerID === "" ? null : current.containerID,
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state: stateObject(current),
    lastState: c.lastState ? stateObject(c.lastState) : {},
  };
}

/** core/v1 ContainerState with the two unused keys set to null (strategic merge would keep them). */
function stateObject(state: ContainerState): Record<string, unknown> {
  switch (state.kind) {
    case "waiting":
      return {
        waiting: { reason: state.reason, message: state.message ?? null },
        running: null,
        terminated: null,
      };
    case "running":
      return { waiting: null, running: { startedAt: rfc3339(state.startedAt) }, terminated: null };
    case "terminated":
      return {
        waiting: null,
        running: null,
        terminated: {
          exitCode: state.exitCode,
          signal: state.signal ?? null,
          reason: state.reason,
          message: state.message ?? null,
          startedAt: rfc3339(state.startedAt),
          finishedAt: rfc3339(state.finishedAt),
          containerID: state.containerID === "" ? null : state.containerID,
        },
      };
  }
}

/**
 * Where the stored pod status no longer says what the node last wrote (`patch`, from
 * {@link podStatusPatch}): its phase, or the status of one of the node's conditions — e.g. Ready=False
 * written by the node lifecycle controller while the node was NotReady. The kubelet's status manager
 * compares its status with the API server's the same way, and syncs until they agree. Empty when they
 * agree.
 */
export function statusDrift(patch: Record<string, unknown>, stored: V1PodStatus | undefined): string[] {
  const drift: string[] = [];
  if (patch.phase !== stored?.phase)
    drift.push(`phase ${stored?.phase ?? "unset"}, not ${String(patch.phase)}`);
  for (const ours of patch.conditions as V1PodCondition[]) {
    const theirs = stored?.conditions?.find((c) => c.type === ours.type);
    if (theirs?.status !== ours.status) {
      drift.push(`${ours.type}=${theirs?.status ?? "unset"}, not ${ours.status}`);
    }
  }
  return drift;
}
