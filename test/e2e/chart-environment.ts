/**
 * The reference story's environment with the operator installed from the Helm chart, as a platform
 * engineer would: `helm install` of charts/gatehouse into gatehouse-system, its two replicas running as
 * pods on the local node (image gatehouse/operator:<appVersion> in the node's image map). What a real
 * cluster would give those pods, the local node lacks, so this file supplies it:
 *   - kube-proxy → a Service proxy for Service gatehouse-gateway on the bridge address
 *     (test/cluster/src/service-proxy.ts); the agents' GATEWAY_URL (value gateway.url) is its address;
 *   - a database reachable from pods → a forwarder from the bridge address to the Postgres server
 *     (test/cluster/src/host-forwarder.ts); the owner's URL (database.url) and both runtime logins'
 *     (database.runtime.*.url) go in as values. The database is created empty: the chart's migrate
 *     Job (a pre-install hook) migrates it and creates the runtime logins;
 *   - the scripted model is on the bridge address, its port opened for the gateway's pods.
 * The fake APS, the model key, the database and the plant-a examples are environment.ts's.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { parse } from "yaml";
import { LEADER_LEASE } from "../../operator/src/api/rbac.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { dropDatabase } from "../../operator/src/store/connection.ts";
import {
  eventually,
  forwardHostService,
  resolveImage,
  type ServiceProxy,
  startServiceProxy,
  type TcpProxy,
} from "../cluster/src/index.ts";
import { CHART_DIR, resolveHelm } from "../helm/helm.ts";
import {
  applyExampleNamespace,
  applyModelKey,
  type BaseEnvironment,
  type ClusterInfo,
  installApi,
  MODEL_KEY_SECRET,
  NAMESPACE,
  prepareDatabase,
  REPO_ROOT,
  startFakeSystems,
} from "./environment.ts";
import { type Kubectl, type KubectlResult, kubectlFor } from "./kubectl.ts";

/** The release name; the chart names its objects after it (`gatehouse-gateway`, `gatehouse-controller`). */
export const RELEASE = "gatehouse";
/** The gateway's Deployment (and ServiceAccount, ClusterRole, …): `<release>-gateway`. */
export const GATEWAY_DEPLOYMENT = `${RELEASE}-gateway`;
/** The controller's Deployment (and ServiceAccount, ClusterRole, …), whose pods hold the Lease. */
export const CONTROLLER_DEPLOYMENT = `${RELEASE}-controller`;
/** The Deployment whose pods elect a leader: the controller's. */
export const OPERATOR_DEPLOYMENT = CONTROLLER_DEPLOYMENT;
/** The migrate Job, a pre-install/pre-upgrade hook kept until the next one: `<release>-migrate`. */
export const MIGRATE_JOB = `${RELEASE}-migrate`;
/** The gateway Service: `<release>-gateway`, port name `gateway`. */
export const GATEWAY_SERVICE = `${RELEASE}-gateway`;
/** Labels of the controller's pods (the chart's selector labels), which elect a leader. */
export const OPERATOR_POD_SELECTOR = `app.kubernetes.io/name=gatehouse-controller,app.kubernetes.io/instance=${RELEASE}`;
/** Labels of the gateway's pods. */
export const GATEWAY_POD_SELECTOR = `app.kubernetes.io/name=gatehouse-gateway,app.kubernetes.io/instance=${RELEASE}`;
/** The Lease the controller replicas elect their leader on. */
export { LEADER_LEASE };

/**
 * Where a chart runs its long-running pods: this version's two Deployments, or the one Deployment
 * `<release>-operator` of the versions before the split (the upgrade test installs one of those).
 */
export interface ChartLayout {
  /** The Deployments the environment waits to be Available. */
  deployments: string[];
  /** The Lease their leader holds, and the label selector of its candidates' pods. */
  lease: string;
  candidates: string;
  /** The layout's values of the harness's ServiceAccounts: kept on uninstall (bootstrap made them). */
  serviceAccountValues: Record<string, unknown>;
  /**
   * Whether the chart has value networkPolicy.offClusterGateways. Without it, the environment lets agent
   * pods reach the gateway's Service proxy (a host process no selector names) by a NetworkPolicy of its
   * own in the session namespace, as a platform would: policies add up.
   */
  offClusterGatewaysValue: boolean;
}

