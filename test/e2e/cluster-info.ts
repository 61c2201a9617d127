/** The shared control plane of this test run (started by test/cluster/src/global-setup.ts). */
import { inject } from "vitest";
import type { ClusterInfo } from "./environment.ts";

/** The injected control-plane facts, as the environment needs them. */
export function clusterInfo(): ClusterInfo {
  const cluster = inject("cluster");
  return {
    kubeconfigPath: cluster.kubeconfigPath,
    kubectlPath: cluster.kubectlPath,
    bridgeIP: cluster.bridgeIP,
    runDir: cluster.runDir,
    instance: cluster.instance,
  };
}
