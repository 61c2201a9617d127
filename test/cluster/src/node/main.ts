/**
 * The local node: a small kubelet that runs pods bound to it as processes in per-pod network namespaces.
 *
 *   node test/cluster/src/node/main.ts --kubeconfig F --context local-node --node-name N \
 *     --bridge-ip IP --pod-cidr CIDR --run-dir D
 *
 * Logs JSON lines (pino) to stdout. Exits on SIGTERM/SIGINT after stopping its pods' processes,
 * removing their network namespaces and posting Ready=False. Pod processes carry a parent-death signal, so they also die if the
 * local node is killed outright.
 */
import { join } from "node:path";
import { NetworkingV1Api, type V1Namespace, type V1NetworkPolicy, VersionApi } from "@kubernetes/client-node";
import { pino } from "pino";
import { API_SERVER_PORT } from "../components.ts";
import { findBridgeByAddress } from "../network.ts";
import { ensureBridgeNetfilter, NetworkPolicyEnforcer } from "../network-policy/enforcer.ts";
import { parseNodeConfig } from "./config.ts";
import { EventRecorder } from "./events.ts";
import { runImageBuildSteps } from "./images.ts";
import { IpAllocator } from "./ip-allocator.ts";
import { apiObjectReader, createNodeClients } from "./kube-client.ts";
import { LEASE_RENEW_MS, NodeLease } from "./lease.ts";
import { PodManager } from "./pod-manager.ts";
import { podSource } from "./pod-source.ts";
import { Reflector } from "./reflector.ts";
import { postNodeStatus, registerNode, syncNodeStatus } from "./registration.ts";
import { ServiceAccountTokens } from "./tokens.ts";

const config = parseNodeConfig(process.argv.slice(2));
const log = pino({ name: "local-node", base: { node: config.nodeName } });
const clients = createNodeClients(config.kubeconfig, config.context);
const addressing = await findBridgeByAddress(config.bridgeIP);
const version = await clients.kc.makeApiClient(VersionApi).getCode();
const facts = {
  nodeName: config.nodeName,
  bridgeIP: config.bridgeIP,
  podCIDR: config.podCIDR,
  kubeletVersion: version.gitVersion,
};
const readiness = { ready: true, since: new Date() };

ensureBridgeNetfilter();
const policy = new NetworkPolicyEnforcer({
  bridgeName: addressing.bridgeName,
  bridgeIP: config.bridgeIP,
  log,
  rulesetPath: join(config.runDir, "network-policy.nft"),
});
const networking = clients.kc.makeApiClient(NetworkingV1Api);
const policySources = [
  new Reflector<V1NetworkPolicy>(clients.kc, {
    kind: "NetworkPolicy",
    path: "/apis/networking.k8s.io/v1/networkpolicies",
    list: () => networking.listNetworkPolicyForAllNamespaces(),
    handler: policy.policyHandler,
    log,
  }),
  new Reflector<V1Namespace>(clients.kc, {
    kind: "namespace",
    path: "/api/v1/namespaces",
    list: () => clients.core.listNamespace(),
    handler: policy.namespaceHandler,
    log,
  }),
];

// What the images' builds do beyond copying (their compile caches), once, before any pod starts.
await runImageBuildSteps().catch((error: unknown) =>
  log.error({ err: error }, "an image's build step failed: its pods start without what it makes"),
);

const pods = new PodManager({
  nodeName: config.nodeName,
  runDir: config.runDir,
  clients,
  reader: apiObjectReader(clients.core),
  addressing: { ...addressing, podCIDR: config.podCIDR },
  apiServer: { host: config.bridgeIP, port: API_SERVER_PORT },
  ips: new IpAllocator(config.podCIDR, config.bridgeIP),
  policy,
  tokens: new ServiceAccountTokens(clients.core),
  events: new EventRecorder(clients.core, config.nodeName, log),
  log,
});
const source = podSource(clients.kc, clients.core, config.nodeName, pods, log);

const nodeUID = await registerNode(clients.core, facts, readiness, log);
const lease = new NodeLease(clients.coordination, config.nodeName, nodeUID);
await lease.renew();
// One heartbeat every 10 s: renew the Lease, then compare the node's status with the stored Node's and
// post it if it differs or is due (after an outage, Ready=Unknown turns back to Ready at the first beat).
const heartbeatTimer = setInterval(() => {
  void (async () => {
    await lease.renew().catch((err: unknown) => log.warn({ err }, "lease renewal failed"));
    await syncNodeStatus(clients.core, facts, readiness).then(
      (why) => {
        if (why === "changed") log.info("the stored Node's Ready was not the node's; posted node status");
      },
      (err: unknown) => log.warn({ err }, "node status failed"),
    );
  })();
}, LEASE_RENEW_MS);
const running = Promise.all([source, ...policySources].map((s) => s.run()));
log.info({ podCIDR: config.podCIDR, bridge: addressing.bridgeName }, "local node running");

let exiting = false;
async function shutdown(why: string): Promise<void> {
  if (exiting) return;
  exiting = true;
  log.info({ why }, "local node stopping");
  clearInterval(heartbeatTimer);
  source.stop();
  for (const s of policySources) s.stop();
  await pods.shutdown();
  await running;
  await policy.stop();
  // Tell the control plane at once rather than letting the Lease expire (40 s): new pods stop being
  // scheduled here and the node lifecycle controller taints the node.
  await postNodeStatus(clients.core, facts, { ready: false, since: new Date() }).catch((err: unknown) =>
    log.warn({ err }, "could not mark the node NotReady"),
  );
  log.info("local node stopped");
  process.exit(0);
}

process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
