/**
 * What an agent pod can reach, now that the local node enforces NetworkPolicy as a cluster's CNI does
 * (DESIGN §7): the operator's agent NetworkPolicy lets it send to the gateway and nothing else — not to
 * the provider pods, the business systems, Postgres or the API server — and provider pods accept calls
 * only from the gateway and the controller. Every attempt is made from inside the real agent pod's
 * network namespace (the pod's own address, so its own policies), and each refusal has a control: a
 * pod of the same namespace without the agent's label reaches the same address, so the refusal is the
 * policy's and not the pod firewall's or a closed port's. The gateway, the fake systems and Postgres
 * are host processes here, so "gateway yes, APS no" is told apart by port (OFF_CLUSTER_GATEWAYS).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_LABEL } from "../../operator/src/api/well-known.ts";
import { connectFromPod, forwardHostService, type TcpProxy } from "../cluster/src/index.ts";
import { clusterInfo } from "./cluster-info.ts";
import { coreNamespace, SLEEPER_IMAGE, sleepingSession } from "./core-agent.ts";
import { deployCounter } from "./core-counter.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

const cluster = clusterInfo();
let env: Environment;
let namespace: string;
let database: TcpProxy;
/** Addresses of the agent pod, the unlabelled control pod and the counter's provider pod. */
const ips = { agent: "", control: "", provider: "" };
/** The counter provider's endpoint (ProviderInstance status.endpoints), as the gateway calls it. */
let providerEndpoint: URL;

/** `host:port` of every destination the cases name. */
function destinations() {
  const hostPort = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) });
  return {
    gateway: hostPort(env.gatewayUrl),
    aps: hostPort(env.aps.url),
    "API server": { host: cluster.bridgeIP, port: 6443 },
    Postgres: { host: cluster.bridgeIP, port: database.port },
    "provider pod": { host: providerEndpoint.hostname, port: Number(providerEndpoint.port) },
  };
}

async function attempt(from: keyof typeof ips, to: keyof ReturnType<typeof destinations>): Promise<string> {
  const { host, port } = destinations()[to];
  return connectFromPod(cluster.instance, ips[from], host, port);
}

beforeAll(async () => {
  env = await startEnvironment(cluster, { componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE } });
  namespace = await coreNamespace(env, "egress");
  // Postgres as pods would reach it where it runs beside the cluster: a forwarder on the bridge.
  database = await forwardHostService(cluster.instance, cluster.bridgeIP, { host: "127.0.0.1", port: 5432 });
  await deployCounter(env, namespace, "counter", [{ id: "plan.read", effect: "read" }]);
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "control", namespace },
      spec: { containers: [{ name: "sleep", image: "gatehouse/testbox:dev", args: ["sleep", "forever"] }] },
    }),
  );
  const session = await sleepingSession(env, namespace, "egress");
  const podIP = async (selector: string[]) =>
    eventually(`the address of pod ${selector.join(" ")}`, 120_000, async () => {
      const ip = (
        await env.kubectl.ok("admin", [
          "get",
          "pods",
          "-n",
          namespace,
          ...selector,
          "-o",
          "jsonpath={.items[0].status.podIP}",
        ])
      ).stdout.trim();
      return ip || undefined;
    });
  ips.agent = await podIP([`--field-selector=metadata.name=${session.podName}`]);
  ips.control = await podIP(["--field-selector=metadata.name=control"]);
  ips.provider = await podIP(["-l", `${PROVIDER_LABEL}=counter`]);
  const provider = await env.kubectl.json<{ status?: { endpoints?: string[] } }>("admin", [
    "get",
    "providerinstance",
    "counter",
    "-n",
    namespace,
  ]);
  providerEndpoint = new URL(provider.status?.endpoints?.[0] ?? "http://unset");
  expect(providerEndpoint.hostname).toBe(ips.provider);
}, 600_000);

afterAll(async () => {
  await database?.close();
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

describe("an agent pod under the operator's NetworkPolicy", () => {
  it("reaches the gateway", async () => {
    expect(await attempt("agent", "gateway")).toBe("connected");
  });

  it.each(["aps", "API server", "Postgres", "provider pod"] as const)(
    "cannot reach the %s, which a pod without the agent's label in its namespace reaches",
    async (to) => {
      expect(await attempt("agent", to)).toBe("failed ECONNREFUSED");
      if (to !== "provider pod") expect(await attempt("control", to)).toBe("connected");
    },
  );
});

describe("a provider pod under the operator's NetworkPolicy", () => {
  it("refuses a pod of its namespace that is neither the gateway nor the controller", async () => {
    expect(await attempt("control", "provider pod")).toBe("failed ECONNREFUSED");
  });

  it("answers the gateway and the controller, which call it from the host", async () => {
    const manifest = await fetch(new URL("/v1/manifest", providerEndpoint));
    expect(manifest.status).toBe(200);
  });
});
