import { ApiException, type CoreV1Api, type V1Secret } from "@kubernetes/client-node";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { GRANT_KEYS_SECRETS } from "../api/well-known.ts";
import {
  ensureEmptySecret,
  GRANT_KEYS_KEY,
  jwksOf,
  type KeyTimings,
  keysOfSecret,
  keysToKeep,
  newGrantKey,
  rotationDue,
  type StoredGrantKey,
  signingKeyOf,
  startGrantKeyRing,
} from "./grant-keys.ts";

const SECOND = 1000;
const timings: KeyTimings = { rotationMs: 3600 * SECOND, activationMs: 120 * SECOND, retainMs: 180 * SECOND };
const T0 = Date.parse("2026-12-01T00:00:00.000Z");

/** A stored key created at `createdMs` (the key material does not matter to the pure functions). */
function key(kid: string, createdMs: number): StoredGrantKey {
  return {
    kid,
    createdAt: new Date(createdMs).toISOString(),
    privateJwk: { kty: "OKP", crv: "Ed25519", x: "eA", d: "ZA" },
    publicJwk: { kty: "OKP", crv: "Ed25519", x: "eA" },
  };
}

const kids = (keys: StoredGrantKey[]) => keys.map((k) => k.kid);

describe("signingKeyOf", () => {
  it("signs with the only key of a brand-new Secret at once", () => {
    expect(signingKeyOf([key("k1", T0)], T0, timings).kid).toBe("k1");
  });

  it("keeps signing with the old key until the new one is activationMs old", () => {
    const keys = [key("k2", T0 + 3600 * SECOND), key("k1", T0)];
    expect(signingKeyOf(keys, T0 + 3600 * SECOND, timings).kid).toBe("k1");
    expect(signingKeyOf(keys, T0 + 3719 * SECOND, timings).kid).toBe("k1");
    expect(signingKeyOf(keys, T0 + 3720 * SECOND, timings).kid).toBe("k2");
  });
});

describe("rotationDue", () => {
  it("is due once the newest key is rotationMs old", () => {
    const keys = [key("k1", T0)];
    expect(rotationDue(keys, T0 + 3599 * SECOND, timings)).toBe(false);
    expect(rotationDue(keys, T0 + 3600 * SECOND, timings)).toBe(true);
  });

  it("never adds a key while the newest still waits for activation, however short the rotation period", () => {
    const short = { ...timings, rotationMs: SECOND };
    const keys = [key("k1", T0), key("k2", T0 + 10 * SECOND)];
    expect(rotationDue(keys, T0 + 129 * SECOND, short)).toBe(false);
    expect(rotationDue(keys, T0 + 130 * SECOND, short)).toBe(true);
  });
});

describe("keysToKeep", () => {
  it("keeps the signing key and the one waiting for activation", () => {
    const keys = [key("k1", T0), key("k2", T0 + 3600 * SECOND)];
    expect(kids(keysToKeep(keys, T0 + 3650 * SECOND, timings))).toEqual(["k1", "k2"]);
  });

  it("keeps a superseded key for retainMs after the next key began to sign, then drops it", () => {
    const keys = [key("k1", T0), key("k2", T0 + 3600 * SECOND)];
    const superseded = T0 + 3720 * SECOND; // k2 active
    expect(kids(keysToKeep(keys, superseded + 179 * SECOND, timings))).toEqual(["k1", "k2"]);
    expect(kids(keysToKeep(keys, superseded + 180 * SECOND, timings))).toEqual(["k2"]);
  });

  it("drops each old key by when its successor began to sign, oldest first", () => {
    const keys = [key("k3", T0 + 7200 * SECOND), key("k1", T0), key("k2", T0 + 3600 * SECOND)];
    // k2 superseded k1 at 3720 s, k3 superseded k2 at 7320 s.
    expect(kids(keysToKeep(keys, T0 + 7400 * SECOND, timings))).toEqual(["k2", "k3"]);
    expect(kids(keysToKeep(keys, T0 + 7500 * SECOND, timings))).toEqual(["k3"]);
  });
});

