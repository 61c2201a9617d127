/**
 * A component's grant signing keys (DESIGN §5, §7), kept in its own Secret in the operator's namespace
 * (api/well-known.ts GRANT_KEYS_SECRETS: the gateway's and the controller's rings are separate, so neither
 * can sign with the other's keys) so that every replica of the component signs with the same keys and
 * publishes the same JWKS.
 *
 * Shape: `data["keys.json"]` is a JSON array of
 *   { "kid": "<RFC 7638 thumbprint>", "createdAt": "2026-12-01T10:00:00.000Z",
 *     "privateJwk": {"kty":"OKP","crv":"Ed25519","x":"…","d":"…"}, "publicJwk": {"kty":"OKP","crv":"Ed25519","x":"…"} }
 * (Ed25519 keys as OKP JWKs, RFC 8037 §2).
 *
 * Life of a key, by the pure functions below (times from `createdAt`):
 * - the newest key signs once it is `activationMs` old — by then every replica has re-read the Secret
 *   (every `resyncMs`) and publishes it, and providers' JWKS caches have had time to learn it; the
 *   only key of a brand-new Secret signs at once;
 * - when the newest key is `rotationMs` old (and active), some replica adds a new one;
 * - a key no longer signing stays published for `retainMs` (the longest grant lifetime plus margin),
 *   so grants it signed stay verifiable, and is then dropped.
 * Every replica runs the same maintenance; writes are optimistic (create; update carrying the read
 * resourceVersion), and a 409 re-reads, as client-go's `retry.RetryOnConflict`: whoever loses the race
 * adopts the winner's keys. A Secret whose content does not parse is never overwritten.
 *
 * The gateway may not create Secrets (`create` cannot be limited by name, and a Secret of type
 * `kubernetes.io/service-account-token` it created would be filled with a token of any ServiceAccount of
 * its namespace): the controller creates the gateway's Secret empty ({@link ensureEmptySecret}), and
 * the gateway's ring writes its first key into it.
 */
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JSONWebKeySet,
} from "jose";
import type { Logger } from "pino";
import { z } from "zod";
import { MANAGED_BY } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { describeApiError, isConflict, isNotFound } from "../kube/runtime/client.ts";

/** The data key holding the keys. */
export const GRANT_KEYS_KEY = "keys.json";
/** Read-modify-write rounds before a sync gives up on repeated 409 Conflicts. */
const MAX_ATTEMPTS = 5;

const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/, "base64url");
const PublicJwk = z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: Base64Url });
const PrivateJwk = PublicJwk.extend({ d: Base64Url });

/** One key as the Secret stores it. */
export const StoredGrantKey = z.object({
  kid: z.string().min(1).max(128),
  createdAt: z.iso.datetime(),
  privateJwk: PrivateJwk,
  publicJwk: PublicJwk,
});
export type StoredGrantKey = z.infer<typeof StoredGrantKey>;
const StoredGrantKeys = z.array(StoredGrantKey).min(1);

/** The periods of a key's life, in milliseconds (see the file comment). */
export interface KeyTimings {
  rotationMs: number;
  activationMs: number;
  retainMs: number;
}

const createdMs = (key: StoredGrantKey) => Date.parse(key.createdAt);

/** `keys` oldest first (ties by kid, so every replica orders them alike). */
function byAge(keys: StoredGrantKey[]): StoredGrantKey[] {
  return [...keys].sort(
    (a, b) => createdMs(a) - createdMs(b) || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0),
  );
}

/**
 * The key that signs at `nowMs`: the newest one at least `activationMs` old, else the oldest (the only
 * key of a brand-new Secret signs at once). `keys` must not be empty.
 */
export function signingKeyOf(keys: StoredGrantKey[], nowMs: number, timings: KeyTimings): StoredGrantKey {
  const sorted = byAge(keys);
  const active = sorted.filter((key) => createdMs(key) + timings.activationMs <= nowMs);
  return active.at(-1) ?? sorted[0]!;
}

/**
 * True when a new key is due at `nowMs`: the newest key is at least `rotationMs` old and already
 * signs (at least `activationMs` old), so at most one key ever waits for activation.
 */
export function rotationDue(keys: StoredGrantKey[], nowMs: number, timings: KeyTimings): boolean {
  const newest = byAge(keys).at(-1);
  if (!newest) return true;
  return nowMs >= createdMs(newest) + Math.max(timings.rotationMs, timings.activationMs);
}

/**
 * The keys to keep at `nowMs`, oldest first: the signing key, every newer one, and each older one for
 * `retainMs` after it stopped signing (when the next key became active).
 */
export function keysToKeep(keys: StoredGrantKey[], nowMs: number, timings: KeyTimings): StoredGrantKey[] {
  const sorted = byAge(keys);
  const signing = sorted.indexOf(signingKeyOf(sorted, nowMs, timings));
  return sorted.filter((_key, index) => {
    if (index >= signing) return true;
    const supersededAt = createdMs(sorted[index + 1]!) + timings.activationMs;
    return nowMs < supersededAt + timings.retainMs;
  });
}

