import { ApiException, type CoreV1Api, type V1ConfigMap } from "@kubernetes/client-node";
import type { JWK } from "jose";
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { GRANT_PUBLIC_KEYS_CONFIGMAP } from "../api/well-known.ts";
import { jwksOf, newGrantKey } from "./grant-keys.ts";
import {
  combinedJwks,
  GRANT_PUBLIC_KEYS_KEY,
  mergeJwks,
  publishableKeys,
  publishedText,
  publishGrantPublicKeys,
  readGrantPublicKeys,
  validPublishedKeys,
} from "./grant-public-keys.ts";

const log = pino({ level: "silent" });
const T0 = new Date("2026-12-01T00:00:00.000Z");

/** The published form of one fresh key, and its private `d`. */
async function publishedKey(): Promise<{ jwk: JWK; d: string }> {
  const key = await newGrantKey(T0);
  return { jwk: publishableKeys(jwksOf([key]))[0]!, d: key.privateJwk.d };
}

const text = (keys: unknown[]) => JSON.stringify({ keys });

describe("validPublishedKeys", () => {
  it("takes well-formed Ed25519 public keys whose kid is their thumbprint, sorted by kid", async () => {
    const a = await publishedKey();
    const b = await publishedKey();
    const { keys, refused } = await validPublishedKeys(text([a.jwk, b.jwk]));
    expect(refused).toEqual([]);
    expect(keys.map((k) => k.kid)).toEqual([a.jwk.kid, b.jwk.kid].sort());
  });

  it("refuses a key carrying a private member d, and serves the others", async () => {
    const leaked = await publishedKey();
    const fine = await publishedKey();
    const { keys, refused } = await validPublishedKeys(text([{ ...leaked.jwk, d: leaked.d }, fine.jwk]));
    expect(keys).toEqual([fine.jwk]);
    expect(refused).toEqual([
      { kid: leaked.jwk.kid, reason: expect.stringMatching(/private key \(member d\)/) },
    ]);
  });

  it("refuses a key whose kid is not its own thumbprint, such as another key's kid", async () => {
    const a = await publishedKey();
    const b = await publishedKey();
    const alias = { ...b.jwk, kid: a.jwk.kid };
    const { keys, refused } = await validPublishedKeys(text([alias, { ...b.jwk, kid: "controller-1" }]));
    expect(keys).toEqual([]);
    expect(refused).toHaveLength(2);
    for (const refusal of refused) expect(refusal.reason).toMatch(/not the RFC 7638 thumbprint/);
  });

  it("refuses other shapes: other curves, extra members, a short x, a repeated kid", async () => {
    const a = await publishedKey();
    const { keys, refused } = await validPublishedKeys(
      text([
        { ...a.jwk, crv: "X25519" },
        { ...a.jwk, extra: 1 },
        { ...a.jwk, x: "eA" },
        "not a key",
        a.jwk,
        a.jwk,
      ]),
    );
    expect(keys).toEqual([a.jwk]);
    expect(refused.map((r) => r.reason)).toEqual([
      expect.stringMatching(/not an Ed25519 public JWK/),
      expect.stringMatching(/not an Ed25519 public JWK/),
      expect.stringMatching(/not an Ed25519 public JWK/),
      expect.stringMatching(/not an Ed25519 public JWK/),
      "its kid is published twice",
    ]);
  });

  it("yields no keys for text that is missing, not JSON or not a JWK Set", async () => {
    for (const bad of [undefined, "{", '{"keys": 1}', "[]"]) {
      const { keys, refused } = await validPublishedKeys(bad);
      expect(keys).toEqual([]);
      expect(refused).toHaveLength(1);
    }
  });
});

describe("publishableKeys and mergeJwks", () => {
  it("publishes only kid, kty, crv, x, alg and use, whatever the set holds", async () => {
    const { jwk, d } = await publishedKey();
    expect(publishableKeys({ keys: [{ ...jwk, d, p: "x" }] })).toEqual([jwk]);
  });

  it("serves the own keys first, then the published ones the own set lacks (own wins a kid)", async () => {
    const own = await publishedKey();
    const published = await publishedKey();
    const ownCopy = { ...own.jwk, use: "own" };
    const merged = mergeJwks({ keys: [ownCopy] }, [own.jwk, published.jwk]);
    expect(merged.keys).toEqual([ownCopy, published.jwk]);
    expect(
      combinedJwks(
        () => ({ keys: [ownCopy] }),
        () => [published.jwk],
      )(),
    ).toEqual(merged);
  });
});

