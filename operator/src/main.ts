/**
 * The operator process: configuration, logger, Kubernetes clients and caches, the Postgres store,
 * Core, the four controllers, the gateway and the health server — wired here and nowhere else.
 * The gateway and the caches run on every replica; the controllers only on the replica holding the
 * Lease `gatehouse-operator` (DESIGN §3), and the process exits when it loses the Lease.
 * Exit codes: 0 after SIGTERM/SIGINT or `--help` (which prints the variables), 1 on losing the Lease or a
 * fatal error, 2 on a bad configuration. `main.ts migrate` runs the migrate program instead
 * (`cli/migrate-command.ts`: the image's entrypoint is this file, so the chart's migrate Job passes
 * `args: [migrate]`).
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { pino } from "pino";
import { GRANT_KEYS_SECRETS } from "./api/well-known.ts";
import { ConfigError, configFromEnvironment, endpointFor, type OperatorConfig, USAGE } from "./config.ts";
import { startControllers } from "./controllers/manager.ts";
import { defaultCoreConfig } from "./core/invoke.ts";
import type { CoreDeps } from "./core/ports.ts";
import { tokenReviewer } from "./gateway/authenticate.ts";
import { grantSigner } from "./gateway/grant-signer.ts";
import { buildHealthServer } from "./gateway/health.ts";
import { personAccess } from "./gateway/person-access.ts";
import { fetchManifest, httpProviderClient } from "./gateway/provider-client.ts";
import { buildGateway } from "./gateway/server.ts";
import { closeWithin } from "./gateway/shutdown.ts";
import { startAdmissionGuard } from "./kube/admission-guard.ts";
import { kubeApprovalPort } from "./kube/approvals.ts";
import { makeCaches, startCaches, stopCaches } from "./kube/caches.ts";
import { cacheCatalog } from "./kube/catalog.ts";
import { configMapCheckpoints } from "./kube/checkpoint-configmap.ts";
import { loadKubeConfig, makeClients } from "./kube/client.ts";
import { failpointTrigger } from "./kube/failpoints.ts";
import { startGrantKeyRing } from "./kube/grant-keys.ts";
import { secretIdentityResolver } from "./kube/identities.ts";
import { LeaderElector } from "./kube/leader-election.ts";
import { createMetrics } from "./kube/metrics.ts";
import { secretModelKeys } from "./kube/model-keys.ts";
import { providerEndpoints } from "./kube/provider-endpoints.ts";
import { secretWitnessSigner } from "./kube/witness-key.ts";
import { sessionRecords } from "./store/session-records.ts";
import { openStore } from "./store/store.ts";

/**
 * How long the gateway lets requests in flight at SIGTERM finish: well inside a pod's default 30 s
 * grace period, leaving time for the controllers to stop and the Lease to be released.
 */
const GATEWAY_DRAIN_MS = 10_000;

/** The Lease the replicas elect their leader on. */
const LEADER_LEASE = "gatehouse-operator";

