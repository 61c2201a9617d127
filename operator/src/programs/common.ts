/**
 * What both long-running programs start the same way (DESIGN §3): configuration, logger, metrics,
 * Kubernetes clients and informer caches, the health server (ready once the caches synced and while
 * the database answers), the Postgres store as the component's own runtime login, the component's grant key ring and the Core ports. Each program adds its own parts
 * (the gateway its HTTP server, the controller its Lease, witness and reconcilers) and its shutdown
 * steps, run in order on SIGTERM/SIGINT.
 * Exit codes: 2 on a bad configuration, 1 on a store that refuses to open (a deployment mistake, logged
 * as one line naming the fix).
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { pino } from "pino";
import { ApprovalPhase } from "../api/status/approval.ts";
import { type Component, GRANT_KEYS_SECRETS } from "../api/well-known.ts";
import { ConfigError, configFromEnvironment, type OperatorConfig } from "../config.ts";
import { defaultCoreConfig } from "../core/invoke.ts";
import type { CoreDeps } from "../core/ports.ts";
import { failpointTrigger } from "../failpoints.ts";
import { closeWithin } from "../http/shutdown.ts";
import { kubeApprovalPort } from "../kube/approvals.ts";
import { approvalsInPhase, GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import { cacheCatalog } from "../kube/catalog.ts";
import { publishedIdentityResolver, secretIdentityResolver } from "../kube/identities.ts";
import {
  type Caches,
  makeCaches,
  type PodTransform,
  type SessionTransform,
  startCaches,
  stopCaches,
} from "../kube/runtime/caches.ts";
import { type KubeClients, loadKubeConfig, makeClients } from "../kube/runtime/client.ts";
import { buildHealthServer } from "../observability/health.ts";
import { trackArrayBuffers } from "../observability/memory-metrics.ts";
import { createMetrics, type OperatorMetrics } from "../observability/metrics.ts";
import { timedPort } from "../observability/port-timing.ts";
import { httpProviderClient } from "../providers/client.ts";
import { providerEndpoints } from "../providers/endpoints.ts";
import { type GrantKeyRing, startGrantKeyRing } from "../providers/grant-keys.ts";
import { grantSigner } from "../providers/grant-signer.ts";
import type { CheckpointPublisher } from "../store/audit/checkpoint-publisher.ts";
import { openStore, type Store } from "../store/store.ts";

/** What a program tells {@link startComponent} about itself. */
export interface ComponentOptions {
  /** Whether this replica holds the component's Lease (always true for one without a Lease). */
  isLeader: () => boolean;
  /** Readiness checks beyond the caches' sync. */
  checks: { name: string; ready: () => boolean }[];
  /**
   * Audit checkpoints into Postgres and, when given, published outside it (the controller's witness);
   * `false` takes none (the gateway's role may not write them).
   */
  checkpoints: false | { publisher: (deps: PublisherDeps) => CheckpointPublisher };
  /** What this program alone requires of the configuration: throws a ConfigError naming the variable. */
  requireConfig?: (config: OperatorConfig) => void;
  /** What it caches of each pod (default: the whole pod but managedFields; kube/runtime/caches.ts). */
  podTransform?: PodTransform;
  /** What it caches of each AgentSession (default: the whole object but managedFields). */
  sessionTransform?: SessionTransform;
  /** Its Postgres pool's size, from the configuration (default openStore's 10). */
  databasePoolSize?: (config: OperatorConfig) => number;
}

/** What a checkpoint publisher is built from. */
export interface PublisherDeps {
  config: OperatorConfig;
  clients: KubeClients;
  metrics: OperatorMetrics;
  log: Logger;
}

/** A started component: the parts both programs share. */
export interface StartedComponent {
  component: Component;
  config: OperatorConfig;
  log: Logger;
  metrics: OperatorMetrics;
  /** This replica's identity: its leader-election holder name, also in its User-Agent. */
  identity: string;
  clients: KubeClients;
  caches: Caches;
  store: Store;
  grantKeys: GrantKeyRing;
  core: CoreDeps;
  /** Starts the caches and marks the replica's caches synced. */
  syncCaches(): Promise<void>;
  /**
   * Adds a shutdown step, run after the steps added before it; the time each takes is logged, so a
   * shutdown that outlasts the pod's grace period says what held it.
   */
  onShutdown(name: string, step: () => unknown): void;
  /** Runs the shutdown steps, then the common ones (grant keys, caches, store, health), and exits 0. */
  shutdown(signal: string): Promise<void>;
  /** True once shutdown has begun. */
  stopping(): boolean;
}

