/**
 * The `kind` e2e target (target.ts): a single-node Kubernetes cluster in a container, started through
 * testcontainers. testcontainers-node has no kind module; its K3s module (`@testcontainers/k3s`) is the
 * maintained way to get a conformant cluster from a container engine (it runs the node privileged,
 * waits for the node controller and hands back the admin kubeconfig with the mapped port), so the
 * target uses it, with the K3s release of the Kubernetes minor the local control plane builds.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { K3sContainer, type StartedK3sContainer } from "@testcontainers/k3s";
import { getContainerRuntimeClient } from "testcontainers";
import { REPO_ROOT } from "./paths.ts";

/**
 * Asks testcontainers for a container engine (Docker or Podman through DOCKER_HOST, the socket, or
 * testcontainers' own configuration). Resolves with undefined when one answers, else with the
 * engine's error as text (e.g. "Could not find a working container runtime strategy"). Never throws.
 */
export async function containerEngineProblem(): Promise<string | undefined> {
  try {
    await getContainerRuntimeClient();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** A running container cluster: its admin kubeconfig file and how to stop it. */
export interface ContainerCluster {
  /** Kubeconfig (admin context of the node, server = the container's mapped API port), mode 0600. */
  adminKubeconfigPath: string;
  stop(): Promise<void>;
}

/**
 * Starts the node `image` (a K3s image, e.g. `rancher/k3s:v1.34.1-k3s1`) and writes its admin
 * kubeconfig to `.run/container-cluster/<container id>/kubeconfig`. Throws what testcontainers throws
 * when the engine refuses or the node does not come up within K3sContainer's startup timeout.
 */
export async function startContainerCluster(image: string): Promise<ContainerCluster> {
  // The kubeconfig names the engine's host (e.g. `docker` for DOCKER_HOST=tcp://docker:2375 in the
  // Dagger pipeline); K3s must put that name in its serving certificate, or TLS verification fails.
  const host = (await getContainerRuntimeClient()).info.containerRuntime.host;
  const container: StartedK3sContainer = await new K3sContainer(image)
    .withCommand(["server", "--disable=traefik", `--tls-san=${host}`])
    .start();
  const dir = join(REPO_ROOT, ".run", "container-cluster", container.getId().slice(0, 12));
  mkdirSync(dir, { recursive: true });
  const adminKubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(adminKubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  return {
    adminKubeconfigPath,
    stop: async () => {
      await container.stop();
    },
  };
}
