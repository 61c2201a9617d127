/**
 * What the gateway caches of a pod (its pod informer's transform; the controller's is
 * controllers/pod-cache.ts): the fields the gateway reads and nothing else. Two readers: the
 * token's binding to its pod (authenticate.ts: the pod's name, uid, controlling owner and
 * deletionTimestamp) and a Sidecar provider's address (providers/endpoints.ts: the pod's phase and IP,
 * the sidecar init container's name and port, its readiness). Metadata stays whole (labels feed the
 * indexes). The rest — the containers with their environment, volumes, probes, security contexts,
 * conditions — is most of a pod's size, and each gateway replica caches every Gatehouse pod of the
 * served namespaces: at 10 000 agent pods that is about 10 MiB of heap, plus its garbage, on every
 * replica (test/bench/cache-memory.ts).
 */
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { stripForCache } from "../kube/runtime/cache-transform.ts";

/**
 * `pod` as the gateway caches it (see the file's comment): a new object sharing `pod`'s stripped
 * metadata (a freshly parsed list item or watch event, which nothing else holds).
 */
export function podForGateway(pod: V1Pod): V1Pod {
  const { metadata, spec, status } = stripForCache(pod);
  const initContainers = spec?.initContainers?.map(({ name, ports }) => (ports ? { name, ports } : { name }));
  const initContainerStatuses = status?.initContainerStatuses?.map(
    ({ name, ready }) => ({ name, ready }) as V1ContainerStatus,
  );
  return {
    ...(pod.apiVersion ? { apiVersion: pod.apiVersion } : {}),
    ...(pod.kind ? { kind: pod.kind } : {}),
    ...(metadata ? { metadata } : {}),
    // `containers` is required of a pod's spec; the gateway reads none of them.
    spec: { containers: [], ...(initContainers ? { initContainers } : {}) },
    ...(status
      ? {
          status: {
            ...(status.phase ? { phase: status.phase } : {}),
            ...(status.podIP ? { podIP: status.podIP } : {}),
            ...(initContainerStatuses ? { initContainerStatuses } : {}),
          },
        }
      : {}),
  };
}
