import type { TestProject } from "vitest/node";
import { type ControlPlane, startControlPlane } from "./controlplane.ts";
import { type LocalNode, startLocalNode } from "./node/start.ts";
import { assertHostPrerequisites } from "./prerequisites.ts";

/** What cluster tests get through `inject("cluster")`: the control-plane facts without its methods. */
export type ClusterInfo = Omit<ControlPlane, "stop" | "restartApiServer"> & {
  nodeName: string;
  nodeLogPath: string;
};

declare module "vitest" {
  export interface ProvidedContext {
    cluster: ClusterInfo;
  }
}

/**
 * vitest globalSetup of the `cluster` project: starts ONE control plane and local node for the whole
 * run, provides their facts as `inject("cluster")`, and returns the teardown that stops the node, then
 * the control plane (which also releases the bridge and any leftover pod namespaces). Throws a clear
 * error when not root or `ip`/`openssl`/`setpriv` is missing.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  assertHostPrerequisites();
  const plane: ControlPlane = await startControlPlane();
  let node: LocalNode;
  try {
    node = await startLocalNode(plane);
  } catch (err) {
    await plane.stop();
    throw err;
  }
  const { stop: _stop, restartApiServer: _restart, ...info } = plane;
  project.provide("cluster", { ...info, nodeName: node.nodeName, nodeLogPath: node.logPath });
  return async () => {
    await node.stop();
    await plane.stop();
  };
}