/** A CoreV1Api of one ConfigMap in memory, recording writes; resourceVersion-checked as the API server does. */
function fakeCore(initial?: V1ConfigMap) {
  let stored = initial;
  let version = 1;
  const writes: string[] = [];
  const conflict = () => new ApiException(409, "Conflict", JSON.stringify({ reason: "Conflict" }), {});
  const core = {
    async readNamespacedConfigMap() {
      if (!stored) throw new ApiException(404, "not found", JSON.stringify({ reason: "NotFound" }), {});
      return structuredClone(stored);
    },
    async createNamespacedConfigMap({ body }: { body: V1ConfigMap }) {
      writes.push("create");
      if (stored) throw conflict();
      stored = { ...body, metadata: { ...body.metadata, resourceVersion: String(version++) } };
      return stored;
    },
    async replaceNamespacedConfigMap({ body }: { body: V1ConfigMap }) {
      writes.push("replace");
      if (body.metadata?.resourceVersion !== stored?.metadata?.resourceVersion) throw conflict();
      stored = { ...body, metadata: { ...body.metadata, resourceVersion: String(version++) } };
      return stored;
    },
  };
  return {
    core: core as unknown as CoreV1Api,
    writes,
    stored: () => stored,
    set: (next: V1ConfigMap | undefined) => {
      stored = next;
    },
  };
}

describe("publishGrantPublicKeys", () => {
  it("creates the ConfigMap, writes nothing while the set is unchanged, and republishes a rotation", async () => {
    const k1 = await newGrantKey(T0);
    const k2 = await newGrantKey(T0);
    let ring = [k1];
    const fake = fakeCore();
    const publisher = await publishGrantPublicKeys({
      core: fake.core,
      namespace: "gatehouse-system",
      ring: { jwks: () => jwksOf(ring) },
      log,
      intervalMs: 3_600_000,
    });
    try {
      expect(fake.writes).toEqual(["create"]);
      expect(fake.stored()?.metadata?.name).toBe(GRANT_PUBLIC_KEYS_CONFIGMAP);
      expect(fake.stored()?.data?.[GRANT_PUBLIC_KEYS_KEY]).not.toMatch(/"d"/);
      await publisher.publish();
      await publisher.publish();
      expect(fake.writes).toEqual(["create"]);
      ring = [k1, k2];
      await publisher.publish();
      expect(fake.writes).toEqual(["create", "replace"]);
      const { keys } = await validPublishedKeys(fake.stored()?.data?.[GRANT_PUBLIC_KEYS_KEY]);
      expect(keys.map((k) => k.kid).sort()).toEqual([k1.kid, k2.kid].sort());
    } finally {
      publisher.stop();
    }
  });

  it("restores a ConfigMap someone else edited, carrying its resourceVersion", async () => {
    const k1 = await newGrantKey(T0);
    const fake = fakeCore({
      metadata: { name: GRANT_PUBLIC_KEYS_CONFIGMAP, namespace: "gatehouse-system", resourceVersion: "7" },
      data: { [GRANT_PUBLIC_KEYS_KEY]: text([]) },
    });
    const publisher = await publishGrantPublicKeys({
      core: fake.core,
      namespace: "gatehouse-system",
      ring: { jwks: () => jwksOf([k1]) },
      log,
      intervalMs: 3_600_000,
    });
    publisher.stop();
    expect(fake.writes).toEqual(["replace"]);
    expect(fake.stored()?.data?.[GRANT_PUBLIC_KEYS_KEY]).toBe(publishedText(publishableKeys(jwksOf([k1]))));
  });
});

describe("readGrantPublicKeys", () => {
  it("serves no keys while the ConfigMap is missing, then the valid ones once it appears", async () => {
    const good = await publishedKey();
    const leaked = await publishedKey();
    const fake = fakeCore();
    const reader = await readGrantPublicKeys({
      core: fake.core,
      namespace: "gatehouse-system",
      resyncMs: 3_600_000,
      log,
    });
    try {
      expect(reader.keys()).toEqual([]);
      fake.set({
        metadata: { name: GRANT_PUBLIC_KEYS_CONFIGMAP, namespace: "gatehouse-system" },
        data: { [GRANT_PUBLIC_KEYS_KEY]: text([good.jwk, { ...leaked.jwk, d: leaked.d }]) },
      });
      await reader.sync();
      expect(reader.keys()).toEqual([good.jwk]);
      fake.set(undefined);
      await reader.sync();
      expect(reader.keys()).toEqual([]);
    } finally {
      reader.stop();
    }
  });

  it("re-reads every second while it holds no key, so keys the controller publishes after it started serve at once", async () => {
    const good = await publishedKey();
    const fake = fakeCore();
    const reader = await readGrantPublicKeys({
      core: fake.core,
      namespace: "gatehouse-system",
      resyncMs: 3_600_000,
      log,
    });
    try {
      fake.set({
        metadata: { name: GRANT_PUBLIC_KEYS_CONFIGMAP, namespace: "gatehouse-system" },
        data: { [GRANT_PUBLIC_KEYS_KEY]: text([good.jwk]) },
      });
      // Within a few seconds, not the hour's resync (the re-read also hashes each key: real time).
      await vi.waitFor(() => expect(reader.keys()).toEqual([good.jwk]), { timeout: 5_000, interval: 100 });
      // Held: back to the hour's re-read, so a removed ConfigMap is not seen seconds later.
      fake.set(undefined);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(reader.keys()).toEqual([good.jwk]);
    } finally {
      reader.stop();
    }
  });
});