/** The configuration, or exit 2 with one line per bad variable. */
function configOrExit(requireConfig: ComponentOptions["requireConfig"]): OperatorConfig {
  try {
    const config = configFromEnvironment(process.env);
    requireConfig?.(config);
    return config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

/** Starts what `component` shares with the other program; see the file comment. */
export async function startComponent(
  component: Component,
  options: ComponentOptions,
): Promise<StartedComponent> {
  const config = configOrExit(options.requireConfig);
  // `program`, not `component`: the parts log as child loggers with their own `component`.
  const log = pino({ level: config.logLevel, base: { program: `gatehouse-${component}` } });
  const metrics = createMetrics();
  trackArrayBuffers(metrics.registry);
  const identity = `${config.leaderElection.identityPrefix}_${randomBytes(4).toString("hex")}`;
  const clients = makeClients(
    loadKubeConfig(
      config.kubeconfig,
      config.kubeContext,
      `gatehouse-${component}/v1alpha1 (${identity})`,
      config.mountRoot,
    ),
  );
  const caches = makeCaches(
    clients,
    log,
    config.watchNamespaces,
    GATEHOUSE_INDEXERS,
    (path, reason) => metrics.informerRestarted(path, reason),
    options.podTransform,
    options.sessionTransform,
  );
  metrics.trackPendingApprovals(() => approvalsInPhase(caches, ApprovalPhase.Pending));
  let synced = false;
  // Until the store is open the database has not answered; then its own probe says (store/readiness.ts).
  let databaseAnswers = () => false;
  const health = buildHealthServer({
    registry: metrics.registry,
    checks: [
      { name: "caches", ready: () => synced },
      { name: "database", ready: () => databaseAnswers() },
      ...options.checks,
    ],
    isLeader: options.isLeader,
  });
  await health.listen({ host: config.healthHost, port: config.healthPort });

  const store = await openStore({
    url: config.databaseUrl,
    logger: log,
    component,
    ...(options.databasePoolSize ? { poolMax: options.databasePoolSize(config) } : {}),
    checkpoints:
      options.checkpoints === false
        ? false
        : {
            intervalMs: config.auditCheckpoints.intervalMs,
            publisher: options.checkpoints.publisher({ config, clients, metrics, log }),
          },
  }).catch((error: unknown) => {
    // A refused login or a schema behind is a deployment mistake: one line naming the fix, no stack.
    log.fatal(
      { kind: (error as { kind?: string }).kind },
      error instanceof Error ? error.message : String(error),
    );
    process.exit(1);
  });
  databaseAnswers = () => store.available();
  metrics.trackDatabase(databaseAnswers);

  // Each component signs with keys of its own (DESIGN §5); providers tell them apart by kid.
  const grantKeys = await startGrantKeyRing({
    core: clients.core,
    namespace: config.operatorNamespace,
    secretName: GRANT_KEYS_SECRETS[component],
    timings: {
      rotationMs: config.grants.keyRotationSeconds * 1000,
      activationMs: config.grants.keyActivationSeconds * 1000,
      // A superseded key outlives the longest grant it signed, plus two re-reads and a minute of clock skew.
      retainMs: (60 + 2 * config.grants.keysResyncSeconds + 60) * 1000,
    },
    resyncMs: config.grants.keysResyncSeconds * 1000,
    // The gateway may not create Secrets: the controller creates its Secret empty (programs/controller.ts).
    mayCreate: component === "controller",
    log: log.child({ component: "grant-keys" }),
  });
  const grants = grantSigner({ signingKey: grantKeys.signingKey, ttlSeconds: config.grants.ttlSeconds });

  // Every port call is timed (gatehouse_port_call_duration_seconds): the invoke path's stages.
  const timed = <T extends object>(port: T, name: string): T => timedPort(port, name, metrics.portCalled);
  const core: CoreDeps = {
    clock: { nowMicros: () => Date.now() * 1000 },
    timer: { sleep: async (ms) => void (await sleep(ms)) },
    catalog: timed(cacheCatalog(caches), "catalog"),
    // Only the controller reads identity-binding Secrets; the gateway reads what it publishes.
    identities: timed(
      component === "controller"
        ? secretIdentityResolver(clients)
        : publishedIdentityResolver(clients.core, config.operatorNamespace),
      "identities",
    ),
    approvals: timed(kubeApprovalPort(clients, caches), "approvals"),
    executions: timed(store.executions, "executions"),
    budget: timed(store.budget, "budget"),
    providers: timed(httpProviderClient(providerEndpoints(caches), grants), "providers"),
    audit: timed(store.audit, "audit"),
    logger: log.child({ component: "core" }),
    config: { ...defaultCoreConfig, ...config.execution },
    metrics: metrics.coreMetrics,
    ...(config.failpoints.size > 0 ? { failpoint: failpointTrigger(config.failpoints, log) } : {}),
  };

  const steps: { name: string; run: () => unknown }[] = [];
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    const took: Record<string, number> = {};
    const common = [
      { name: "grantKeys", run: () => grantKeys.stop() },
      { name: "caches", run: () => stopCaches(caches) },
      { name: "store", run: () => store.stop() },
      { name: "health", run: () => closeWithin(health, 1_000) },
    ];
    for (const step of [...steps, ...common]) {
      const started = performance.now();
      await step.run();
      took[step.name] = Math.round(performance.now() - started);
    }
    log.info({ stepsMs: took }, "shut down");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  return {
    component,
    config,
    log,
    metrics,
    identity,
    clients,
    caches,
    store,
    grantKeys,
    core,
    syncCaches: async () => {
      await startCaches(caches);
      synced = true;
    },
    onShutdown: (name, run) => void steps.push({ name, run }),
    shutdown,
    stopping: () => stopping,
  };
}