const KEEP = { annotations: { "helm.sh/resource-policy": "keep" } };

/** This version's layout. */
export const SPLIT_LAYOUT: ChartLayout = {
  deployments: [GATEWAY_DEPLOYMENT, CONTROLLER_DEPLOYMENT],
  lease: LEADER_LEASE,
  candidates: OPERATOR_POD_SELECTOR,
  serviceAccountValues: { gateway: { serviceAccount: KEEP }, controller: { serviceAccount: KEEP } },
  offClusterGatewaysValue: true,
};

/** The layout of the versions before the split: one Deployment, Lease gatehouse-operator. */
export const SINGLE_OPERATOR_LAYOUT: ChartLayout = {
  deployments: [`${RELEASE}-operator`],
  lease: "gatehouse-operator",
  candidates: `app.kubernetes.io/name=gatehouse-operator,app.kubernetes.io/instance=${RELEASE}`,
  serviceAccountValues: { serviceAccount: KEEP },
  offClusterGatewaysValue: false,
};

/** An environment whose operator is the chart's release. */
export interface ChartEnvironment extends BaseEnvironment {
  /** The Service proxy agent pods reach the gateway through (`gatewayUrl` is its URL). */
  gatewayProxy: ServiceProxy;
  /** The forwarder pods reach Postgres through. */
  databaseForwarder: TcpProxy;
  /** The values file the release was installed with. */
  valuesPath: string;
  /** Runs `helm args…` against the control plane as admin; never throws on a non-zero exit. */
  helm(args: string[]): Promise<KubectlResult>;
  /** `helm uninstall` of the release (waiting for its objects to go); stop() then skips it. */
  uninstall(): Promise<KubectlResult>;
}

/** What {@link ChartEnvironmentOptions.values} may use to compute its values. */
export interface ChartValuesContext {
  /** The database's name (its runtime logins are `<database>_controller`, `<database>_gateway`). */
  database: string;
  /** The owner's URL as the host reaches it. */
  ownerUrl: string;
  /** A pool to the database as its owner. */
  pool: pg.Pool;
  /** `url` (host-side) as pods reach it, through the database forwarder. */
  podUrl(url: string): string;
}

/** Options of {@link startChartEnvironment}. */
export interface ChartEnvironmentOptions {
  /**
   * More chart values, merged over the environment's at the top level; a function is called once the
   * database and its forwarder exist (for values naming logins it creates).
   */
  values?: Record<string, unknown> | ((context: ChartValuesContext) => Promise<Record<string, unknown>>);
  /** The chart to install. Default: the working tree's charts/gatehouse. */
  chartDir?: string;
  /** How that chart lays out its pods. Default: {@link SPLIT_LAYOUT}, this version's. */
  layout?: ChartLayout;
  /** The operator image the values select. Default: gatehouse/operator:<the chart's appVersion>. */
  image?: string;
  progress?: (line: string) => void;
}

