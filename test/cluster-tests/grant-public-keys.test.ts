/**
 * The controller's grant public keys reach the gateway's JWKS through the real API server (DESIGN §5):
 * one ring publishes into ConfigMap gatehouse-grant-public-keys, a reader serves them beside its own
 * ring's keys, and the provider SDK's verifier, pointed at that combined JWKS, accepts a grant the
 * publisher's ring signed. A ConfigMap edited to carry a private key or a kid that is not its key's
 * thumbprint is refused by the reader. Each test file works in its own namespace.
 */
import { randomBytes } from "node:crypto";
import { jwksGrantVerifier } from "@gatehouse/provider-sdk";
import { fastify } from "fastify";
import { importJWK } from "jose";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  GRANT_JWKS_PATH,
  GRANT_KEYS_SECRETS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
} from "../../operator/src/api/well-known.ts";
import { jwksRoute } from "../../operator/src/gateway/jwks-route.ts";
import { type KubeClients, loadKubeConfig, makeClients } from "../../operator/src/kube/runtime/client.ts";
import {
  type GrantKeyRing,
  newGrantKey,
  type SigningKey,
  startGrantKeyRing,
} from "../../operator/src/providers/grant-keys.ts";
import {
  combinedJwks,
  GRANT_PUBLIC_KEYS_KEY,
  type GrantPublicKeys,
  type GrantPublicKeysPublisher,
  publishableKeys,
  publishGrantPublicKeys,
  readGrantPublicKeys,
} from "../../operator/src/providers/grant-public-keys.ts";
import { grantSigner } from "../../operator/src/providers/grant-signer.ts";

const cluster = inject("cluster");
const log = pino({ level: "silent" });
const PROVIDER = { namespace: "plant-a", name: "aps" };
const HOUR = 3_600_000;
const timings = { rotationMs: 24 * HOUR, activationMs: 0, retainMs: HOUR };

let clients: KubeClients;
let namespace: string;
let controllerRing: GrantKeyRing;
let gatewayRing: GrantKeyRing;
let publisher: GrantPublicKeysPublisher;
let reader: GrantPublicKeys;
const app = fastify();
let jwksUrl: string;

const ring = (secretName: string) =>
  startGrantKeyRing({ core: clients.core, namespace, secretName, timings, resyncMs: HOUR, log });

