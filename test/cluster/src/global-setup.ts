import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { resolveBinDir } from "./binaries.ts";
import { type ContainerCluster, containerEngineProblem } from "./container-cluster.ts";
import { type ControlPlane, startControlPlane } from "./controlplane.ts";
import { type LocalNode, startLocalNode } from "./node/start.ts";
import { REPO_ROOT } from "./paths.ts";
import { assertHostPrerequisites } from "./prerequisites.ts";
import {
  chooseTarget,
  containerTargetUnavailable,
  impersonatingKubeconfig,
  type TargetChoice,
  type TargetName,
} from "./target.ts";
import { startK3sCluster } from "./target-k3s.ts";
import { startKindCluster } from "./target-kind.ts";

/**
 * What cluster tests get through `inject("cluster")`: the control-plane facts without its methods.
 * On the `local` target every field is real. On `kind`, `k3s` and `kubeconfig` only `kubeconfigPath` (contexts
 * admin, alice, bob, carol, gatehouse-gateway, gatehouse-controller by impersonation) and `kubectlPath` are; the local-node
 * fields are empty (`""`, instance -1) — the target runner (target-runner.ts) skips every file that
 * needs them before it runs, so no test reads them there.
 */
export type ClusterInfo = Omit<
  ControlPlane,
  "stop" | "restartApiServer" | "stopApiServer" | "startApiServer"
> & {
  nodeName: string;
  nodeLogPath: string;
};

/** What the target runner and portable tests get through `inject("target")`. */
export interface TargetInfo {
  name: TargetName;
  /** Set when the target cannot be reached (kind or k3s without a container engine): every test is skipped. */
  unavailable?: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    cluster: ClusterInfo;
    target: TargetInfo;
  }
}

/** ClusterInfo of a non-local target: the kubeconfig and kubectl only (see {@link ClusterInfo}). */
function remoteClusterInfo(kubeconfigPath: string, binDir: string, runDir: string): ClusterInfo {
  return {
    kubeconfigPath,
    binDir,
    kubectlPath: join(binDir, "kubectl"),
    bridgeIP: "",
    podCIDR: "",
    serverURL: "",
    caPath: "",
    auditLogPath: "",
    runDir,
    instance: -1,
    nodeName: "",
    nodeLogPath: "",
  };
}

/**
 * Writes the impersonating kubeconfig of a non-local target under `.run/e2e-<target>/` (`server`
 * replaces the source's API server address when given).
 */
function writeTargetKubeconfig(
  target: TargetName,
  sourcePath: string,
  context?: string,
  server?: string,
): string {
  const runDir = join(REPO_ROOT, ".run", `e2e-${target}`);
  mkdirSync(runDir, { recursive: true });
  const path = join(runDir, "kubeconfig");
  writeFileSync(path, impersonatingKubeconfig(sourcePath, context, server), { mode: 0o600 });
  return path;
}

/** Starts the cluster of a container target: kind (target-kind.ts) or K3s (target-k3s.ts). */
function startContainerTarget(target: TargetChoice & { name: "kind" | "k3s" }): Promise<ContainerCluster> {
  return target.name === "kind"
    ? startKindCluster(target.nodeImage, target.loadImages)
    : startK3sCluster(target.image);
}

/**
 * vitest globalSetup of the `cluster` project. By `GATEHOUSE_E2E_TARGET` (target.ts):
 * - `local` (default): starts ONE control plane and local node for the whole run, provides their
 *   facts as `inject("cluster")`, and returns the teardown that stops the node, then the control plane
 *   (which also releases the bridge and any leftover pod namespaces). Throws a clear error when not
 *   root or `ip`/`openssl`/`setpriv` is missing.
 * - `kind` and `k3s`: when a container engine answers, creates the kind cluster (target-kind.ts) or
 *   starts the K3s container (target-k3s.ts) and deletes it after the run; when none does, prints
 *   `skipped: no container engine answers (<error>)` and marks the target unavailable, so the target
 *   runner skips every test.
 * - `kubeconfig`: connects to `$KUBECONFIG`'s cluster; nothing is started or stopped.
 * Throws an `invalid_arguments` HarnessError for an unknown target or a missing KUBECONFIG.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const target = chooseTarget(process.env);
  if (target.name === "kind" || target.name === "k3s") {
    const runDir = join(REPO_ROOT, ".run", `e2e-${target.name}`);
    const reason = containerTargetUnavailable(target.name, await containerEngineProblem());
    if (reason) {
      console.log(`target ${target.name}: ${reason}`);
      project.provide("target", { name: target.name, unavailable: reason });
      project.provide("cluster", remoteClusterInfo("", "", runDir));
      return async () => {};
    }
    const binDir = await resolveBinDir();
    const cluster = await startContainerTarget(target);
    try {
      const kubeconfigPath = writeTargetKubeconfig(
        target.name,
        cluster.adminKubeconfigPath,
        undefined,
        cluster.server,
      );
      project.provide("target", { name: target.name });
      project.provide("cluster", remoteClusterInfo(kubeconfigPath, binDir, runDir));
      console.log(`target ${target.name}: ${cluster.description}; kubeconfig ${kubeconfigPath}`);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return async () => {
      await cluster.stop();
    };
  }
  if (target.name === "kubeconfig") {
    const binDir = await resolveBinDir();
    const kubeconfigPath = writeTargetKubeconfig("kubeconfig", target.kubeconfigPath, target.context);
    project.provide("target", { name: "kubeconfig" });
    project.provide(
      "cluster",
      remoteClusterInfo(kubeconfigPath, binDir, join(REPO_ROOT, ".run", "e2e-kubeconfig")),
    );
    console.log(
      `target kubeconfig: ${target.kubeconfigPath} (context ${target.context ?? "current"}); personas by impersonation in ${kubeconfigPath}`,
    );
    return async () => {};
  }

  assertHostPrerequisites();
  const plane: ControlPlane = await startControlPlane();
  let node: LocalNode;
  try {
    node = await startLocalNode(plane);
  } catch (err) {
    await plane.stop();
    throw err;
  }
  const {
    stop: _stop,
    restartApiServer: _restart,
    stopApiServer: _stopApiServer,
    startApiServer: _startApiServer,
    ...info
  } = plane;
  project.provide("target", { name: "local" });
  project.provide("cluster", { ...info, nodeName: node.nodeName, nodeLogPath: node.logPath });
  return async () => {
    await node.stop();
    await plane.stop();
  };
}
