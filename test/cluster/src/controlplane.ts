import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { writeAuditPolicy } from "./audit-policy.ts";
import { resolveBinDir } from "./binaries.ts";
import { bootstrapIdentities } from "./bootstrap.ts";
import {
  API_SERVER_PORT,
  apiServerArgs,
  controllerManagerArgs,
  etcdArgs,
  KUBERNETES_SERVICE_IP,
  type NodeMonitorTiming,
  schedulerArgs,
} from "./components.ts";
import { httpGet } from "./http-get.ts";
import { writeKubeconfig } from "./kubeconfig.ts";
import { allocateNetwork, type ClusterNetwork } from "./network.ts";
import { runDirFor } from "./paths.ts";
import { createPki } from "./pki.ts";
import { eventually } from "./poll.ts";
import { freePort } from "./ports.ts";
import { assertHostPrerequisites } from "./prerequisites.ts";
import { ManagedProcess } from "./process.ts";
import { COMPONENTS, PERSONAS, writeTokenAuthFile } from "./users.ts";

/** Options of {@link startControlPlane}. */
export type ControlPlaneOptions = {
  /** Folder with the binaries; default `$GATEHOUSE_CLUSTER_BIN_DIR` or what `build.sh` prints. */
  binDir?: string;
  /** How long each component may take to become healthy, in milliseconds (default 120 000). */
  componentTimeoutMs?: number;
  /**
   * kube-controller-manager's node lifecycle timing (default: its own, 50 s and 5 s): how long a node
   * may miss heartbeats before it is marked NotReady, and how often node health is checked. A test of
   * an outage shortens them to see the node go NotReady within seconds.
   */
  nodeMonitor?: NodeMonitorTiming;
};

/**
 * A running local control plane. Plain data except `stop`, so the fields can be handed to tests as they
 * are (see global-setup.ts).
 */
export type ControlPlane = {
  /**
   * Kubeconfig with contexts admin, alice, bob, carol, gatehouse-gateway,
   * gatehouse-controller, local-node (current: admin).
   */
  kubeconfigPath: string;
  /** Folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. */
  binDir: string;
  /** The kubectl built with the control plane (matching version). */
  kubectlPath: string;
  /** The bridge address: API server, host side of every pod's default route. */
  bridgeIP: string;
  /** The range pod addresses come from (the bridge's /22; the bridge holds its first host address). */
  podCIDR: string;
  /** `https://<bridgeIP>:6443`. */
  serverURL: string;
  /** PEM file of the cluster CA (also embedded in the kubeconfig). */
  caPath: string;
  /** API server audit log: JSON lines, one audit.k8s.io/v1 Event each. */
  auditLogPath: string;
  /** Per-instance state: certificates, etcd data, component logs (`*.log`), pod folders. */
  runDir: string;
  /** Instance number (bridge `ghbr<instance>`). */
  instance: number;
  /** Stops every process started for this control plane and releases the network. Idempotent. */
  stop(): Promise<void>;
  /**
   * Stops kube-apiserver (SIGTERM, then its grace), starts it again with the same flags, certificates
   * and etcd, and resolves once /readyz answers: every watch breaks meanwhile, as in an upgrade or a
   * crash of the API server. Throws like startControlPlane when it does not come back.
   */
  restartApiServer(): Promise<void>;
  /** Stops kube-apiserver (SIGTERM, then its grace) and leaves it stopped; everything else keeps running. */
  stopApiServer(): Promise<void>;
  /**
   * Starts the stopped kube-apiserver again (same flags, certificates and etcd) and resolves once
   * /readyz answers. Does nothing while it runs.
   */
  startApiServer(): Promise<void>;
};

