/**
 * The shared cluster of this test run (started or chosen by test/cluster/src/global-setup.ts, by
 * `GATEHOUSE_E2E_TARGET`; see test/cluster/src/target.ts).
 */
import { inject } from "vitest";
import { LOCAL_ONLY_REASON } from "../cluster/src/target.ts";
import type { ClusterInfo } from "./environment.ts";

/**
 * The injected control-plane facts, as the e2e environment needs them. The environment runs the
 * operator, the gateway and the fake systems on this host and reaches pods through the local node's
 * bridge, so only the `local` target has them; on any other target this throws, naming the target
 * (the target runner skips such files before they get here).
 */
export function clusterInfo(): ClusterInfo {
  const target = inject("target");
  if (target.name !== "local") {
    throw new Error(`the e2e environment ${LOCAL_ONLY_REASON} (target ${target.name})`);
  }
  const cluster = inject("cluster");
  return {
    kubeconfigPath: cluster.kubeconfigPath,
    kubectlPath: cluster.kubectlPath,
    bridgeIP: cluster.bridgeIP,
    runDir: cluster.runDir,
    instance: cluster.instance,
  };
}