function runHelm(helmPath: string, cluster: ClusterInfo, args: string[]): Promise<KubectlResult> {
  const full = ["--kubeconfig", cluster.kubeconfigPath, "--kube-context", "admin", ...args];
  return new Promise((resolve) => {
    execFile(helmPath, full, { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({
        command: `helm ${args.join(" ")}`,
        code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
        stdout,
        stderr,
      }),
    );
  });
}

/** `url` with its host and port replaced by `host`:`port` (the pod-facing forwarder). */
function viaForwarder(url: string, host: string, port: number): string {
  const rewritten = new URL(url);
  rewritten.hostname = host;
  rewritten.port = String(port);
  return rewritten.toString();
}

/**
 * Starts the environment and installs the chart. Waits until Deployments gatehouse-gateway and
 * gatehouse-controller are Available, a controller pod holds Lease gatehouse-controller, and the
 * plant-a provider and Capabilities are Ready. Throws (after undoing what it did) with helm's output or the operator pods' log tails.
 */
export async function startChartEnvironment(
  cluster: ClusterInfo,
  options: ChartEnvironmentOptions = {},
): Promise<ChartEnvironment> {
  const progress = options.progress ?? (() => {});
  const kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
  const helmPath = await resolveHelm();
  const helm = (args: string[]) => runHelm(helmPath, cluster, args);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
    const chartDir = options.chartDir ?? CHART_DIR;
    const layout = options.layout ?? SPLIT_LAYOUT;
    const appVersion = (parse(readFileSync(join(chartDir, "Chart.yaml"), "utf8")) as { appVersion: string })
      .appVersion;
    const image = options.image ?? `gatehouse/operator:${appVersion}`;
    if (!resolveImage(cluster.runDir, image)) {
      throw new Error(
        `the chart's image ${image} is not in the local node's map (test/cluster/src/node/images.ts)`,
      );
    }
    const { aps, model } = await startFakeSystems(cluster, stops, progress, true);

    const database = `gatehouse_chart_${Date.now().toString(36)}`;
    const prepared = await prepareDatabase(database, { migrate: false });
    stops.push(async () => {
      await prepared.dropLogins();
      await prepared.pool.end();
      await dropDatabase(prepared.server.url, database);
      await prepared.server.stop();
    });
    const server = new URL(prepared.url);
    const databaseForwarder = await forwardHostService(cluster.instance, cluster.bridgeIP, {
      host: server.hostname,
      port: Number(server.port || "5432"),
    });
    stops.push(() => databaseForwarder.close());
    progress(
      `Postgres database ${database}, reached by pods at ${cluster.bridgeIP}:${databaseForwarder.port}`,
    );

    const modelKey = await applyModelKey(kubectl);
    const gatewayProxy = await startServiceProxy({
      kubeconfigPath: cluster.kubeconfigPath,
      namespace: OPERATOR_NAMESPACE,
      service: GATEWAY_SERVICE,
      portName: "gateway",
      host: cluster.bridgeIP,
      instance: cluster.instance,
    });
    stops.push(() => gatewayProxy.close());
    progress(`Service ${OPERATOR_NAMESPACE}/${GATEWAY_SERVICE} proxied at ${gatewayProxy.url}`);

    const proxyEgress = { cidr: `${cluster.bridgeIP}/32`, port: gatewayProxy.port };
    const values = {
      database: {
        // The owner's URL reaches only the migrate Job; the operator pods get the controller's login.
        url: viaForwarder(prepared.url, cluster.bridgeIP, databaseForwarder.port),
        runtime: {
          controller: {
            url: viaForwarder(prepared.runtimeUrls.controller, cluster.bridgeIP, databaseForwarder.port),
          },
          gateway: {
            url: viaForwarder(prepared.runtimeUrls.gateway, cluster.bridgeIP, databaseForwarder.port),
          },
        },
      },
      // The harness's own component tokens (kubeconfig contexts) are bound to these ServiceAccounts:
      // the release adopts them but must not delete them on uninstall.
      ...layout.serviceAccountValues,
      gateway: {
        url: gatewayProxy.url,
        ...((layout.serviceAccountValues.gateway as Record<string, unknown> | undefined) ?? {}),
      },
      rbac: { identityBindingNamespaces: [NAMESPACE] },
      // Agent pods reach the gateway through the Service proxy, a host process no selector names.
      ...(layout.offClusterGatewaysValue ? { networkPolicy: { offClusterGateways: [proxyEgress] } } : {}),
      // The chart's default, gatehouse/agent:<appVersion>, is a registry's image; the local node runs :dev.
      agent: { image: "gatehouse/agent:dev" },
      modelEndpoints: [
        { name: "scripted", baseURL: model.url, keySecretRef: MODEL_KEY_SECRET, default: true },
      ],
      audit: { checkpointIntervalSeconds: 1 },
      ...(typeof options.values === "function"
        ? await options.values({
            database,
            ownerUrl: prepared.url,
            pool: prepared.pool,
            podUrl: (url) => viaForwarder(url, cluster.bridgeIP, databaseForwarder.port),
          })
        : options.values),
    };
    const valuesPath = join(cluster.runDir, `chart-values-${database}.json`);
    writeFileSync(valuesPath, JSON.stringify(values, null, 2), { mode: 0o600 });

    let installed = false;
    const uninstall = async () => {
      installed = false;
      const result = await helm([
        "uninstall",
        RELEASE,
        "-n",
        OPERATOR_NAMESPACE,
        "--wait",
        "--timeout",
        "120s",
      ]);
      // helm uninstall leaves hook resources: the migrate Job (kept for its log) goes by hand.
      await kubectl.run("admin", [
        "delete",
        "job",
        MIGRATE_JOB,
        "-n",
        OPERATOR_NAMESPACE,
        "--ignore-not-found",
      ]);
      return result;
    };
    stops.push(async () => {
      if (installed) await uninstall();
    });
    // The sessions go while the operator still runs: their finalizer cancels their Approvals.
    stops.push(async () => {
      if (!installed) return;
      await kubectl.run("admin", [
        "delete",
        "agentsessions",
        "--all",
        "-n",
        NAMESPACE,
        "--timeout=30s",
        "--request-timeout=10s",
      ]);
    });
    // The release binds roles in the provider namespace (rbac.identityBindingNamespaces), so the platform
    // creates it first, as docs/install.md's install does; the suite may have made it already.
    await kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } }),
    );
    if (!layout.offClusterGatewaysValue) {
      await kubectl.ok(
        "admin",
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
          metadata: { name: "agents-to-gateway-proxy", namespace: NAMESPACE },
          spec: {
            podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-agent" } },
            policyTypes: ["Egress"],
            egress: [
              {
                to: [{ ipBlock: { cidr: proxyEgress.cidr } }],
                ports: [{ protocol: "TCP", port: proxyEgress.port }],
              },
            ],
          },
        }),
      );
      stops.push(async () => {
        await kubectl.run("admin", [
          "delete",
          "networkpolicy",
          "agents-to-gateway-proxy",
          "-n",
          NAMESPACE,
          "--ignore-not-found",
        ]);
      });
    }
    // crds/ may have been applied already (the e2e suite does so earlier on the same control plane):
    // --take-ownership lets the release adopt those objects instead of refusing them.
    const install = await helm([
      "install",
      RELEASE,
      chartDir,
      "-n",
      OPERATOR_NAMESPACE,
      "--take-ownership",
      "-f",
      valuesPath,
    ]);
    if (install.code !== 0) {
      const migrateLogs = await migrateJobLogs(kubectl, cluster);
      throw new Error(
        `helm install failed (${install.code}): ${install.stderr}\nmigrate Job logs:\n${migrateLogs.text}`,
      );
    }
    installed = true;
    progress(`helm install ${RELEASE} ${chartDir} -n ${OPERATOR_NAMESPACE}: ${image} × 2`);

    await kubectl
      .ok("admin", [
        "wait",
        "-n",
        OPERATOR_NAMESPACE,
        "--for=condition=Available",
        "--timeout=180s",
        ...layout.deployments.map((name) => `deployment/${name}`),
      ])
      .catch(async (error: unknown) => {
        const pods = await kubectl.run("admin", ["get", "pods", "-n", OPERATOR_NAMESPACE, "-o", "wide"]);
        throw new Error(`${String(error)}\n${pods.stdout}${operatorLogTails(cluster)}`);
      });
    await eventually("a controller pod of the release to hold the Lease", 120_000, async () => {
      const holder = await leaseHolder(kubectl, layout.lease);
      const pods = await operatorPodNames(kubectl, layout.candidates);
      return holder && pods.some((name) => holder.startsWith(`${name}_`)) ? holder : undefined;
    });
    progress(`Deployments ${layout.deployments.join(", ")} Available; a replica holds Lease ${layout.lease}`);

    await applyExampleNamespace(kubectl, aps.url);
    progress("ProviderInstance aps and its Capabilities are Ready");
    return {
      cluster,
      kubectl,
      aps,
      model,
      modelKey,
      databaseUrl: prepared.url,
      runtimeUrls: prepared.runtimeUrls,
      pool: prepared.pool,
      gatewayUrl: gatewayProxy.url,
      gatewayProxy,
      databaseForwarder,
      valuesPath,
      helm,
      uninstall,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * What the files after a release's uninstall need: crds/ (CRDs, admission policies, persona roles:
 * kept by the uninstall, with helm still the manager of their fields, hence --force-conflicts) and the
 * components' ClusterRoles (crds/) and bindings (deploy/), removed with the release.
 */
