/**
 * The `kind` e2e target (target.ts): a real kind cluster (kind.sigs.k8s.io), one control-plane node in a
 * `kindest/node` container, created by the kind CLI that `test/kind/build.sh` builds from its Go module.
 * kind drives the engine through the `docker` CLI, so it runs with the DOCKER_HOST of the engine
 * testcontainers detected (container-cluster.ts asks first whether one answers). When that engine is
 * not on this host (e.g. `tcp://docker:2375`, the Dagger pipeline's dind service), the API server port
 * is published on all the engine's addresses and the engine's host name is added to the serving
 * certificate, and the suite's kubeconfig names that host.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getContainerRuntimeClient } from "testcontainers";
import { parse, stringify } from "yaml";
import { runCommand } from "./command.ts";
import type { ContainerCluster } from "./container-cluster.ts";
import { HarnessError } from "./errors.ts";
import { REPO_ROOT } from "./paths.ts";

/** The connection fields of testcontainers' Docker client (docker-modem) that name the engine. */
export interface EngineConnection {
  /** Unix socket path, when the engine is reached through one. */
  socketPath?: string;
  /** Host name or address, when reached over TCP. */
  host?: string;
  port?: string | number;
  /** `http` (plain TCP) or `https` (TLS with client certificates). */
  protocol?: string;
}

/**
 * The DOCKER_HOST that names `connection` for the docker CLI: `unix://<socketPath>` or
 * `tcp://<host>:<port>` (port 2375 without TLS and 2376 with it when unset, Docker's defaults). Throws
 * an `invalid_arguments` HarnessError when it names neither a socket nor a host.
 */
export function dockerHostOf(connection: EngineConnection): string {
  if (connection.socketPath) return `unix://${connection.socketPath}`;
  if (connection.host) {
    const port = connection.port || (connection.protocol === "https" ? 2376 : 2375);
    const host = connection.host.includes(":") ? `[${connection.host}]` : connection.host;
    return `tcp://${host}:${port}`;
  }
  throw new HarnessError(
    "invalid_arguments",
    "testcontainers' container engine has neither a socket path nor a host; kind cannot be pointed at it",
  );
}

/** Whether `host` (testcontainers' host of the engine) is this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/**
 * The kind cluster configuration (YAML, `kind.x-k8s.io/v1alpha4`) for an engine whose published ports
 * are reached at `engineHost`: one control-plane node; for an engine not on loopback, the API server
 * published on `0.0.0.0` at a port the engine picks (`apiServerPort: -1`) and `engineHost` added to the
 * API server's certSANs (kind merges certSANs patches with its own `localhost` and listen address).
 */
export function kindClusterConfig(engineHost: string): string {
  const config: Record<string, unknown> = {
    kind: "Cluster",
    apiVersion: "kind.x-k8s.io/v1alpha4",
    nodes: [{ role: "control-plane" }],
  };
  if (!isLoopbackHost(engineHost)) {
    config.networking = { apiServerAddress: "0.0.0.0", apiServerPort: -1 };
    config.kubeadmConfigPatches = [
      stringify({ kind: "ClusterConfiguration", apiServer: { certSANs: [engineHost] } }),
    ];
  }
  return stringify(config);
}

/** A fresh cluster name, `gatehouse-e2e-<6 hex digits>`, so parallel runs on one engine do not collide. */
export function kindClusterName(): string {
  return `gatehouse-e2e-${randomBytes(3).toString("hex")}`;
}

/**
 * The API server address the suite uses for the kubeconfig `kindKubeconfig` (YAML text kind wrote):
 * undefined on a loopback engine (kind's own `https://127.0.0.1:<port>` works), else the same port at
 * `engineHost` (kind writes the listen address `0.0.0.0` there). Throws `invalid_arguments` when the
 * kubeconfig names no server.
 */
export function kindServerFor(kindKubeconfig: string, engineHost: string): string | undefined {
  if (isLoopbackHost(engineHost)) return undefined;
  const config = parse(kindKubeconfig) as { clusters?: Array<{ cluster?: { server?: string } }> };
  const server = config.clusters?.[0]?.cluster?.server;
  if (!server) throw new HarnessError("invalid_arguments", "kind's kubeconfig names no API server");
  const url = new URL(server);
  url.hostname = engineHost.includes(":") ? `[${engineHost}]` : engineHost;
  return url.toString().replace(/\/$/, "");
}

/**
 * The `kind create cluster` arguments: `name`, node image `nodeImage` (pinned by digest), the config
 * file, the kubeconfig file to write and `--wait 120s` for the control-plane node to be Ready.
 */
