/**
 * Fixtures of the local-node tests: an admin client of the shared control plane, throw-away namespaces,
 * pods of the `gatehouse/testbox:dev` image (test/cluster/images/testbox.ts), waiting on pod state and
 * reading the container logs the local node writes.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { CoreV1Api, KubeConfig, type V1Container, type V1Pod, type V1PodSpec } from "@kubernetes/client-node";
import { inject } from "vitest";
import { containerLogPath } from "../cluster/src/index.ts";
import { eventually } from "../e2e/story.ts";

export const cluster = inject("cluster");

/** The API as `admin` (tests arrange and observe; the local node acts as itself). */
export function adminCore(context = "admin"): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  kc.setCurrentContext(context);
  return kc.makeApiClient(CoreV1Api);
}

export const core = adminCore();

/** A name with a random suffix. */
export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString("hex")}`;
}

/** Creates a namespace and returns its name plus a cleanup that deletes it without waiting. */
export async function testNamespace(prefix: string): Promise<{ ns: string; cleanup: () => Promise<void> }> {
  const ns = unique(prefix);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  // Pods are refused until the ServiceAccount controller has created `default`.
  await eventually(`ServiceAccount ${ns}/default`, 60_000, async () =>
    (await core.readNamespacedServiceAccount({ namespace: ns, name: "default" }).catch(() => undefined))
      ? true
      : undefined,
  );
  return {
    ns,
    cleanup: async () => {
      await core.deleteNamespace({ name: ns }).catch(() => undefined);
    },
  };
}

/** A container of the testbox image running `verb args…`. */
export function testbox(name: string, ...args: string[]): V1Container {
  return { name, image: "gatehouse/testbox:dev", args };
}

/** Creates pod `name` in `ns` with `spec` (restartPolicy defaults to Never) and returns it. */
export async function createPod(ns: string, name: string, spec: V1PodSpec): Promise<V1Pod> {
  return core.createNamespacedPod({
    namespace: ns,
    body: { metadata: { name }, spec: { restartPolicy: "Never", ...spec } },
  });
}

/** Polls pod `ns/name` until `test` holds, and returns that version of it. */
export function waitForPod(
  ns: string,
  name: string,
  what: string,
  test: (pod: V1Pod) => boolean,
  timeoutMs = 90_000,
): Promise<V1Pod> {
  return eventually(`pod ${ns}/${name}: ${what}`, timeoutMs, async () => {
    const pod = await core.readNamespacedPod({ namespace: ns, name });
    return test(pod) ? pod : undefined;
  });
}

/** Waits until the pod's phase is Succeeded or Failed. */
export function waitForTerminal(ns: string, name: string, timeoutMs?: number): Promise<V1Pod> {
  return waitForPod(
    ns,
    name,
    "Succeeded or Failed",
    (p) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed",
    timeoutMs,
  );
}

/** The log the local node wrote for `container` of `pod` (all runs, with `---- … start` headers). */
export function containerLog(pod: V1Pod, container: string): string {
  const key = {
    namespace: pod.metadata?.namespace ?? "",
    name: pod.metadata?.name ?? "",
    uid: pod.metadata?.uid ?? "",
  };
  try {
    return readFileSync(containerLogPath(cluster.runDir, key, container), "utf8");
  } catch {
    return "";
  }
}

/** The epoch-millisecond value testbox printed after `marker` (`started sleep at 1733…`), or NaN. */
export function loggedTime(log: string, marker: string): number {
  const match = new RegExp(`${marker} at (\\d+)`).exec(log);
  return match ? Number(match[1]) : Number.NaN;
}

/** The status of `container` (app, init or sidecar) of `pod`. */
export function containerStatus(pod: V1Pod, container: string) {
  const all = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  return all.find((c) => c.name === container);
}

/** True when the pod's condition `type` is True. */
export function hasCondition(pod: V1Pod, type: string): boolean {
  return pod.status?.conditions?.some((c) => c.type === type && c.status === "True") ?? false;
}
