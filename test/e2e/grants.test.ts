/**
 * Grants on the real control plane and local node (DESIGN §5): a Shared provider (the fixture on the
 * SDK's production verifier) accepts a call only with a grant one of the operator's two key rings
 * signed for exactly that call — the gateway's (Auto calls) or the controller's (approved dispatch).
 * The test reads the signing keys as admin from each component's Secret and calls the provider's pod
 * directly, as an agent container that tried to bypass Core would. The gateway publishes, without
 * authentication, its own ring's public keys and those the controller published in ConfigMap
 * gatehouse-grant-public-keys, so a provider verifies either ring's grants by kid; a rotation of the
 * controller's ring reaches the gateway's JWKS and keeps grants of the old key valid while it is kept.
 */
import { randomBytes } from "node:crypto";
import { canonicalDigest, type InvokeRequest, ProtocolError, Receipt } from "@gatehouse/provider-sdk";
import type { V1Secret } from "@kubernetes/client-node";
import { type CryptoKey, importJWK, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Component,
  GRANT_JWKS_PATH,
  GRANT_KEYS_SECRETS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
} from "../../operator/src/api/well-known.ts";
import { GRANT_PUBLIC_KEYS_KEY } from "../../operator/src/providers/grant-public-keys.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

/** One key of the Secret (operator/src/providers/grant-keys.ts), as the test reads it. */
interface SecretKey {
  kid: string;
  createdAt: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

const OPERATOR_NAMESPACE = "gatehouse-system";
const CAPABILITY = "fixture.thing.write";

let env: Environment;
let namespace: string;
/** `http://<pod ip>:<port>` of the provider's pod. */
let endpoint: string;

beforeAll(async () => {
  // Re-read the keys Secrets (and the published keys) every second, so a rotation forced by editing
  // the controller's Secret shows within the test.
  env = await startEnvironment(clusterInfo(), { componentEnv: { GRANT_KEYS_RESYNC_SECONDS: "1" } });
  namespace = `grants-${randomBytes(3).toString("hex")}`;
  await env.kubectl.ok("admin", ["create", "namespace", namespace]);
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "ProviderInstance",
      metadata: { name: "fixture", namespace },
      spec: {
        type: "fixture",
        image: "gatehouse/provider-fixture:dev",
        config: { FIXTURE_CAPABILITIES: JSON.stringify([{ id: CAPABILITY, effect: "write" }]) },
      },
    }),
  );
  endpoint = await eventually("the provider's ready endpoint", 180_000, async () => {
    const provider = await env.kubectl.json<{
      status?: { endpoints?: string[]; conditions?: Array<{ type: string; reason: string }> };
    }>("admin", ["get", "providerinstance", "fixture", "-n", namespace]);
    const ready = provider.status?.conditions?.some(
      (c) => c.type === "Ready" && c.reason === "ManifestFetched",
    );
    return ready ? provider.status?.endpoints?.[0] : undefined;
  });
}, 600_000);

afterAll(async () => {
  if (namespace) await env?.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** The keys of `component`'s grant key Secret. */
async function readSecret(component: Component): Promise<{ secret: V1Secret; keys: SecretKey[] }> {
  const secret = await env.kubectl.json<V1Secret>("admin", [
    "get",
    "secret",
    GRANT_KEYS_SECRETS[component],
    "-n",
    OPERATOR_NAMESPACE,
  ]);
  const keys = JSON.parse(
    Buffer.from(secret.data?.["keys.json"] ?? "", "base64").toString("utf8"),
  ) as SecretKey[];
  return { secret, keys };
}

function invokeBody(n: number): InvokeRequest {
  const id = randomBytes(8).toString("hex");
  return {
    executionId: id,
    idempotencyKey: `gh1.${id}`,
    capability: CAPABILITY,
    arguments: { n },
    subject: { user: "alice", groups: [] },
  };
}

/** A grant for `body` as the operator signs it, with `key`; `claims` override claims to forge a wrong one. */
async function grantFor(key: SecretKey, body: InvokeRequest, claims: Record<string, unknown> = {}) {
  const privateKey = (await importJWK(key.privateJwk, "EdDSA")) as CryptoKey;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: "gatehouse",
    aud: `${namespace}/fixture`,
    sub: body.subject.user,
    jti: `${body.executionId}.${randomBytes(6).toString("base64url")}`,
    iat: now,
    exp: now + 60,
    cap: body.capability,
    idempotencyKey: body.idempotencyKey,
    argsDigest: canonicalDigest(body),
    ...claims,
  })
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid })
    .sign(privateKey);
}