const STOP_GRACE_MS = 5_000;

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler for a fresh instance (own bridge,
 * run dir and certificates), waits until each is healthy, creates the Gatehouse and local-node identities
 * and writes the kubeconfig. Requires root, iproute2, openssl and setpriv. If a process dies while
 * starting, throws an `unavailable` HarnessError with the tail of its log; on any failure everything
 * started so far is stopped again.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  assertHostPrerequisites();
  const binDir = await resolveBinDir(options.binDir);
  const timeoutMs = options.componentTimeoutMs ?? 120_000;
  const network = await allocateNetwork();
  const processes: ManagedProcess[] = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const p of [...processes].reverse()) await p.stop(STOP_GRACE_MS);
    await network.release();
  };
  try {
    const runDir = runDirFor(network.index);
    rmSync(runDir, { recursive: true, force: true });
    mkdirSync(runDir, { recursive: true });
    const start = (name: string, args: string[]): ManagedProcess => {
      const p = ManagedProcess.spawn({
        name,
        command: join(binDir, name),
        args,
        logPath: join(runDir, `${name}.log`),
        cwd: runDir,
      });
      processes.push(p);
      if (p.pid !== undefined) network.recordProcess(p.pid);
      return p;
    };
    const plane = await startComponents(network, runDir, binDir, timeoutMs, start, options.nodeMonitor);
    return { ...plane, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

type StartFn = (name: string, args: string[]) => ManagedProcess;

async function startComponents(
  network: ClusterNetwork,
  runDir: string,
  binDir: string,
  timeoutMs: number,
  start: StartFn,
  nodeMonitor: NodeMonitorTiming | undefined,
): Promise<Omit<ControlPlane, "stop">> {
  const serverURL = `https://${network.bridgeIP}:${API_SERVER_PORT}`;
  const pki = await createPki(join(runDir, "pki"), network.bridgeIP, KUBERNETES_SERVICE_IP);
  const caPem = readFileSync(pki.caCert, "utf8");
  const tokenAuthFile = join(runDir, "tokens.csv");
  const tokens = writeTokenAuthFile(tokenAuthFile, [...PERSONAS, ...COMPONENTS]);
  const auditPolicyFile = join(runDir, "audit-policy.yaml");
  const auditLogPath = join(runDir, "audit.log");
  writeAuditPolicy(auditPolicyFile);

  const etcdClientPort = await freePort();
  const etcd = start(
    "etcd",
    etcdArgs({ dataDir: join(runDir, "etcd"), clientPort: etcdClientPort, peerPort: await freePort() }),
  );
  await eventually(
    "etcd to report healthy",
    timeoutMs,
    async () => {
      const res = await httpGet(`http://127.0.0.1:${etcdClientPort}/health`, { timeoutMs: 2_000 });
      return res.status === 200 && res.body.includes('"true"') ? true : undefined;
    },
    { abortIf: () => etcd.deathError() },
  );

  const apiServerFlags = apiServerArgs({
    bridgeIP: network.bridgeIP,
    etcdClientPort,
    pki,
    tokenAuthFile,
    auditPolicyFile,
    auditLogPath,
    certDir: join(runDir, "apiserver-certs"),
  });
  let apiServer = start("kube-apiserver", apiServerFlags);
  const adminToken = tokens.get("admin") ?? "";
  const apiServerReady = () =>
    eventually(
      "kube-apiserver /readyz",
      timeoutMs,
      async () => {
        const res = await httpGet(`${serverURL}/readyz`, {
          timeoutMs: 5_000,
          ca: caPem,
          bearerToken: adminToken,
        });
        return res.status === 200 ? true : undefined;
      },
      { intervalMs: 500, abortIf: () => apiServer.deathError() },
    );
  await apiServerReady();
  const stopApiServer = async (): Promise<void> => {
    await apiServer.stop(5_000);
  };
  const startApiServer = async (): Promise<void> => {
    if (!apiServer.exitInfo) return;
    apiServer = start("kube-apiserver", apiServerFlags);
    await apiServerReady();
  };
  const restartApiServer = async (): Promise<void> => {
    await stopApiServer();
    await startApiServer();
  };

  const componentKubeconfig = (user: string): string => {
    const path = join(runDir, `${user.replace("system:", "")}.kubeconfig`);
    writeKubeconfig(path, {
      clusterName: "local",
      server: serverURL,
      caPem,
      users: [{ name: user, token: tokens.get(user) ?? "" }],
      currentContext: user,
    });
    return path;
  };
  const kcmPort = await freePort();
  const kcm = start(
    "kube-controller-manager",
    controllerManagerArgs({
      kubeconfig: componentKubeconfig("system:kube-controller-manager"),
      pki,
      port: kcmPort,
      certDir: join(runDir, "kube-controller-manager-certs"),
      ...(nodeMonitor ? { nodeMonitor } : {}),
    }),
  );
  const schedulerPort = await freePort();
  const scheduler = start(
    "kube-scheduler",
    schedulerArgs({
      kubeconfig: componentKubeconfig("system:kube-scheduler"),
      port: schedulerPort,
      certDir: join(runDir, "kube-scheduler-certs"),
    }),
  );
  for (const [process, port] of [
    [kcm, kcmPort],
    [scheduler, schedulerPort],
  ] as const) {
    await eventually(
      `${process.name} /healthz`,
      timeoutMs,
      async () => {
        const res = await httpGet(`https://127.0.0.1:${port}/healthz`, { timeoutMs: 2_000, insecure: true });
        return res.status === 200 ? true : undefined;
      },
      { intervalMs: 500, abortIf: () => process.deathError() ?? apiServer.deathError() },
    );
  }

  const admin = new KubeConfig();
  admin.loadFromOptions({
    clusters: [{ name: "local", server: serverURL, caData: Buffer.from(caPem).toString("base64") }],
    users: [{ name: "admin", token: adminToken }],
    contexts: [{ name: "admin", cluster: "local", user: "admin" }],
    currentContext: "admin",
  });
  const saTokens = await bootstrapIdentities(admin);
  const kubeconfigPath = join(runDir, "kubeconfig");
  writeKubeconfig(kubeconfigPath, {
    clusterName: "gatehouse-local",
    server: serverURL,
    caPem,
    users: [
      ...PERSONAS.map((p) => ({ name: p.name, token: tokens.get(p.name) ?? "" })),
      { name: "gatehouse-gateway", token: saTokens.gateway },
      { name: "gatehouse-controller", token: saTokens.controller },
      { name: "local-node", token: saTokens.localNode },
    ],
    currentContext: "admin",
  });

  return {
    kubeconfigPath,
    binDir,
    kubectlPath: join(binDir, "kubectl"),
    bridgeIP: network.bridgeIP,
    podCIDR: network.podCIDR,
    serverURL,
    caPath: pki.caCert,
    auditLogPath,
    runDir,
    instance: network.index,
    restartApiServer,
    stopApiServer,
    startApiServer,
  };
}
