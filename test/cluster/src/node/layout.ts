import { createHash } from "node:crypto";
import { join } from "node:path";

/** The identity of a pod as far as files on disk are concerned. */
export type PodKey = { namespace: string; name: string; uid: string };

/** `<runDir>/pods/<namespace>_<name>_<uid>`: everything the local node keeps for one pod. */
export function podDir(runDir: string, pod: PodKey): string {
  return join(runDir, "pods", `${pod.namespace}_${pod.name}_${pod.uid}`);
}

/**
 * The pod's root folder, given to its containers as `LOCAL_NODE_ROOT`: a volume mounted at path P is
 * found at `<root>/P`.
 */
export function podRootDir(runDir: string, pod: PodKey): string {
  return join(podDir(runDir, pod), "root");
}

/**
 * What containers get as `LOCAL_NODE_ROOT`: `/tmp/gatehouse-node-<runDir's hash>/<uid>`, a symlink to
 * {@link podRootDir}. A Unix socket's path holds at most 107 bytes, and the root's own path (checkout,
 * namespace, pod name, uid) would take most of them before a mount path and a socket name follow.
 */
export function podRootLink(runDir: string, pod: PodKey): string {
  const node = createHash("sha256").update(runDir).digest("hex").slice(0, 8);
  return join("/tmp", `gatehouse-node-${node}`, pod.uid);
}

/** Where the content of volume `volume` is written; mounts are symlinks into it. */
export function volumeDir(runDir: string, pod: PodKey, volume: string): string {
  return join(podDir(runDir, pod), "volumes", volume);
}

/** stdout and stderr of a container, appended across restarts. */
export function containerLogPath(runDir: string, pod: PodKey, container: string): string {
  return join(podDir(runDir, pod), "logs", `${container}.log`);
}
