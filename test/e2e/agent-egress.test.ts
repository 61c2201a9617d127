/**
 * What an agent pod can reach, now that the local node enforces NetworkPolicy as a cluster's CNI does
 * (DESIGN §7): the operator's agent NetworkPolicy lets it send to the gateway and nothing else — not to
 * the provider pods, the business systems, Postgres or the API server — and provider pods accept calls
 * only from the gateway and the controller. Every attempt is made from inside the real agent pod's
 * network namespace (the pod's own address, so its own policies), and each refusal has a control: a
 * pod of the same namespace without the agent's label reaches the same address, so the refusal is the
 * policy's and not the pod firewall's or a closed port's. The gateway, the fake systems and Postgres
 * are host processes here, so "gateway yes, APS no" is told apart by port (OFF_CLUSTER_GATEWAYS).
 * Last, the one provider an agent does reach — a Sidecar provider in its own pod, on its loopback —
 * refuses every call that does not carry a valid gateway grant for this session's exact call.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { InvokeRequest } from "@gatehouse/provider-sdk";
import type { V1Secret } from "@kubernetes/client-node";
import { generateKeyPair, importJWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GRANT_KEYS_SECRETS, OPERATOR_NAMESPACE, PROVIDER_LABEL } from "../../operator/src/api/well-known.ts";
import { keysOfSecret, type SigningKey } from "../../operator/src/providers/grant-keys.ts";
import { grantSigner } from "../../operator/src/providers/grant-signer.ts";
import { connectFromPod, forwardHostService, podNetns, type TcpProxy } from "../cluster/src/index.ts";
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

/** One HTTP request from inside the network namespace `netns` (curl, 5 s): status and body. */
function requestFromNetns(
  netns: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const headers = Object.entries(init.headers ?? {}).flatMap(([k, v]) => ["-H", `${k}: ${v}`]);
  const body = init.body === undefined ? [] : ["--data-binary", init.body];
  const args = ["netns", "exec", netns, "curl", "-sS", "-m", "5", "-X", init.method ?? "GET"];
  return new Promise((resolve, reject) => {
    execFile("ip", [...args, ...headers, ...body, "-w", "\n%{http_code}", url], (error, stdout, stderr) => {
      if (error) return reject(new Error(`curl from ${netns} failed: ${stderr || error.message}`));
      const cut = stdout.lastIndexOf("\n");
      resolve({ status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
    });
  });
}

describe("a Sidecar provider, called by the agent beside it", () => {
  it("refuses a call without a valid gateway grant for this session's exact call, and runs none of them", async () => {
    const sidecarNamespace = await coreNamespace(env, "sidecar-grants");
    await env.kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "gatehouse.dev/v1alpha1",
            kind: "ProviderInstance",
            metadata: { name: "fx", namespace: sidecarNamespace },
            spec: {
              type: "fixture",
              image: "gatehouse/provider-fixture:dev",
              placement: "Sidecar",
              config: {
                FIXTURE_CAPABILITIES: JSON.stringify([
                  { id: "fx.stock.read", effect: "read" },
                  { id: "fx.price.read", effect: "read" },
                ]),
              },
            },
          },
          ...["fx.stock.read", "fx.price.read"].map((id) => ({
            apiVersion: "gatehouse.dev/v1alpha1",
            kind: "Capability",
            metadata: { name: id.split(".")[1], namespace: sidecarNamespace },
            spec: { id, providerRef: { name: "fx" } },
          })),
        ],
      }),
    );
    await env.kubectl.ok("admin", [
      "wait",
      "-n",
      sidecarNamespace,
      "--for=condition=Ready",
      "--timeout=180s",
      "capability",
      "stock",
      "price",
    ]);
    const session = await sleepingSession(env, sidecarNamespace, "sidecar-agent");
    const pod = await env.kubectl.json<{ status?: { podIP?: string } }>("admin", [
      "get",
      "pod",
      session.podName,
      "-n",
      sidecarNamespace,
    ]);
    // The agent's own view: the sidecar shares its network namespace, so it is on the loopback.
    const netns = await podNetns(cluster.instance, pod.status?.podIP ?? "");
    const invokeUrl = "http://127.0.0.1:18080/v1/invoke";
    const send = (body: string, grant?: string) =>
      requestFromNetns(netns, invokeUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(grant ? { authorization: `Bearer ${grant}` } : {}),
        },
        body,
      });

    // Grants as the gateway signs them, with its own key (read from its Secret, as a leak would give them).
    const secret = await env.kubectl.json<V1Secret>("admin", [
      "get",
      "secret",
      GRANT_KEYS_SECRETS.gateway,
      "-n",
      OPERATOR_NAMESPACE,
    ]);
    const key = keysOfSecret(secret)[0]!;
    const gatewayKey = {
      kid: key.kid,
      privateKey: (await importJWK(key.privateJwk, "EdDSA")) as SigningKey["privateKey"],
    };
    const gateway = grantSigner({ signingKey: async () => gatewayKey });
    const forged = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    // Another key under the gateway's kid: only the signature tells it apart.
    const forger = grantSigner({ signingKey: async () => ({ kid: key.kid, privateKey: forged.privateKey }) });
    const provider = { namespace: sidecarNamespace, name: "fx" };
    const request = (n: string, capability = "fx.stock.read", sku = "A-100"): InvokeRequest => ({
      executionId: `attack-${n}`,
      idempotencyKey: `gh1.attack-${n}`,
      capability,
      arguments: { sku },
      subject: { user: "alice", groups: [] },
    });
    const refusals: Array<[string, { status: number; body: string }]> = [];

    const none = await gateway.signInvoke(provider, request("none"), session.uid);
    refusals.push(["no grant", await send(none.body)]);
    const otherKey = await forger.signInvoke(provider, request("key"), session.uid);
    refusals.push(["another key", await send(otherKey.body, otherKey.grant)]);
    const otherSession = await gateway.signInvoke(provider, request("session"), randomUUID());
    refusals.push(["another session", await send(otherSession.body, otherSession.grant)]);
    const priceGrant = await gateway.signInvoke(provider, request("cap", "fx.price.read"), session.uid);
    const stockBody = JSON.stringify(request("cap"));
    refusals.push(["another capability", await send(stockBody, priceGrant.grant)]);
    const args = await gateway.signInvoke(provider, request("args"), session.uid);
    refusals.push([
      "other arguments",
      await send(JSON.stringify(request("args", undefined, "B-200")), args.grant),
    ]);
    // Control: the gateway's grant for this session's call runs it once; the same grant again is refused.
    const genuine = await gateway.signInvoke(provider, request("genuine"), session.uid);
    const control = await send(genuine.body, genuine.grant);
    expect(control.status).toBe(200);
    expect(JSON.parse(control.body)).toMatchObject({ status: "succeeded", result: { sku: "A-100" } });
    refusals.push(["replayed", await send(genuine.body, genuine.grant)]);

    expect(refusals.map(([what, reply]) => [what, reply.status])).toEqual([
      ["no grant", 401],
      ["another key", 403],
      ["another session", 403],
      ["another capability", 403],
      ["other arguments", 403],
      ["replayed", 403],
    ]);
    expect(refusals.find(([what]) => what === "another session")?.[1].body).toContain(
      "not for this sidecar's session",
    );
    // The sidecar's own log (the local node's container log): one call ran, the control.
    const podDir = readdirSync(join(cluster.runDir, "pods")).find((d) =>
      d.startsWith(`${sidecarNamespace}_${session.podName}`),
    );
    const answered = await eventually("the sidecar to log the control call", 30_000, async () => {
      const log = readFileSync(join(cluster.runDir, "pods", podDir ?? "", "logs", "provider-fx.log"), "utf8");
      const lines = log.split("\n").filter((line) => line.includes('"invoke answered"'));
      return lines.some((line) => line.includes("attack-genuine")) ? lines : undefined;
    });
    expect(answered.map((line) => JSON.parse(line).executionId)).toEqual(["attack-genuine"]);
    await env.kubectl.run("admin", ["delete", "namespace", sidecarNamespace, "--wait=false"]);
  });
});
