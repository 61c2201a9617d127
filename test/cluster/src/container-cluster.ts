/**
 * What the container targets (`kind`, `k3s`; target.ts) share: asking testcontainers whether a
 * container engine answers, and the shape of a cluster started on it.
 */
import { getContainerRuntimeClient } from "testcontainers";

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
  /** Kubeconfig with the cluster's admin context (current context), mode 0600. */
  adminKubeconfigPath: string;
  /** The API server address to use instead of the kubeconfig's, when it names one the host cannot reach. */
  server?: string;
  /** One line for the log: what runs where (image, container or cluster name). */
  description: string;
  /** Stops and removes the cluster. Rejects with the engine's or CLI's error. */
  stop(): Promise<void>;
}