export async function restoreApiAfterRelease(kubectl: Kubectl): Promise<void> {
  // The admission policies are made anew, not applied over: their matchConditions and variables are
  // lists keyed by name, so an apply keeps the entries another version's release left (the upgrade
  // test's rollback), and the controller, seeing policies other than the chart's, dispatches nothing.
  const policies = join(REPO_ROOT, "crds", "admission-policies.yaml");
  await kubectl.ok("admin", ["delete", "-f", policies, "--ignore-not-found", "--wait"]);
  await kubectl.ok("admin", ["apply", "--server-side", "--force-conflicts", "-f", join(REPO_ROOT, "crds")]);
  await installApi(kubectl);
}

/** The holder of Lease gatehouse-controller (`<POD_NAME>_<random>`), if any. */
export async function leaseHolder(kubectl: Kubectl, lease = LEADER_LEASE): Promise<string | undefined> {
  const got = await kubectl.run("admin", [
    "get",
    "lease",
    lease,
    "-n",
    OPERATOR_NAMESPACE,
    "-o",
    "jsonpath={.spec.holderIdentity}",
  ]);
  return got.code === 0 && got.stdout ? got.stdout : undefined;
}

/** Names of the release's controller pods (the Lease candidates) that are not being deleted. */
export async function operatorPodNames(
  kubectl: Kubectl,
  selector = OPERATOR_POD_SELECTOR,
): Promise<string[]> {
  const pods = await kubectl.json<{
    items: Array<{ metadata: { name: string; deletionTimestamp?: string } }>;
  }>("admin", ["get", "pods", "-n", OPERATOR_NAMESPACE, "-l", selector]);
  return pods.items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
}