describe("the Secret's content", () => {
  it("round-trips real Ed25519 keys and publishes only their public parts with kid, alg and use", async () => {
    const first = await newGrantKey(new Date(T0));
    const secret: V1Secret = {
      metadata: { name: "gatehouse-grant-keys", namespace: "gatehouse-system" },
      data: { [GRANT_KEYS_KEY]: Buffer.from(JSON.stringify([first])).toString("base64") },
    };
    expect(keysOfSecret(secret)).toEqual([first]);
    const jwks = jwksOf([first]);
    expect(jwks.keys).toEqual([
      { kty: "OKP", crv: "Ed25519", x: first.publicJwk.x, kid: first.kid, alg: "EdDSA", use: "sig" },
    ]);
    expect(jwks.keys[0]).not.toHaveProperty("d");
    expect(first.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("refuses content that is not a list of keys, naming the Secret and the fix", () => {
    const secret: V1Secret = {
      metadata: { name: "gatehouse-grant-keys", namespace: "gatehouse-system" },
      data: { [GRANT_KEYS_KEY]: Buffer.from('[{"kid": 1}]').toString("base64") },
    };
    expect(() => keysOfSecret(secret)).toThrow(
      /Secret gatehouse-system\/gatehouse-grant-keys key keys.json is not a list/,
    );
    expect(() => keysOfSecret({ ...secret, data: {} })).toThrow(/delete the Secret to start over/);
  });
});

/** A CoreV1Api holding Secrets by name in memory. */
function secretsCore() {
  const secrets = new Map<string, V1Secret>();
  const core = {
    async readNamespacedSecret({ name }: { name: string }) {
      const secret = secrets.get(name);
      if (!secret) throw new ApiException(404, "not found", JSON.stringify({ reason: "NotFound" }), {});
      return structuredClone(secret);
    },
    async createNamespacedSecret({ body }: { body: V1Secret }) {
      const name = body.metadata!.name!;
      creates.push(name);
      if (secrets.has(name)) throw new ApiException(409, "AlreadyExists", "{}", {});
      secrets.set(name, { ...body, metadata: { ...body.metadata, resourceVersion: "1" } });
      return body;
    },
    async replaceNamespacedSecret({ name, body }: { name: string; body: V1Secret }) {
      const current = secrets.get(name);
      if (!current) throw new ApiException(404, "not found", "{}", {});
      if (body.metadata?.resourceVersion !== current.metadata?.resourceVersion)
        throw new ApiException(409, "Conflict", "{}", {});
      const version = String(Number(current.metadata?.resourceVersion ?? "0") + 1);
      secrets.set(name, { ...body, metadata: { ...body.metadata, resourceVersion: version } });
      return body;
    },
  };
  const creates: string[] = [];
  return { core: core as unknown as CoreV1Api, secrets, creates };
}

describe("startGrantKeyRing", () => {
  it("keeps each component's ring in the Secret it is given, so the two rings share no key", async () => {
    const { core, secrets } = secretsCore();
    const start = (secretName: string) =>
      startGrantKeyRing({
        core,
        namespace: "gatehouse-system",
        secretName,
        timings,
        resyncMs: 3_600_000,
        log: pino({ level: "silent" }),
      });
    const gateway = await start(GRANT_KEYS_SECRETS.gateway);
    const controller = await start(GRANT_KEYS_SECRETS.controller);
    gateway.stop();
    controller.stop();
    expect([...secrets.keys()].sort()).toEqual(
      [GRANT_KEYS_SECRETS.controller, GRANT_KEYS_SECRETS.gateway].sort(),
    );
    expect(secrets.get(GRANT_KEYS_SECRETS.controller)?.metadata?.name).toBe(GRANT_KEYS_SECRETS.controller);
    const [gatewayKid, controllerKid] = [gateway.jwks().keys[0]?.kid, controller.jwks().keys[0]?.kid];
    expect(gatewayKid).toBeDefined();
    expect(controllerKid).not.toBe(gatewayKid);
    expect((await controller.signingKey()).kid).toBe(controllerKid);
  });

  it("may be kept from creating its Secret: it waits for the Secret created empty, then writes its first key into it", async () => {
    const { core, secrets, creates } = secretsCore();
    let started = false;
    const ring = startGrantKeyRing({
      core,
      namespace: "gatehouse-system",
      secretName: GRANT_KEYS_SECRETS.gateway,
      timings,
      resyncMs: 3_600_000,
      mayCreate: false,
      log: pino({ level: "silent" }),
    }).then((r) => {
      started = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(started).toBe(false);
    expect(creates).toEqual([]);
    // What the controller does (programs/controller.ts); a second call finds it there.
    expect(await ensureEmptySecret(core, "gatehouse-system", GRANT_KEYS_SECRETS.gateway)).toBe(true);
    expect(await ensureEmptySecret(core, "gatehouse-system", GRANT_KEYS_SECRETS.gateway)).toBe(false);
    const gateway = await ring;
    gateway.stop();
    expect(creates).toEqual([GRANT_KEYS_SECRETS.gateway, GRANT_KEYS_SECRETS.gateway]);
    const stored = keysOfSecret(secrets.get(GRANT_KEYS_SECRETS.gateway)!);
    expect(stored.map((k) => k.kid)).toEqual([gateway.jwks().keys[0]?.kid]);
    expect((await gateway.signingKey()).kid).toBe(stored[0]!.kid);
  });
});
