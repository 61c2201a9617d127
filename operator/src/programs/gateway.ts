/**
 * The gateway program (`main.ts gateway`, Deployment gatehouse-gateway; DESIGN §3): what agent pods
 * reach — the agent routes, the model proxy and the invoke path through Core — and the JWKS providers
 * verify grants with. Stateless and without a Lease: every replica serves. It creates Approvals but
 * writes no status, runs no reconciler, creates no pod and takes no audit checkpoint; its database login
 * may only INSERT and SELECT the audit chain, and append only the kinds of the invoke path
 * (`GATEWAY_AUDIT_KINDS`; DESIGN §6, §7). Its second listener serves people the transcripts API
 * through the API server's aggregation layer (gateway/transcripts-api.ts).
 */
import { readFile } from "node:fs/promises";
import { ConfigError, type OperatorConfig, settingsOf } from "../config.ts";
import { tokenReviewer } from "../gateway/authenticate.ts";
import { EXTENSION_AUTHENTICATION_CONFIGMAP, requestHeaderConfigOf } from "../gateway/front-proxy.ts";
import { podForGateway } from "../gateway/pod-cache.ts";
import { buildGateway, GATEWAY_SETTINGS } from "../gateway/server.ts";
import { sessionForGateway } from "../gateway/session-cache.ts";
import { buildTranscriptsApi, type TranscriptsApiTls } from "../gateway/transcripts-api.ts";
import { closeWithin } from "../http/shutdown.ts";
import { subjectAccessReviewer } from "../kube/access-review.ts";
import { secretModelKeys } from "../kube/model-keys.ts";
import type { KubeClients } from "../kube/runtime/client.ts";
import { timedFunction, timedPort } from "../observability/port-timing.ts";
import { combinedJwks, readGrantPublicKeys } from "../providers/grant-public-keys.ts";
import { sessionRecords } from "../store/session-records.ts";
import { startComponent } from "./common.ts";

/**
 * How long the gateway lets requests in flight at SIGTERM finish: well inside a pod's default 30 s
 * grace period.
 */
const GATEWAY_DRAIN_MS = 10_000;
/** How often the transcripts API re-reads its certificate files and the front proxy's settings. */
const TRANSCRIPTS_TLS_RESYNC_MS = 60_000;

function requireTranscriptsTls(config: OperatorConfig): void {
  if (!config.transcriptsApi.certFile || !config.transcriptsApi.keyFile) {
    throw new ConfigError(
      "TRANSCRIPTS_API_TLS_CERT_FILE and TRANSCRIPTS_API_TLS_KEY_FILE: the gateway serves the transcripts API over TLS only; set both to the PEM files of its serving certificate (the chart mounts them from Secret <release>-transcripts-api-tls)",
    );
  }
}

/** The serving certificate from its files and the front proxy's settings from the API server. */
async function transcriptsTls(config: OperatorConfig, clients: KubeClients): Promise<TranscriptsApiTls> {
  const { certFile = "", keyFile = "" } = config.transcriptsApi;
  // Under the test cluster's local node, mounted files live below its root (LOCAL_NODE_ROOT).
  const mounted = (path: string) => `${config.mountRoot ?? ""}${path}`;
  const [cert, key, authentication] = await Promise.all([
    readFile(mounted(certFile), "utf8"),
    readFile(mounted(keyFile), "utf8"),
    clients.core.readNamespacedConfigMap(EXTENSION_AUTHENTICATION_CONFIGMAP),
  ]);
  return { cert, key, requestHeader: requestHeaderConfigOf(authentication.data) };
}

/** Runs the gateway until SIGTERM/SIGINT. */
export async function runGateway(): Promise<void> {
  let listening = false;
  const started = await startComponent("gateway", {
    // No Lease: it never leads (gatehouse_leader 0, /readyz "leader": false).
    isLeader: () => false,
    checks: [{ name: "gateway", ready: () => listening }],
    checkpoints: false,
    requireConfig: requireTranscriptsTls,
    // Of a pod, only what token binding and Sidecar addresses read: most of a pod is its containers.
    podTransform: podForGateway,
    // Of a session, not its conditions, which only the controller reads.
    sessionTransform: sessionForGateway,
    databasePoolSize: (config) => config.gatewayPostgresPoolSize,
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
    // Timed as Core's ports are: the invoke route's transcript appends and its (cached) TokenReview.
    transcripts: timedPort(store.transcripts, "transcripts", metrics.portCalled),
    review: timedFunction(tokenReviewer(clients), "tokenreview", "review", metrics.portCalled),
    jwks: combinedJwks(grantKeys.jwks, published.keys),
    log,
    records: sessionRecords(store.transcripts),
    model: {
      keys: secretModelKeys(clients.core, config.operatorNamespace),
      metrics: metrics.modelProxyMetrics,
    },
    settings: settingsOf(config, GATEWAY_SETTINGS),
  });
  started.onShutdown("gateway", async () => {
    const { cut, requests } = await closeWithin(gateway, GATEWAY_DRAIN_MS);
    if (cut > 0) log.warn({ connections: cut, requests }, "cut connections still open after the drain");
  });
  let tls = await transcriptsTls(config, clients);
  const transcriptsApi = buildTranscriptsApi(tls, {
    caches,
    transcripts: store.transcripts,
    authorize: subjectAccessReviewer(clients),
    log,
  });
  const resync = setInterval(() => {
    transcriptsTls(config, clients).then(
      (next) => {
        if (JSON.stringify(next) === JSON.stringify(tls)) return;
        transcriptsApi.reload(next);
        tls = next;
        log.info("transcripts API: serving certificate or front-proxy settings reloaded");
      },
      (error: unknown) =>
        log.warn({ err: error }, "transcripts API: cannot re-read its TLS settings; serving the last ones"),
    );
  }, TRANSCRIPTS_TLS_RESYNC_MS);
  started.onShutdown("transcriptsApi", async () => {
    clearInterval(resync);
    const { cut, requests } = await transcriptsApi.close(GATEWAY_DRAIN_MS);
    if (cut > 0)
      log.warn({ connections: cut, requests }, "transcripts API: cut connections still open after the drain");
  });
  await gateway.listen({ host: config.gatewayHost, port: config.gatewayPort });
  await transcriptsApi.app.listen({ host: config.gatewayHost, port: config.transcriptsApi.port });
  listening = true;
  log.info({ databaseLogin: store.login }, "caches synced; the gateway serves");
}
