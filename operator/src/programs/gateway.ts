/**
 * The gateway program (`main.ts gateway`, Deployment gatehouse-gateway; DESIGN §3): what agent pods
 * reach — the agent routes, the model proxy and the invoke path through Core — and the JWKS providers
 * verify grants with. Stateless and without a Lease: every replica serves. It creates Approvals but
 * writes no status, runs no reconciler, creates no pod and takes no audit checkpoint; its database login
 * may only INSERT and SELECT the audit chain, and append only the kinds of the invoke path
 * (`GATEWAY_AUDIT_KINDS`; DESIGN §6, §7).
 */
import { endpointFor } from "../config.ts";
import { tokenReviewer } from "../gateway/authenticate.ts";
import { personAccess } from "../gateway/person-access.ts";
import { buildGateway } from "../gateway/server.ts";
import { closeWithin } from "../gateway/shutdown.ts";
import { combinedJwks, readGrantPublicKeys } from "../kube/grant-public-keys.ts";
import { secretModelKeys } from "../kube/model-keys.ts";
import { sessionRecords } from "../store/session-records.ts";
import { startComponent } from "./common.ts";

/**
 * How long the gateway lets requests in flight at SIGTERM finish: well inside a pod's default 30 s
 * grace period.
 */
const GATEWAY_DRAIN_MS = 10_000;

/** Runs the gateway until SIGTERM/SIGINT. */
export async function runGateway(): Promise<void> {
  let listening = false;
  const started = await startComponent("gateway", {
    // No Lease: it never leads (gatehouse_leader 0, /readyz "leader": false).
    isLeader: () => false,
    checks: [{ name: "gateway", ready: () => listening }],
    checkpoints: false,
  });
  const { config, clients, caches, store, core, log, metrics, grantKeys } = started;
  await started.syncCaches();
  // Providers verify by kid: the JWKS serves the controller's published public keys beside ours.
  const published = await readGrantPublicKeys({
    core: clients.core,
    namespace: config.operatorNamespace,
    resyncMs: config.grants.keysResyncSeconds * 1000,
    log: log.child({ component: "grant-public-keys" }),
  });
  started.onShutdown("grantPublicKeys", () => published.stop());
  const gateway = buildGateway({
    caches,
    core,
    transcripts: store.transcripts,
    review: tokenReviewer(clients),
    people: personAccess(clients.config),
    jwks: combinedJwks(grantKeys.jwks, published.keys),
    log,
    ceilings: config.sessionCeilings,
    records: sessionRecords(store.transcripts),
    model: {
      endpointFor: (endpointRef) => endpointFor(config, endpointRef),
      keys: secretModelKeys(clients.core, config.operatorNamespace),
      metrics: metrics.modelProxyMetrics,
    },
  });
  started.onShutdown("gateway", async () => {
    const { cut, requests } = await closeWithin(gateway, GATEWAY_DRAIN_MS);
    if (cut > 0) log.warn({ connections: cut, requests }, "cut connections still open after the drain");
  });
  await gateway.listen({ host: config.gatewayHost, port: config.gatewayPort });
  listening = true;
  log.info({ databaseLogin: store.login }, "caches synced; the gateway serves");
}
