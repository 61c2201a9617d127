/**
 * The operator process: configuration, logger, Kubernetes clients and caches, the Postgres store,
 * Core, the four controllers and the gateway — wired here and nowhere else.
 * leader election issue: reconcilers will run on the elected leader only; the gateway on every replica.
 */
import { pino } from "pino";
import { configFromEnvironment } from "./config.ts";
import { startControllers } from "./controllers/manager.ts";
import { defaultCoreConfig } from "./core/invoke.ts";
import type { CoreDeps } from "./core/ports.ts";
import { tokenReviewer } from "./gateway/authenticate.ts";
import { fetchManifest, httpProviderClient } from "./gateway/provider-client.ts";
import { buildGateway } from "./gateway/server.ts";
import { startAdmissionGuard } from "./kube/admission-guard.ts";
import { kubeApprovalPort } from "./kube/approvals.ts";
import { makeCaches, startCaches, stopCaches } from "./kube/caches.ts";
import { cacheCatalog } from "./kube/catalog.ts";
import { loadKubeConfig, makeClients } from "./kube/client.ts";
import { secretIdentityResolver } from "./kube/identities.ts";
import { openStore } from "./store/store.ts";

const config = configFromEnvironment(process.env);
const log = pino({ level: config.logLevel, base: { component: "gatehouse-operator" } });

const clients = makeClients(loadKubeConfig(config.kubeconfig, config.kubeContext));
const caches = makeCaches(clients, log);
const store = await openStore({ logger: log });
const now = () => new Date();

const core: CoreDeps = {
  clock: { nowMicros: () => Date.now() * 1000 },
  catalog: cacheCatalog(caches),
  identities: secretIdentityResolver(clients),
  approvals: kubeApprovalPort(clients, caches, now),
  executions: store.executions,
  providers: httpProviderClient(
    (ref) => caches.providers.get(ref.name, ref.namespace)?.status?.endpoints?.[0],
  ),
  audit: store.audit,
  logger: log.child({ component: "core" }),
  config: defaultCoreConfig,
};

await startCaches(caches);
const admission = await startAdmissionGuard(clients, log.child({ component: "admission-guard" }));
log.info({ runsAsOperatorRole: store.runsAsOperatorRole }, "caches synced; starting controllers and gateway");
const controllers = startControllers({
  clients,
  caches,
  core,
  transcripts: store.transcripts,
  config,
  log,
  now,
  fetchManifest,
  decisionRulesEnforced: admission.enforced,
});
const gateway = buildGateway({
  caches,
  core,
  transcripts: store.transcripts,
  review: tokenReviewer(clients),
  log,
});
await gateway.listen({ host: config.gatewayHost, port: config.gatewayPort });

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "shutting down");
  await gateway.close();
  admission.stop();
  await controllers.stop();
  await stopCaches(caches);
  await store.stop();
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