/** POSTs `body` to the provider's pod, with `grant` as the bearer when given. */
async function invoke(body: unknown, grant?: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${endpoint}/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(grant ? { authorization: `Bearer ${grant}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function jwks(): Promise<{ contentType: string | null; kids: string[]; keys: JWK[] }> {
  const response = await fetch(`${env.gatewayUrl}${GRANT_JWKS_PATH}`);
  expect(response.status).toBe(200);
  const set = (await response.json()) as { keys: JWK[] };
  return {
    contentType: response.headers.get("content-type"),
    kids: set.keys.map((k) => k.kid ?? ""),
    keys: set.keys,
  };
}

describe("a provider behind grants", () => {
  it("refuses a call without a grant with 401", async () => {
    const answer = await invoke(invokeBody(1));
    expect(answer.status).toBe(401);
    expect(ProtocolError.parse(answer.body).kind).toBe("unauthenticated");
  });

  it.each<Component>(["gateway", "controller"])(
    "executes a call with the %s's grant once, and refuses the same grant replayed with 403",
    async (component) => {
      const { keys } = await readSecret(component);
      const body = invokeBody(2);
      const grant = await grantFor(keys[0]!, body);
      const first = await invoke(body, grant);
      expect(first.status).toBe(200);
      expect(Receipt.parse(first.body)).toEqual({ status: "succeeded", result: { n: 2 } });
      const replay = await invoke(body, grant);
      expect(replay.status).toBe(403);
      expect(ProtocolError.parse(replay.body).message).toContain("already used");
    },
  );

  it("refuses a body that differs from the one the grant's argsDigest pins", async () => {
    const { keys } = await readSecret("controller");
    const granted = invokeBody(3);
    const grant = await grantFor(keys[0]!, granted);
    const answer = await invoke({ ...granted, arguments: { n: 1000 } }, grant);
    expect(answer.status).toBe(403);
    expect(ProtocolError.parse(answer.body).message).toContain("argsDigest");
  });

  it("refuses a grant whose audience is another ProviderInstance", async () => {
    const { keys } = await readSecret("gateway");
    const body = invokeBody(4);
    const answer = await invoke(body, await grantFor(keys[0]!, body, { aud: `${namespace}/other` }));
    expect(answer.status).toBe(403);
    expect(ProtocolError.parse(answer.body).message).toContain(
      `not for this provider (${namespace}/fixture)`,
    );
  });
});

/**
 * Rewrites `component`'s keys Secret as if every key had been made two days ago, so rotation is due
 * (default period one day); returns the keys as they were.
 */
async function backdateKeys(component: Component) {
  const { secret, keys } = await readSecret(component);
  const backdated = keys.map((k) => ({
    ...k,
    createdAt: new Date(Date.parse(k.createdAt) - 2 * 86_400_000).toISOString(),
  }));
  await env.kubectl.ok(
    "admin",
    ["replace", "-f", "-"],
    JSON.stringify({
      ...secret,
      data: { ...secret.data, "keys.json": Buffer.from(JSON.stringify(backdated)).toString("base64") },
    }),
  );
  return keys;
}

describe("the grant keys", () => {
  it("are published without authentication at GET /v1/grants/jwks, public parts only, by both Secrets' kids", async () => {
    const gateway = (await readSecret("gateway")).keys.map((k) => k.kid);
    const controller = (await readSecret("controller")).keys.map((k) => k.kid);
    expect(controller.filter((kid) => gateway.includes(kid))).toEqual([]);
    const published = await jwks();
    expect(published.contentType).toBe("application/jwk-set+json");
    expect(published.kids.sort()).toEqual([...gateway, ...controller].sort());
    expect(published.keys.every((k) => k.d === undefined && k.kty === "OKP" && k.crv === "Ed25519")).toBe(
      true,
    );
  });

  it("of the controller reach the gateway through ConfigMap gatehouse-grant-public-keys, public parts only", async () => {
    const { keys } = await readSecret("controller");
    const configMap = await env.kubectl.json<{ data?: Record<string, string> }>("admin", [
      "get",
      "configmap",
      GRANT_PUBLIC_KEYS_CONFIGMAP,
      "-n",
      OPERATOR_NAMESPACE,
    ]);
    const published =
      (JSON.parse(configMap.data?.[GRANT_PUBLIC_KEYS_KEY] ?? "{}") as { keys?: JWK[] }).keys ?? [];
    expect(published.map((k) => k.kid).sort()).toEqual(keys.map((k) => k.kid).sort());
    expect(published.every((k) => k.d === undefined)).toBe(true);
  });

  it("of the controller rotate when the newest is old enough; the gateway serves the new key, the old stays valid", async () => {
    const gatewayKids = (await readSecret("gateway")).keys.map((k) => k.kid);
    const before = await backdateKeys("controller");
    const rotated = await eventually("a new key in the Secret", 60_000, async () => {
      const { keys } = await readSecret("controller");
      return keys.length > before.length ? keys : undefined;
    });
    const added = rotated.find((k) => !before.some((b) => b.kid === k.kid))!;
    const old = rotated.find((k) => k.kid === before.at(-1)!.kid)!;
    expect(old).toBeDefined();
    // Secret → controller's ring → ConfigMap → gateway's reader → JWKS: one more hop than the gateway's own keys.
    await eventually("the gateway's JWKS to list the old and the new controller key", 90_000, async () => {
      const { kids } = await jwks();
      return kids.includes(added.kid) &&
        kids.includes(old.kid) &&
        gatewayKids.every((kid) => kids.includes(kid))
        ? true
        : undefined;
    });

    const oldBody = invokeBody(5);
    const oldAnswer = await invoke(oldBody, await grantFor(old, oldBody));
    expect(oldAnswer.status).toBe(200);
    expect(Receipt.parse(oldAnswer.body).status).toBe("succeeded");

    // The provider learns the new key from the JWKS when a grant names it (after a short cooldown).
    const newAnswer = await eventually("a grant of the new key to be accepted", 60_000, async () => {
      const body = invokeBody(6);
      const answer = await invoke(body, await grantFor(added, body));
      return answer.status === 200 ? answer : undefined;
    });
    expect(Receipt.parse(newAnswer.body).status).toBe("succeeded");
  });

  it("of the gateway rotate too, written by the gateway itself, and its JWKS serves the new key", async () => {
    const before = await backdateKeys("gateway");
    const rotated = await eventually("a new key in the gateway's Secret", 60_000, async () => {
      const { keys } = await readSecret("gateway");
      return keys.length > before.length ? keys : undefined;
    });
    const added = rotated.find((k) => !before.some((b) => b.kid === k.kid))!;
    await eventually("the gateway's JWKS to list its new key", 60_000, async () =>
      (await jwks()).kids.includes(added.kid) ? true : undefined,
    );
  });
});