/** The public keys as a JWK Set (RFC 7517 §5), each with `kid`, `alg: EdDSA` and `use: sig`, oldest first. */
export function jwksOf(keys: StoredGrantKey[]): JSONWebKeySet {
  return { keys: byAge(keys).map((key) => ({ ...key.publicJwk, kid: key.kid, alg: "EdDSA", use: "sig" })) };
}

/** A fresh Ed25519 key created at `now`, its kid the RFC 7638 SHA-256 thumbprint of its public JWK. */
export async function newGrantKey(now: Date): Promise<StoredGrantKey> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const publicJwk = PublicJwk.parse(await exportJWK(publicKey));
  const privateJwk = PrivateJwk.parse(await exportJWK(privateKey));
  return {
    kid: await calculateJwkThumbprint(publicJwk),
    createdAt: now.toISOString(),
    privateJwk,
    publicJwk,
  };
}

/** The keys of a Secret. Errors: `invalid_arguments` naming the Secret and what is wrong. */
export function keysOfSecret(secret: V1Secret): StoredGrantKey[] {
  const where = `Secret ${secret.metadata?.namespace}/${secret.metadata?.name} key ${GRANT_KEYS_KEY}`;
  const encoded = secret.data?.[GRANT_KEYS_KEY];
  if (!encoded)
    throw new GatehouseError("invalid_arguments", `${where} is missing; delete the Secret to start over`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(encoded, "base64").toString("utf8"));
  } catch (error) {
    throw new GatehouseError("invalid_arguments", `${where} is not JSON; delete the Secret to start over`, {
      cause: error,
    });
  }
  const parsed = StoredGrantKeys.safeParse(json);
  if (!parsed.success) {
    throw new GatehouseError(
      "invalid_arguments",
      `${where} is not a list of {kid, createdAt, privateJwk, publicJwk} Ed25519 keys: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/** The key a grant is signed with now. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

/** The replica's view of the keys in the Secret, re-read every `resyncMs`. */
export interface GrantKeyRing {
  /** The key to sign with at this moment (see {@link signingKeyOf}). */
  signingKey(): Promise<SigningKey>;
  /** The public keys to publish (RFC 7517 JWK Set). */
  jwks(): JSONWebKeySet;
  /** Re-reads (and maintains) the Secret now; the periodic re-read calls it. Throws on API errors. */
  sync(): Promise<void>;
  /** Stops the periodic re-read. */
  stop(): void;
}

/** Options of {@link startGrantKeyRing}. */
export interface GrantKeyRingOptions {
  core: CoreV1Api;
  /** The operator's namespace, where the Secret lives. */
  namespace: string;
  /**
   * The Secret holding this component's keys (GRANT_KEYS_SECRETS[component]); required, so that no
   * component falls back to another's ring.
   */
  secretName: string;
  timings: KeyTimings;
  /** How often every replica re-reads the Secret, in milliseconds. */
  resyncMs: number;
  /**
   * Whether the component may create the Secret (default true). When not, a missing Secret is waited
   * for (another component creates it empty) and then filled.
   */
  mayCreate?: boolean;
  log: Logger;
  now?: () => Date;
}

/** How often a ring that may not create its Secret looks for it while it is missing, at start. */
const MISSING_SECRET_RETRY_MS = 1_000;

/**
 * Reads (or creates) the Secret, then re-reads and maintains it every `resyncMs`: rotates when due and
 * drops keys past their retention (see the file comment). Resolves once this replica has keys.
 * Errors: the first read's API error, or `invalid_arguments` for a Secret whose content does not parse.
 */
export async function startGrantKeyRing(options: GrantKeyRingOptions): Promise<GrantKeyRing> {
  const { core, namespace, secretName, timings, log } = options;
  const now = options.now ?? (() => new Date());
  const where = `Secret ${namespace}/${secretName}`;
  let keys: StoredGrantKey[] = [];
  const imported = new Map<string, CryptoKey>();

  const bodyOf = (next: StoredGrantKey[], current?: V1Secret): V1Secret => ({
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: secretName,
      namespace,
      labels: { ...MANAGED_BY, "app.kubernetes.io/part-of": "gatehouse" },
      ...(current?.metadata?.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}),
    },
    data: {
      ...(current?.data ?? {}),
      [GRANT_KEYS_KEY]: Buffer.from(JSON.stringify(byAge(next))).toString("base64"),
    },
  });

  const adopt = (next: StoredGrantKey[]) => {
    const kids = new Set(next.map((k) => k.kid));
    for (const kid of imported.keys()) if (!kids.has(kid)) imported.delete(kid);
    keys = byAge(next);
  };

  async function read(): Promise<V1Secret | undefined> {
    try {
      return await core.readNamespacedSecret({ name: secretName, namespace });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new GatehouseError("unavailable", `cannot read ${where}: ${describeApiError(error)}`, {
        cause: error,
      });
    }
  }

  const mayCreate = options.mayCreate ?? true;

  /** Maintains the Secret; false when it is missing and this component may not create it. */
  async function maintain(): Promise<boolean> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const current = await read();
      const at = now();
      try {
        if (!current) {
          if (!mayCreate) return false;
          const first = [await newGrantKey(at)];
          await core.createNamespacedSecret({ namespace, body: bodyOf(first) });
          log.info({ kid: first[0]!.kid }, `created ${where} with its first grant signing key`);
          adopt(first);
          return true;
        }
        if (current.data?.[GRANT_KEYS_KEY] === undefined) {
          // Created empty for this component (ensureEmptySecret): its first key goes in.
          const first = [await newGrantKey(at)];
          await core.replaceNamespacedSecret({ name: secretName, namespace, body: bodyOf(first, current) });
          log.info({ kid: first[0]!.kid }, `wrote the first grant signing key into ${where}`);
          adopt(first);
          return true;
        }
        const stored = keysOfSecret(current);
        let next = keysToKeep(stored, at.getTime(), timings);
        if (rotationDue(next, at.getTime(), timings)) next = [...next, await newGrantKey(at)];
        const unchanged =
          next.length === stored.length && next.every((k) => stored.some((s) => s.kid === k.kid));
        if (unchanged) {
          adopt(stored);
          return true;
        }
        await core.replaceNamespacedSecret({
          name: secretName,
          namespace,
          body: bodyOf(next, current),
        });
        log.info(
          {
            added: next.filter((k) => !stored.some((s) => s.kid === k.kid)).map((k) => k.kid),
            dropped: stored.filter((s) => !next.some((k) => k.kid === s.kid)).map((s) => s.kid),
          },
          `rotated the grant signing keys in ${where}`,
        );
        adopt(next);
        return true;
      } catch (error) {
        if (!isConflict(error)) {
          if (error instanceof GatehouseError) throw error;
          throw new GatehouseError("unavailable", `cannot write ${where}: ${describeApiError(error)}`, {
            cause: error,
          });
        }
        // AlreadyExists (another replica created it) or a resourceVersion conflict (another rotated).
        log.debug({ attempt }, `${where} changed meanwhile; reading it again`);
      }
    }
    throw new GatehouseError("conflict", `${where}: ${MAX_ATTEMPTS} writes met a concurrent change`);
  }

  async function sync(): Promise<void> {
    if (await maintain()) return;
    // Later re-reads keep the keys held: grants go on being signed while the controller restores it.
    if (keys.length > 0) {
      log.warn(`${where} is gone; signing with the keys read before until gatehouse-controller recreates it`);
      return;
    }
    throw new GatehouseError("unavailable", `${where} does not exist yet`);
  }

  if (mayCreate) {
    await sync();
  } else {
    // It waits at start for the component that creates its Secret.
    let logged = false;
    while (!(await maintain())) {
      if (!logged) {
        log.info(
          `waiting for gatehouse-controller to create ${where} (this component may not create Secrets)`,
        );
        logged = true;
      }
      await new Promise((resolve) => setTimeout(resolve, MISSING_SECRET_RETRY_MS));
    }
  }
  let syncing = false;
  const timer = setInterval(() => {
    if (syncing) return;
    syncing = true;
    sync()
      .catch((error: unknown) =>
        log.error({ err: error }, `re-reading ${where} failed; signing and publishing the keys read before`),
      )
      .finally(() => {
        syncing = false;
      });
  }, options.resyncMs);
  timer.unref();

  return {
    async signingKey() {
      const key = signingKeyOf(keys, now().getTime(), timings);
      let privateKey = imported.get(key.kid);
      if (!privateKey) {
        privateKey = (await importJWK(key.privateJwk, "EdDSA")) as CryptoKey;
        imported.set(key.kid, privateKey);
      }
      return { kid: key.kid, privateKey };
    },
    jwks: () => jwksOf(keys),
    sync,
    stop: () => clearInterval(timer),
  };
}

/**
 * Creates Secret `name` of `namespace` empty (type Opaque, no data) unless it exists: the controller's
 * part of the gateway's ring (see the file comment). Resolves true when it created it.
 * Errors: `unavailable` for an API error other than AlreadyExists.
 */
export async function ensureEmptySecret(core: CoreV1Api, namespace: string, name: string): Promise<boolean> {
  try {
    await core.createNamespacedSecret({
      namespace,
      body: {
        apiVersion: "v1",
        kind: "Secret",
        type: "Opaque",
        metadata: { name, namespace, labels: { ...MANAGED_BY, "app.kubernetes.io/part-of": "gatehouse" } },
      },
    });
    return true;
  } catch (error) {
    if (isConflict(error)) return false;
    throw new GatehouseError(
      "unavailable",
      `cannot create Secret ${namespace}/${name}: ${describeApiError(error)}`,
      {
        cause: error,
      },
    );
  }
}
