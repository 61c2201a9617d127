import { statfsSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import type { CoreV1Api, V1Node } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { apiStatusCode } from "../kube-errors.ts";
import { REPO_ROOT } from "../paths.ts";
import { asDate, rfc3339, STRATEGIC_MERGE_PATCH } from "./kube-client.ts";

/** The facts a Node object is made from. */
export type NodeFacts = { nodeName: string; bridgeIP: string; podCIDR: string; kubeletVersion: string };

/**
 * The node's capacity (also its allocatable): the machine's CPUs (`os.availableParallelism()`) and memory
 * (`os.totalmem()`, in Ki as the kubelet reports it), the size of the file system holding the pod folders
 * as ephemeral-storage, and 1000 pods (DESIGN §8), far above the kubelet's default 110 so the pod count
 * never limits scheduling.
 */
export function nodeCapacity(): Record<string, string> {
  const disk = statfsSync(REPO_ROOT);
  return {
    cpu: String(availableParallelism()),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    "ephemeral-storage": `${Math.floor((disk.blocks * disk.bsize) / 1024)}Ki`,
    pods: "1000",
  };
}

/** The Ready condition the node posts: True while it runs, False once it is shutting down. */
export type Readiness = { ready: boolean; since: Date };

/**
 * How often the node status (Ready heartbeat) is re-posted when nothing changed, in milliseconds (the
 * kubelet's nodeStatusReportFrequency, shortened); the Lease carries liveness in between.
 */
export const NODE_STATUS_MS = 60_000;

/** The Node to register: labels, podCIDR(s), and the status of {@link nodeStatus}. */
export function desiredNode(facts: NodeFacts, now: Date, readiness: Readiness): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: facts.nodeName,
      labels: {
        "kubernetes.io/hostname": facts.nodeName,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "gatehouse.dev/local-node": "true",
      },
    },
    spec: { podCIDR: facts.podCIDR, podCIDRs: [facts.podCIDR] },
    status: nodeStatus(facts, now, readiness) as V1Node["status"],
  };
}

/**
 * Node status: capacity and allocatable ({@link nodeCapacity}), Ready (True with reason KubeletReady,
 * or False with KubeletNotReady while stopping) plus the three pressure conditions False, each with
 * `lastHeartbeatTime` = now, addresses (InternalIP = bridge address, Hostname), nodeInfo. Timestamps as
 * RFC 3339 strings; used as a strategic-merge patch of nodes/status (conditions merge by type).
 */
export function nodeStatus(facts: NodeFacts, now: Date, readiness: Readiness): Record<string, unknown> {
  const heartbeat = rfc3339(now);
  const since = rfc3339(readiness.since);
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: since,
  });
  return {
    capacity: nodeCapacity(),
    allocatable: nodeCapacity(),
    conditions: [
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "local node has sufficient memory"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "local node has no disk pressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID", "local node has sufficient PID available"),
      readiness.ready
        ? condition("Ready", "True", "KubeletReady", "local node is posting ready status")
        : condition("Ready", "False", "KubeletNotReady", "local node is shutting down"),
    ],
    addresses: [
      { type: "InternalIP", address: facts.bridgeIP },
      { type: "Hostname", address: facts.nodeName },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: "",
      osImage: "gatehouse local node",
      containerRuntimeVersion: "localnode://0.1.0",
      kubeletVersion: facts.kubeletVersion,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: "amd64",
    },
  };
}

/**
 * Creates the Node (or adopts an existing one of that name) and posts its status; returns the Node's
 * uid (the Lease is owned by it). Throws the API error if neither works.
 */
export async function registerNode(
  core: CoreV1Api,
  facts: NodeFacts,
  readiness: Readiness,
  log: Logger,
): Promise<string> {
  let uid: string | undefined;
  try {
    const created = await core.createNode({ body: desiredNode(facts, new Date(), readiness) });
    uid = created.metadata?.uid;
    log.info({ node: facts.nodeName }, "node registered");
  } catch (err) {
    if (apiStatusCode(err) !== 409) throw err;
    uid = (await core.readNode({ name: facts.nodeName })).metadata?.uid;
    log.info({ node: facts.nodeName }, "node already registered; adopting it");
  }
  await postNodeStatus(core, facts, readiness);
  return uid ?? "";
}

/** Strategic-merge-patches nodes/status with a fresh heartbeat (conditions merge by type). */
export async function postNodeStatus(core: CoreV1Api, facts: NodeFacts, readiness: Readiness): Promise<void> {
  await core.patchNodeStatus(
    { name: facts.nodeName, body: { status: nodeStatus(facts, new Date(), readiness) } },
    STRATEGIC_MERGE_PATCH,
  );
}

/**
 * Why the node must post its status now, or undefined: `changed` when the stored Node's Ready condition
 * is not the one it would post (absent, or another status or reason — the node lifecycle controller's
 * Unknown after missed heartbeats), `heartbeat` when that condition's heartbeat is {@link NODE_STATUS_MS}
 * old.
 */
export function nodeStatusDue(
  stored: V1Node,
  readiness: Readiness,
  now: Date,
): "changed" | "heartbeat" | undefined {
  const ready = stored.status?.conditions?.find((c) => c.type === "Ready");
  const [status, reason] = readiness.ready ? ["True", "KubeletReady"] : ["False", "KubeletNotReady"];
  if (ready?.status !== status || ready.reason !== reason) return "changed";
  const heartbeat = asDate(ready.lastHeartbeatTime)?.getTime() ?? 0;
  return now.getTime() - heartbeat >= NODE_STATUS_MS ? "heartbeat" : undefined;
}

/**
 * Compares the node's status with the stored Node's (the kubelet's nodeStatusUpdateFrequency check, run
 * at every Lease renewal) and posts it when {@link nodeStatusDue}. When the stored Ready had another
 * status, the node's Ready transitions again: `readiness.since` becomes now, as the kubelet sets a new
 * lastTransitionTime. Returns why it posted, or undefined; throws the API error of either request.
 */
export async function syncNodeStatus(
  core: CoreV1Api,
  facts: NodeFacts,
  readiness: Readiness,
): Promise<"changed" | "heartbeat" | undefined> {
  const stored = await core.readNode({ name: facts.nodeName });
  const now = new Date();
  const due = nodeStatusDue(stored, readiness, now);
  if (!due) return undefined;
  const ours = readiness.ready ? "True" : "False";
  if (stored.status?.conditions?.find((c) => c.type === "Ready")?.status !== ours) readiness.since = now;
  await postNodeStatus(core, facts, readiness);
  return due;
}