beforeAll(async () => {
  clients = makeClients(loadKubeConfig(cluster.kubeconfigPath, "admin"));
  namespace = `grant-keys-${randomBytes(3).toString("hex")}`;
  await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  controllerRing = await ring(GRANT_KEYS_SECRETS.controller);
  gatewayRing = await ring(GRANT_KEYS_SECRETS.gateway);
  publisher = await publishGrantPublicKeys({ core: clients.core, namespace, ring: controllerRing, log });
  reader = await readGrantPublicKeys({ core: clients.core, namespace, resyncMs: HOUR, log });
  await app.register(jwksRoute, { jwks: combinedJwks(gatewayRing.jwks, reader.keys) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (!address || typeof address === "string") throw new Error("the JWKS server has no TCP address");
  jwksUrl = `http://127.0.0.1:${address.port}${GRANT_JWKS_PATH}`;
});

afterAll(async () => {
  publisher?.stop();
  reader?.stop();
  controllerRing?.stop();
  gatewayRing?.stop();
  await app.close();
  if (namespace) await clients.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

/** Replaces the ConfigMap's JWK Set with `keys`, as someone with write access to it could. */
async function editConfigMap(keys: unknown[]): Promise<void> {
  const current = await clients.core.readNamespacedConfigMap({
    name: GRANT_PUBLIC_KEYS_CONFIGMAP,
    namespace,
  });
  await clients.core.replaceNamespacedConfigMap({
    name: GRANT_PUBLIC_KEYS_CONFIGMAP,
    namespace,
    body: { ...current, data: { ...current.data, [GRANT_PUBLIC_KEYS_KEY]: JSON.stringify({ keys }) } },
  });
}

describe("publishing the controller's grant public keys", () => {
  it("writes the controller ring's public keys, with no private member, into the ConfigMap", async () => {
    const configMap = await clients.core.readNamespacedConfigMap({
      name: GRANT_PUBLIC_KEYS_CONFIGMAP,
      namespace,
    });
    const text = configMap.data?.[GRANT_PUBLIC_KEYS_KEY] ?? "";
    expect(JSON.parse(text)).toEqual({ keys: publishableKeys(controllerRing.jwks()) });
    expect(text).not.toMatch(/"d"/);
  });

  it("writes nothing while the ring is unchanged", async () => {
    const before = await clients.core.readNamespacedConfigMap({
      name: GRANT_PUBLIC_KEYS_CONFIGMAP,
      namespace,
    });
    await publisher.publish();
    const after = await clients.core.readNamespacedConfigMap({
      name: GRANT_PUBLIC_KEYS_CONFIGMAP,
      namespace,
    });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  it("serves both rings' keys, and a grant the controller's ring signed verifies by kid", async () => {
    await reader.sync();
    const response = await fetch(jwksUrl);
    const served = ((await response.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);
    const controllerKid = controllerRing.jwks().keys[0]!.kid!;
    expect(served.sort()).toEqual([gatewayRing.jwks().keys[0]!.kid!, controllerKid].sort());

    const verify = jwksGrantVerifier({ jwksUrl, audience: "plant-a/aps", jwksCooldownSeconds: 0 });
    const signer = grantSigner({ signingKey: controllerRing.signingKey });
    const grant = await signer.signStatus(PROVIDER, "gh1.status-of-dispatch");
    await expect(
      verify(grant, { route: "status", idempotencyKey: "gh1.status-of-dispatch" }),
    ).resolves.toBeUndefined();
    const own = await grantSigner({ signingKey: gatewayRing.signingKey }).signStatus(PROVIDER, "gh1.own");
    await expect(verify(own, { route: "status", idempotencyKey: "gh1.own" })).resolves.toBeUndefined();
  });

  it("refuses an edited ConfigMap's key with a private member d or a kid not its thumbprint", async () => {
    const planted = await newGrantKey(new Date());
    const impostor = await newGrantKey(new Date());
    const controllerKeys = publishableKeys(controllerRing.jwks());
    const sig = { alg: "EdDSA", use: "sig" };
    await editConfigMap([
      // Another key claiming the controller's kid, ahead of the controller's own entry.
      { ...impostor.publicJwk, ...sig, kid: controllerKeys[0]!.kid },
      ...controllerKeys,
      // A private key smuggled in under its own, correct kid.
      { ...planted.publicJwk, ...sig, kid: planted.kid, d: planted.privateJwk.d },
      // A key under a made-up kid.
      { ...impostor.publicJwk, ...sig, kid: "controller-2026" },
    ]);
    await reader.sync();
    expect(reader.keys()).toEqual(controllerKeys);

    // A grant signed with the planted private key finds no key in the JWKS the gateway serves.
    const verify = jwksGrantVerifier({ jwksUrl, audience: "plant-a/aps", jwksCooldownSeconds: 0 });
    const forged = await grantSigner({
      signingKey: async () => ({
        kid: planted.kid,
        privateKey: (await importJWK(planted.privateJwk, "EdDSA")) as SigningKey["privateKey"],
      }),
    }).signStatus(PROVIDER, "gh1.forged");
    await expect(verify(forged, { route: "status", idempotencyKey: "gh1.forged" })).rejects.toMatchObject({
      kind: "forbidden",
    });

    // The publisher restores the controller's own set.
    await publisher.publish();
    const restored = await clients.core.readNamespacedConfigMap({
      name: GRANT_PUBLIC_KEYS_CONFIGMAP,
      namespace,
    });
    expect(JSON.parse(restored.data?.[GRANT_PUBLIC_KEYS_KEY] ?? "")).toEqual({ keys: controllerKeys });
  });
});
