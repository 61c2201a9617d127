/**
 * The controller program (`main.ts controller`, Deployment gatehouse-controller; DESIGN §3): the four
 * reconcilers, approved dispatch, execution recovery and the audit witness, on the replica holding
 * Lease gatehouse-controller; the others keep warm caches and checkpoint into Postgres. Nothing agent
 * pods can reach listens here but the health server. It alone holds the witness's signing key and may
 * write the checkpoint ConfigMap; the process exits when it loses the Lease.
 */
import { CoordinationV1Api } from "@kubernetes/client-node";
import { LEADER_LEASE } from "../api/rbac.ts";
import { GRANT_KEYS_SECRETS } from "../api/well-known.ts";
import { controllerSettings, type RunningControllers, startControllers } from "../controllers/manager.ts";
import { podForController } from "../controllers/pod-cache.ts";
import { sessionForController } from "../controllers/session-cache.ts";
import { startAdmissionGuard } from "../kube/admission/guard.ts";
import { makeAgentPolicyCache } from "../kube/runtime/caches.ts";
import { LeaderElector } from "../kube/runtime/leader-election.ts";
import { configMapCheckpoints } from "../kube/witness/configmap.ts";
import { secretWitnessSigner } from "../kube/witness/key.ts";
import { timedFunction } from "../observability/port-timing.ts";
import { fetchManifest } from "../providers/client.ts";
import { ensureEmptySecret } from "../providers/grant-keys.ts";
import { publishGrantPublicKeys } from "../providers/grant-public-keys.ts";
import { listenSessionNotices } from "../store/session-notices.ts";
import { sessionRecords } from "../store/session-records.ts";
import { startComponent } from "./common.ts";

/** Runs the controller until SIGTERM/SIGINT, or exits 1 on losing the Lease. */
export async function runController(): Promise<void> {
  let elector: LeaderElector | undefined;
  let leaderElection = true;
  const isLeader = () => elector?.isLeader ?? !leaderElection;
  const started = await startComponent("controller", {
    isLeader,
    checks: [],
    // Of a pod, only what the reconcilers and approved dispatch read: most of a pod is its containers.
    podTransform: podForController,
    // Of a session, not the conversation's text, which only the gateway hands the agent.
    sessionTransform: sessionForController,
    checkpoints: {
      // Every replica checkpoints into Postgres; only the Lease holder reads the witness key and writes
      // the ConfigMap, so a standby writes nothing to the API server.
      publisher: ({ config, clients, metrics, log }) =>
        configMapCheckpoints(clients.core, {
          namespace: config.leaderElection.namespace,
          signer: secretWitnessSigner({
            core: clients.core,
            namespace: config.leaderElection.namespace,
            log: log.child({ component: "audit-witness-key" }),
          }),
          isLeader,
          metrics: metrics.witnessMetrics,
          log: log.child({ component: "audit-checkpoints" }),
        }),
    },
  });
  const { config, clients, caches, store, core, log, metrics, grantKeys } = started;
  leaderElection = config.leaderElection.enabled;
  const settings = controllerSettings(config);
  // The gateway serves these in its JWKS, so providers verify approved dispatch's grants by kid. A write
  // only when the ring changed: a standby writes nothing.
  const publisher = await publishGrantPublicKeys({
    core: clients.core,
    namespace: config.operatorNamespace,
    ring: grantKeys,
    log: log.child({ component: "grant-public-keys" }),
    intervalMs: config.grants.keysResyncSeconds * 1000,
  });
  started.onShutdown("grantPublicKeys", () => publisher.stop());
  // The controller's own cache (the gateway writes no NetworkPolicy): warm on every replica, like the others.
  const agentPolicies = makeAgentPolicyCache(clients, log, (path, reason) =>
    metrics.informerRestarted(path, reason),
  );
  started.onShutdown("agentPolicies", () => agentPolicies.stop());
  await Promise.all([agentPolicies.start(), started.syncCaches()]);
  const admission = await startAdmissionGuard(clients, log.child({ component: "admission-guard" }), {
    gatewayUsername: config.gatewayUsername,
  });
  started.onShutdown("admission", () => admission.stop());
  metrics.trackDecisionRules(admission.enforced);
  log.info({ databaseLogin: store.login }, "caches synced; electing the leader");

  let controllers: RunningControllers | undefined;
  started.onShutdown("controllers", () => controllers?.stop());
  // The gateway may not create Secrets (providers/grant-keys.ts): its ring's Secret is created empty here, and
  // again should someone delete it; by the Lease holder only, so a standby writes nothing.
  const gatewayKeysSecret = () =>
    ensureEmptySecret(clients.core, config.operatorNamespace, GRANT_KEYS_SECRETS.gateway).then(
      (created) => {
        if (!created) return;
        log.info(
          `created Secret ${config.operatorNamespace}/${GRANT_KEYS_SECRETS.gateway} empty for the gateway's grant keys`,
        );
      },
      (error: unknown) =>
        log.error({ err: error }, "creating the gateway's grant-key Secret failed; retrying"),
    );
  const startLeading = async () => {
    metrics.setLeader(true);
    void gatewayKeysSecret();
    const gatewayKeysTimer = setInterval(gatewayKeysSecret, config.grants.keysResyncSeconds * 1000);
    gatewayKeysTimer.unref();
    started.onShutdown("gatewayKeysSecret", () => clearInterval(gatewayKeysTimer));
    // Listening before the controllers start: each session's first pass reads its transcript after
    // any append it could miss was already noticed.
    const notices = await listenSessionNotices({
      url: config.databaseUrl,
      pool: store.pool,
      log: log.child({ component: "session-notices" }),
      handlers: {
        onNotice: (uid) => controllers?.notices.onNotice(uid),
        onMissed: () => controllers?.notices.onMissed(),
      },
    });
    started.onShutdown("sessionNotices", () => notices.stop());
    metrics.trackTranscriptNotices(notices.live);
    controllers = startControllers({
      clients,
      caches,
      agentPolicies,
      core,
      transcripts: store.transcripts,
      records: sessionRecords(store.transcripts),
      settings,
      log,
      metrics,
      now: () => new Date(),
      fetchManifest,
      // Timed like a port: the approval path's wait for a fresh admission check.
      decisionRules: timedFunction(admission.checkedSince, "admission", "checkedSince", metrics.portCalled),
      notices,
    });
  };
  if (!config.leaderElection.enabled) {
    await startLeading();
    return;
  }
  elector = new LeaderElector({
    api: clients.config.makeApiClient(CoordinationV1Api),
    namespace: config.leaderElection.namespace,
    name: LEADER_LEASE,
    identity: started.identity,
    log: log.child({ component: "leader-election" }),
  });
  const lease = elector;
  started.onShutdown("leaderElection", () => lease.stop());
  void lease.run(startLeading, () => {
    metrics.setLeader(false);
    if (started.stopping()) return;
    // Another replica may already reconcile: stop at once rather than race it (client-go's OnStoppedLeading).
    log.error("lost the leader lease; exiting");
    process.exit(1);
  });
}