if (process.argv[2] === "migrate") {
  const { runMigrate } = await import("./cli/migrate-command.ts");
  process.exit(
    await runMigrate(process.argv.slice(3), process.env, {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    }),
  );
}
if (process.argv.slice(2).includes("--help")) {
  process.stdout.write(USAGE);
  process.exit(0);
}
let config: OperatorConfig;
try {
  config = configFromEnvironment(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
const log = pino({ level: config.logLevel, base: { component: "gatehouse-operator" } });
const metrics = createMetrics();

/** This replica's leader-election identity; also in its User-Agent, so the audit log names it. */
const identity = `${config.leaderElection.identityPrefix}_${randomBytes(4).toString("hex")}`;
const clients = makeClients(
  loadKubeConfig(
    config.kubeconfig,
    config.kubeContext,
    `gatehouse-operator/v1alpha1 (${identity})`,
    config.mountRoot,
  ),
);
const caches = makeCaches(clients, log, (path, reason) => metrics.informerRestarted(path, reason));
metrics.trackPendingApprovals(
  () => caches.approvals.list().filter((a) => (a.status?.phase ?? "Pending") === "Pending").length,
);
let synced = false;
let listening = false;
let stopping = false;
let elector: LeaderElector | undefined;
const health = buildHealthServer({
  registry: metrics.registry,
  checks: [
    { name: "caches", ready: () => synced },
    { name: "gateway", ready: () => listening },
  ],
  isLeader: () => elector?.isLeader ?? !config.leaderElection.enabled,
});
await health.listen({ host: config.healthHost, port: config.healthPort });
const store = await openStore({
  url: config.databaseUrl,
  logger: log,
  checkpointIntervalMs: config.auditCheckpoints.intervalMs,
  // Every replica checkpoints into Postgres; only the Lease holder writes the ConfigMap, so a standby
  // writes nothing to the API server.
  checkpointPublisher: configMapCheckpoints(clients.core, {
    namespace: config.leaderElection.namespace,
    // Read only when publishing: the Lease holder's.
    signer: secretWitnessSigner({
      core: clients.core,
      namespace: config.leaderElection.namespace,
      log: log.child({ component: "audit-witness-key" }),
    }),
    isLeader: () => elector?.isLeader ?? !config.leaderElection.enabled,
    metrics: metrics.witnessMetrics,
    log: log.child({ component: "audit-checkpoints" }),
  }),
}).catch((error: unknown) => {
  // A refused login or a schema behind is a deployment mistake: one line naming the fix, no stack.
  log.fatal(
    { kind: (error as { kind?: string }).kind },
    error instanceof Error ? error.message : String(error),
  );
  process.exit(1);
});
const now = () => new Date();
// Grant signing keys shared by every replica through Secret gatehouse-grant-keys (DESIGN §5).
const grantKeys = await startGrantKeyRing({
  core: clients.core,
  namespace: config.leaderElection.namespace,
  secretName: GRANT_KEYS_SECRETS.controller,
  timings: {
    rotationMs: config.grants.keyRotationSeconds * 1000,
    activationMs: config.grants.keyActivationSeconds * 1000,
    // A superseded key outlives the longest grant it signed, plus two re-reads and a minute of clock skew.
    retainMs: (60 + 2 * config.grants.keysResyncSeconds + 60) * 1000,
  },
  resyncMs: config.grants.keysResyncSeconds * 1000,
  log: log.child({ component: "grant-keys" }),
});
const grants = grantSigner({ signingKey: grantKeys.signingKey, ttlSeconds: config.grants.ttlSeconds });

const core: CoreDeps = {
  clock: { nowMicros: () => Date.now() * 1000 },
  timer: { sleep: async (ms) => void (await sleep(ms)) },
  catalog: cacheCatalog(caches),
  identities: secretIdentityResolver(clients),
  approvals: kubeApprovalPort(clients, caches),
  executions: store.executions,
  budget: store.budget,
  providers: httpProviderClient(providerEndpoints(caches), grants),
  audit: store.audit,
  logger: log.child({ component: "core" }),
  config: { ...defaultCoreConfig, ...config.execution },
  metrics: metrics.coreMetrics,
  ...(config.failpoints.length > 0 ? { failpoint: failpointTrigger(config.failpoints, log) } : {}),
};

await startCaches(caches);
synced = true;
const admission = await startAdmissionGuard(clients, log.child({ component: "admission-guard" }));
metrics.trackDecisionRules(admission.enforced);
log.info({ databaseLogin: store.login }, "caches synced; starting the gateway");
const records = sessionRecords(store.transcripts);
const gateway = buildGateway({
  caches,
  core,
  transcripts: store.transcripts,
  review: tokenReviewer(clients),
  people: personAccess(clients.config),
  jwks: grantKeys.jwks,
  log,
  ceilings: config.sessionCeilings,
  records,
  model: {
    endpointFor: (endpointRef) => endpointFor(config, endpointRef),
    keys: secretModelKeys(clients.core, config.operatorNamespace),
    metrics: metrics.modelProxyMetrics,
  },
});
await gateway.listen({ host: config.gatewayHost, port: config.gatewayPort });
listening = true;

let controllers: { stop(): Promise<void> } | undefined;
const startLeading = () => {
  metrics.setLeader(true);
  controllers = startControllers({
    clients,
    caches,
    core,
    transcripts: store.transcripts,
    records,
    config,
    log,
    metrics,
    now,
    fetchManifest,
    decisionRules: admission.checkedSince,
  });
};
elector = config.leaderElection.enabled
  ? new LeaderElector({
      api: clients.config.makeApiClient(CoordinationV1Api),
      namespace: config.leaderElection.namespace,
      name: LEADER_LEASE,
      identity,
      log: log.child({ component: "leader-election" }),
    })
  : undefined;
if (elector) {
  void elector.run(startLeading, () => {
    metrics.setLeader(false);
    if (stopping) return;
    // Another replica may already reconcile: stop at once rather than race it (client-go's OnStoppedLeading).
    log.error("lost the leader lease; exiting");
    process.exit(1);
  });
} else {
  startLeading();
}

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "shutting down");
  // Each step's time is logged, so a shutdown that outlasts the pod's grace period says what held it.
  const steps: Record<string, number> = {};
  const step = async (name: string, run: () => unknown) => {
    const started = performance.now();
    await run();
    steps[name] = Math.round(performance.now() - started);
  };
  await step("gateway", async () => {
    const { cut, requests } = await closeWithin(gateway, GATEWAY_DRAIN_MS);
    if (cut > 0) log.warn({ connections: cut, requests }, "cut connections still open after the drain");
  });
  grantKeys.stop();
  admission.stop();
  await step("controllers", () => controllers?.stop());
  await step("leaderElection", () => elector?.stop());
  await step("caches", () => stopCaches(caches));
  await step("store", () => store.stop());
  await step("health", () => closeWithin(health, 1_000));
  log.info({ stepsMs: steps }, "shut down");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
