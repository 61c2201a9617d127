import type { V1Container, V1Pod, V1ResourceFieldSelector } from "@kubernetes/client-node";
import { HarnessError } from "../errors.ts";
import { parseQuantity } from "./quantity.ts";
import { nodeCapacity } from "./registration.ts";

const RESOURCES = ["cpu", "memory", "ephemeral-storage"] as const;

/**
 * The downward-API value of `ref` (env `resourceFieldRef`, downwardAPI volume items): `limits.<r>` or
 * `requests.<r>` for r in cpu, memory, ephemeral-storage, of container `ref.containerName` (else
 * `defaultContainer`), divided by `ref.divisor` (default 1) and rounded up, as an integer string.
 * As the kubelet does, an unset limit reads as the node's allocatable, and an unset request as the limit
 * if set, else 0. Source: k8s.io/kubernetes pkg/api/v1/resource/helpers.go
 * (ExtractContainerResourceValue, convertResourceCPUToString, convertResourceMemoryToString) and
 * pkg/kubelet/kubelet_resources.go. Throws `invalid_arguments` for an unknown resource or container.
 */
export function resourceFieldValue(
  pod: V1Pod,
  ref: V1ResourceFieldSelector,
  defaultContainer: string | undefined,
): string {
  const containerName = ref.containerName || defaultContainer;
  const container = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
    (c) => c.name === containerName,
  );
  if (!container) {
    throw new HarnessError(
      "invalid_arguments",
      `resourceFieldRef ${ref.resource}: container "${containerName ?? ""}" is not in the pod`,
    );
  }
  const [kind, resource] = ref.resource.split(".", 2) as [string, string | undefined];
  if ((kind !== "limits" && kind !== "requests") || !RESOURCES.some((r) => r === resource)) {
    throw new HarnessError(
      "invalid_arguments",
      `resourceFieldRef ${ref.resource} is not supported (use limits.* or requests.* of ${RESOURCES.join(", ")})`,
    );
  }
  const value = containerResource(container, kind, resource ?? "");
  const divisor = parseQuantity(ref.divisor ?? "1");
  if (divisor <= 0)
    throw new HarnessError("invalid_arguments", `resourceFieldRef divisor ${ref.divisor} is not positive`);
  // Work in milli-units for cpu as upstream does, so "500m" / "1m" is exactly 500.
  const scaled = resource === "cpu" ? Math.round(value * 1000) / Math.round(divisor * 1000) : value / divisor;
  return String(Math.ceil(scaled));
}

function containerResource(container: V1Container, kind: "limits" | "requests", resource: string): number {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const limit = limits[resource] ?? nodeCapacity()[resource];
  if (kind === "limits") return parseQuantity(limit ?? "0");
  return parseQuantity(requests[resource] ?? limits[resource] ?? "0");
}