export function kindCreateArgs(
  name: string,
  nodeImage: string,
  configPath: string,
  kubeconfigPath: string,
): string[] {
  return [
    "create",
    "cluster",
    "--name",
    name,
    "--image",
    nodeImage,
    "--config",
    configPath,
    "--kubeconfig",
    kubeconfigPath,
    "--wait",
    "120s",
  ];
}

/**
 * The path of the `kind` binary: `$GATEHOUSE_KIND` if set, else `kind` in the folder
 * `test/kind/build.sh` prints (which builds it from its Go module first when its cache is missing).
 * Throws an `unavailable` HarnessError with the build's stderr when the build fails.
 */
export async function resolveKind(): Promise<string> {
  if (process.env.GATEHOUSE_KIND) return process.env.GATEHOUSE_KIND;
  const { stdout } = await runCommand(join(REPO_ROOT, "test/kind/build.sh"), [], {
    timeoutMs: 30 * 60 * 1000,
  });
  return join(stdout.trim().split("\n").at(-1) ?? "", "kind");
}

/** Writes the engine's TLS client files (docker-modem keeps their contents) as DOCKER_CERT_PATH wants them. */
function writeDockerCerts(dir: string, tls: { ca: unknown; cert: unknown; key: unknown }): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const text = (value: unknown): string =>
    Array.isArray(value) ? value.map(String).join("\n") : String(value);
  writeFileSync(join(dir, "ca.pem"), text(tls.ca), { mode: 0o600 });
  writeFileSync(join(dir, "cert.pem"), text(tls.cert), { mode: 0o600 });
  writeFileSync(join(dir, "key.pem"), text(tls.key), { mode: 0o600 });
}

/**
 * Creates a kind cluster on the engine testcontainers detected and returns it (its `stop` runs `kind
 * delete cluster`). `nodeImage` is the `kindest/node` image; `loadImages` are loaded into the node with
 * `kind load docker-image` (they must exist in that engine). Files go to `.run/e2e-kind/<cluster name>/`
 * (config, kubeconfig mode 0600, TLS client files when the engine uses TLS). Throws an `unavailable`
 * HarnessError with kind's output when a kind command fails (e.g. no `docker` CLI on PATH, the image
 * cannot be pulled, the node is not Ready within 120 s); a cluster created before the failure is deleted.
 */
export async function startKindCluster(
  nodeImage: string,
  loadImages: readonly string[],
): Promise<ContainerCluster> {
  const kind = await resolveKind();
  const client = await getContainerRuntimeClient();
  const engineHost = client.info.containerRuntime.host;
  const modem = client.container.dockerode.modem as unknown as EngineConnection & {
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
  };
  const name = kindClusterName();
  const dir = join(REPO_ROOT, ".run", "e2e-kind", name);
  mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: dockerHostOf(modem) };
  delete env.DOCKER_CONTEXT;
  if (modem.protocol === "https" && modem.ca && modem.cert && modem.key) {
    writeDockerCerts(join(dir, "docker-certs"), { ca: modem.ca, cert: modem.cert, key: modem.key });
    env.DOCKER_TLS_VERIFY = "1";
    env.DOCKER_CERT_PATH = join(dir, "docker-certs");
  }
  const configPath = join(dir, "kind-config.yaml");
  writeFileSync(configPath, kindClusterConfig(engineHost));
  const adminKubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(adminKubeconfigPath, "", { mode: 0o600 });

  const stop = async (): Promise<void> => {
    await runCommand(kind, ["delete", "cluster", "--name", name, "--kubeconfig", adminKubeconfigPath], {
      env,
      timeoutMs: 5 * 60 * 1000,
    });
  };
  await runCommand(kind, kindCreateArgs(name, nodeImage, configPath, adminKubeconfigPath), {
    env,
    timeoutMs: 20 * 60 * 1000,
  });
  try {
    if (loadImages.length > 0) {
      await runCommand(kind, ["load", "docker-image", "--name", name, ...loadImages], {
        env,
        timeoutMs: 20 * 60 * 1000,
      });
    }
    const server = kindServerFor(readFileSync(adminKubeconfigPath, "utf8"), engineHost);
    return {
      adminKubeconfigPath,
      ...(server ? { server } : {}),
      description: `kind cluster ${name} (${nodeImage}) on ${env.DOCKER_HOST}${loadImages.length > 0 ? `, images ${loadImages.join(", ")} loaded` : ""}`,
      stop,
    };
  } catch (error) {
    await stop().catch((stopError: unknown) => {
      console.error(`target kind: deleting ${name} after a failed start failed too: ${String(stopError)}`);
    });
    throw error;
  }
}
