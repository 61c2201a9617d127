/**
 * What the controller caches of a pod (its pod informer's transform; the gateway's is
 * gateway/pod-cache.ts): the fields its readers use and nothing else. The readers: the session
 * reconciler's (agentsession/plan.ts, transitions.ts, status.ts: the pod's phase and reason, the agent
 * container's state — how and when it ended — and its name, uid, owner and deletionTimestamp), the
 * provider reconciler's (providerinstance/plan.ts: creation time, labels, each container's state and
 * last state), approved dispatch's Sidecar address (providers/endpoints.ts: phase, IP, the sidecar
 * init container's name, port and readiness) and the indexes and event handlers (metadata). Metadata
 * stays whole. The rest — the containers with their environment, volumes, probes and security
 * contexts, the conditions, the images — is most of a pod's size: at 10 000 agent pods about 28 MiB of
 * heap and its garbage on every replica (test/bench/cache-memory.ts).
 */
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { stripForCache } from "../kube/runtime/cache-transform.ts";

/** A container's status as the controller reads it: its name, readiness, state and last state. */
function statusOf({ name, ready, restartCount, state, lastState }: V1ContainerStatus): V1ContainerStatus {
  return {
    name,
    ready,
    restartCount,
    ...(state ? { state } : {}),
    ...(lastState ? { lastState } : {}),
  } as V1ContainerStatus;
}

/**
 * `pod` as the controller caches it (see the file's comment): a new object sharing `pod`'s stripped
 * metadata and container states (a freshly parsed list item or watch event, which nothing else holds).
 */
export function podForController(pod: V1Pod): V1Pod {
  const { metadata, spec, status } = stripForCache(pod);
  const initContainers = spec?.initContainers?.map(({ name, ports }) => (ports ? { name, ports } : { name }));
  const containerStatuses = status?.containerStatuses?.map(statusOf);
  const initContainerStatuses = status?.initContainerStatuses?.map(statusOf);
  return {
    ...(pod.apiVersion ? { apiVersion: pod.apiVersion } : {}),
    ...(pod.kind ? { kind: pod.kind } : {}),
    ...(metadata ? { metadata } : {}),
    // `containers` is required of a pod's spec; the controller reads none of them.
    spec: { containers: [], ...(initContainers ? { initContainers } : {}) },
    ...(status
      ? {
          status: {
            ...(status.phase ? { phase: status.phase } : {}),
            ...(status.reason ? { reason: status.reason } : {}),
            ...(status.podIP ? { podIP: status.podIP } : {}),
            ...(containerStatuses ? { containerStatuses } : {}),
            ...(initContainerStatuses ? { initContainerStatuses } : {}),
          },
        }
      : {}),
  };
}
