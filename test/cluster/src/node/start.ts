import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { ControlPlane } from "../controlplane.ts";
import { REPO_ROOT } from "../paths.ts";
import { eventually } from "../poll.ts";
import { ManagedProcess } from "../process.ts";
import { nodeConfigArgs } from "./config.ts";

/** Options of {@link startLocalNode}. */
export type LocalNodeOptions = {
  /** Node name (default `local-node`). */
  nodeName?: string;
  /** How long the node may take to become Ready and untainted, in milliseconds (default 120 000). */
  readyTimeoutMs?: number;
};

/** A running local node process. */
export type LocalNode = {
  nodeName: string;
  /** The node's own log (JSON lines); container logs are under `<runDir>/pods/<ns>_<name>_<uid>/logs/`. */
  logPath: string;
  /** Stops the node: its pods' processes get SIGTERM (2 s grace) and their namespaces are removed. */
  stop(): Promise<void>;
  /**
   * Freezes the node process (SIGSTOP) until {@link resume}: no heartbeat, no status, its pods run on —
   * a kubelet cut off from the API server, for as long as a test needs to observe it.
   */
  pause(): void;
  resume(): void;
};

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const NOT_READY_TAINT = "node.kubernetes.io/not-ready";

/**
 * Spawns the local node (`main.ts`, as the `local-node` ServiceAccount of `plane`'s kubeconfig) and
 * waits until its Node is Ready and the node lifecycle controller has removed the `not-ready` taint, so
 * pods schedule onto it at once. Throws an `unavailable` HarnessError with the tail of the node's log if
 * it exits while starting, or a `timeout` one.
 */
export async function startLocalNode(
  plane: Pick<ControlPlane, "kubeconfigPath" | "bridgeIP" | "podCIDR" | "runDir">,
  options: LocalNodeOptions = {},
): Promise<LocalNode> {
  const nodeName = options.nodeName ?? "local-node";
  const proc = ManagedProcess.spawn({
    name: "local-node",
    command: process.execPath,
    args: [
      MAIN,
      ...nodeConfigArgs({
        kubeconfig: plane.kubeconfigPath,
        context: "local-node",
        nodeName,
        bridgeIP: plane.bridgeIP,
        podCIDR: plane.podCIDR,
        runDir: plane.runDir,
      }),
    ],
    logPath: join(plane.runDir, "local-node.log"),
    cwd: REPO_ROOT,
  });
  const stop = async (): Promise<void> => {
    await proc.stop(15_000);
  };
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    kc.setCurrentContext("admin");
    const core = kc.makeApiClient(CoreV1Api);
    await eventually(
      `node ${nodeName} to be Ready without the ${NOT_READY_TAINT} taint`,
      options.readyTimeoutMs ?? 120_000,
      async () => {
        const node = await core.readNode({ name: nodeName });
        const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        const tainted = node.spec?.taints?.some((t) => t.key === NOT_READY_TAINT);
        return ready && !tainted ? true : undefined;
      },
      { intervalMs: 500, abortIf: () => proc.deathError() },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const signal = (name: NodeJS.Signals) => {
    if (proc.pid !== undefined) process.kill(proc.pid, name);
  };
  return {
    nodeName,
    logPath: proc.logPath,
    stop: async () => {
      signal("SIGCONT");
      await stop();
    },
    pause: () => signal("SIGSTOP"),
    resume: () => signal("SIGCONT"),
  };
}