/**
 * What the local node logged for container `container` of each pod of `pods` (names in the operator's
 * namespace), by pod directory.
 */
/** The migrate Job's pods (names) and their `migrate` containers' logs, joined. */
export async function migrateJobLogs(
  kubectl: Pick<Kubectl, "json">,
  cluster: ClusterInfo,
): Promise<{ pods: string[]; text: string }> {
  const list = await kubectl.json<{ items: Array<{ metadata: { name: string } }> }>("admin", [
    "get",
    "pods",
    "-n",
    OPERATOR_NAMESPACE,
    "-l",
    `job-name=${MIGRATE_JOB}`,
  ]);
  const pods = list.items.map((p) => p.metadata.name);
  return { pods, text: Object.values(podLogs(cluster, pods, "migrate")).join("") };
}

export function podLogs(
  cluster: ClusterInfo,
  pods: readonly string[],
  container: string,
): Record<string, string> {
  const podsDir = join(cluster.runDir, "pods");
  const logs: Record<string, string> = {};
  const wanted = (dir: string) => pods.some((pod) => dir.startsWith(`${OPERATOR_NAMESPACE}_${pod}`));
  for (const dir of readdirSync(podsDir).filter(wanted)) {
    try {
      logs[dir] = readFileSync(join(podsDir, dir, "logs", `${container}.log`), "utf8");
    } catch {}
  }
  return logs;
}

/** The last lines the local node logged for each release pod's container (for failure messages). */
function operatorLogTails(cluster: ClusterInfo): string {
  const podsDir = join(cluster.runDir, "pods");
  const components = [
    ["gateway", GATEWAY_DEPLOYMENT],
    ["controller", CONTROLLER_DEPLOYMENT],
    // An older chart's one Deployment (SINGLE_OPERATOR_LAYOUT).
    ["operator", `${RELEASE}-operator`],
  ] as const;
  const dirs = readdirSync(podsDir).flatMap((d) =>
    components
      .filter(([, deployment]) => d.startsWith(`${OPERATOR_NAMESPACE}_${deployment}-`))
      .map(([container]) => [d, container] as const),
  );
  return dirs
    .map(([d, container]) => {
      let text = "";
      try {
        text = readFileSync(join(podsDir, d, "logs", `${container}.log`), "utf8");
      } catch {}
      return `\n--- ${d}:\n${text.slice(-3000)}`;
    })
    .join("");
}
