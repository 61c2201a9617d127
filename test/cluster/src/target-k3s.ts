/**
 * The `k3s` e2e target (target.ts): a single-node K3s cluster in a container, started through
 * testcontainers' K3s module (`@testcontainers/k3s`: it runs the node privileged, waits for the node
 * controller and hands back the admin kubeconfig with the mapped port), with the K3s release of the
 * Kubernetes minor the local control plane builds. The `kind` target (target-kind.ts) is the other
 * container target.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { K3sContainer, type StartedK3sContainer } from "@testcontainers/k3s";
import { getContainerRuntimeClient } from "testcontainers";
import type { ContainerCluster } from "./container-cluster.ts";
import { REPO_ROOT } from "./paths.ts";

/**
 * Starts the node `image` (a K3s image, e.g. `rancher/k3s:v1.34.1-k3s1`) and writes its admin
 * kubeconfig to `.run/e2e-k3s/<container id>/kubeconfig`. Throws what testcontainers throws when the
 * engine refuses or the node does not come up within K3sContainer's startup timeout.
 */
export async function startK3sCluster(image: string): Promise<ContainerCluster> {
  // The kubeconfig names the engine's host (e.g. `docker` for DOCKER_HOST=tcp://docker:2375 in the
  // Dagger pipeline); K3s must put that name in its serving certificate, or TLS verification fails.
  const host = (await getContainerRuntimeClient()).info.containerRuntime.host;
  const container: StartedK3sContainer = await new K3sContainer(image)
    .withCommand(["server", "--disable=traefik", `--tls-san=${host}`])
    .start();
  const id = container.getId().slice(0, 12);
  const dir = join(REPO_ROOT, ".run", "e2e-k3s", id);
  mkdirSync(dir, { recursive: true });
  const adminKubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(adminKubeconfigPath, container.getKubeConfig(), { mode: 0o600 });
  return {
    adminKubeconfigPath,
    description: `${image} in container ${id}`,
    stop: async () => {
      await container.stop();
    },
  };
}
