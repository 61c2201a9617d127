/**
 * The controller's grant public keys, published for the gateway (DESIGN §5). Providers verify every
 * grant by `kid` through the one JWKS the gateway serves, but the controller signs approved dispatch
 * with its own ring (providers/grant-keys.ts), whose Secret the gateway cannot read. So the controller
 * writes its ring's public JWKs into ConfigMap GRANT_PUBLIC_KEYS_CONFIGMAP of the operator's namespace,
 * and the gateway re-reads it and serves those keys beside its own.
 *
 * Shape: `data["jwks.json"]` is a JWK Set (RFC 7517 §5) of Ed25519 public keys,
 *   {"keys": [{"kid": "<RFC 7638 thumbprint>", "kty": "OKP", "crv": "Ed25519", "x": "…", "alg": "EdDSA", "use": "sig"}]}
 * sorted by kid, so equal sets are equal text and an unchanged ring writes nothing.
 *
 * A ConfigMap is no Secret: whoever may write it could try to plant a key. The reader therefore takes
 * only keys of exactly that shape — none with a private member `d` (a private key in a ConfigMap is
 * leaked, and must never be served), none whose kid is not the thumbprint of its own `x` (so no entry
 * can claim the kid of another key, own or published) — and skips the rest with a warning. It cannot
 * tell a planted well-formed key from the controller's: the ConfigMap's writers are as trusted as the
 * controller's signing key (RBAC lets only the controller update it).
 */
import type { CoreV1Api } from "@kubernetes/client-node";
import { calculateJwkThumbprint, type JSONWebKeySet, type JWK } from "jose";
import type { Logger } from "pino";
import { z } from "zod";
import { GRANT_PUBLIC_KEYS_CONFIGMAP } from "../api/well-known.ts";
import { publishConfigMap, readConfigMap } from "../kube/published-configmap.ts";
import type { GrantKeyRing } from "./grant-keys.ts";

/** The data key holding the JWK Set. */
export const GRANT_PUBLIC_KEYS_KEY = "jwks.json";
/** How often the gateway re-reads the ConfigMap while it holds no controller key. */
const MISSING_KEYS_RETRY_MS = 1_000;
/** How often the controller re-checks that the ConfigMap carries its ring's keys, by default. */
const DEFAULT_PUBLISH_INTERVAL_MS = 30_000;

/** An Ed25519 public key as published: exactly these members, `x` the 32-byte key in base64url. */
const PublishedJwk = z.strictObject({
  kid: z.string().min(1).max(128),
  kty: z.literal("OKP"),
  crv: z.literal("Ed25519"),
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "the base64url of 32 bytes"),
  alg: z.literal("EdDSA"),
  use: z.literal("sig"),
});
type PublishedJwk = z.infer<typeof PublishedJwk>;

const byKid = (a: { kid?: string }, b: { kid?: string }) =>
  (a.kid ?? "") < (b.kid ?? "") ? -1 : (a.kid ?? "") > (b.kid ?? "") ? 1 : 0;

/**
 * The public keys of `jwks` as the controller publishes them: only kid, kty, crv, x, alg and use (so
 * never a private member, whatever `jwks` holds), sorted by kid.
 */
export function publishableKeys(jwks: JSONWebKeySet): JWK[] {
  return jwks.keys.map(({ kid, kty, crv, x, alg, use }) => ({ kid, kty, crv, x, alg, use })).sort(byKid);
}

/** The ConfigMap text of `keys` (see the file comment); equal key sets give equal text. */
export function publishedText(keys: JWK[]): string {
  return JSON.stringify({ keys: [...keys].sort(byKid) });
}

/** One published entry the reader skipped, and why. */
export interface RefusedKey {
  /** Its `kid` if it has a string one. */
  kid?: string;
  reason: string;
}

/**
 * The keys of a ConfigMap's `jwks.json` text that the gateway may serve, and the entries it refuses
 * (see the file comment): a member `d`, a shape other than an Ed25519 public JWK, a kid that is not
 * the RFC 7638 SHA-256 thumbprint of the key (as providers/grant-keys.ts computes kids), or a kid repeated.
 * Text that is not a JWK Set yields no keys and one refusal.
 */
export async function validPublishedKeys(
  text: string | undefined,
): Promise<{ keys: JWK[]; refused: RefusedKey[] }> {
  if (text === undefined) return { keys: [], refused: [{ reason: `${GRANT_PUBLIC_KEYS_KEY} is missing` }] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { keys: [], refused: [{ reason: `${GRANT_PUBLIC_KEYS_KEY} is not JSON` }] };
  }
  const set = z.object({ keys: z.array(z.unknown()) }).safeParse(json);
  if (!set.success) {
    return { keys: [], refused: [{ reason: `${GRANT_PUBLIC_KEYS_KEY} is not a JWK Set {"keys": […]}` }] };
  }
  const keys: PublishedJwk[] = [];
  const refused: RefusedKey[] = [];
  for (const entry of set.data.keys) {
    const kid =
      typeof entry === "object" && entry !== null && typeof (entry as { kid?: unknown }).kid === "string"
        ? (entry as { kid: string }).kid
        : undefined;
    const refuse = (reason: string) => refused.push({ ...(kid === undefined ? {} : { kid }), reason });
    if (typeof entry === "object" && entry !== null && "d" in entry) {
      refuse("it carries a private key (member d)");
      continue;
    }
    const parsed = PublishedJwk.safeParse(entry);
    if (!parsed.success) {
      refuse(
        `it is not an Ed25519 public JWK {kid, kty, crv, x, alg, use}: ${z.prettifyError(parsed.error)}`,
      );
      continue;
    }
    const { kty, crv, x } = parsed.data;
    const thumbprint = await calculateJwkThumbprint({ kty, crv, x });
    if (parsed.data.kid !== thumbprint) {
      refuse(`its kid is not the RFC 7638 thumbprint of its key (${thumbprint})`);
      continue;
    }
    if (keys.some((k) => k.kid === parsed.data.kid)) {
      refuse("its kid is published twice");
      continue;
    }
    keys.push(parsed.data);
  }
  return { keys: keys.sort(byKid), refused };
}

/** `own` plus each of `published` whose kid `own` lacks (own wins a kid both hold). */
export function mergeJwks(own: JSONWebKeySet, published: JWK[]): JSONWebKeySet {
  const kids = new Set(own.keys.map((k) => k.kid));
  return { keys: [...own.keys, ...published.filter((k) => !kids.has(k.kid))] };
}

/** The JWKS the gateway serves: its own ring's keys and the controller's published ones, by {@link mergeJwks}. */
export function combinedJwks(own: () => JSONWebKeySet, published: () => JWK[]): () => JSONWebKeySet {
  return () => mergeJwks(own(), published());
}

const where = (namespace: string) => `ConfigMap ${namespace}/${GRANT_PUBLIC_KEYS_CONFIGMAP}`;

/** Runs `task` every `intervalMs`, never two at once, logging its failures; returns the stop function. */
function every(intervalMs: number, task: () => Promise<void>, onError: (error: unknown) => void): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    task()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Options of {@link publishGrantPublicKeys}. */
export interface PublishGrantPublicKeysOptions {
  core: CoreV1Api;
  /** The operator's namespace, where the ConfigMap lives. */
  namespace: string;
  /** The controller's ring; only its public JWKS is read. */
  ring: Pick<GrantKeyRing, "jwks">;
  log: Logger;
  /** How often to re-check the ConfigMap against the ring, in milliseconds (default 30 000). */
  intervalMs?: number;
}

/** The running publisher. */
export interface GrantPublicKeysPublisher {
  /** Writes the ring's current public keys now if the ConfigMap differs; the periodic check calls it. */
  publish(): Promise<void>;
  stop(): void;
}

/**
 * Publishes the ring's public keys (the controller's side): writes the ConfigMap now, then re-checks it
 * every `intervalMs`, so a rotation is republished and a ConfigMap edited or deleted by someone else is
 * restored. Creates it if absent; updates it, carrying the read resourceVersion, only when its text
 * differs from the ring's keys; a 409 re-reads. Resolves once the first write (or the check that none
 * is needed) succeeded. Errors: the first round's API error.
 */
export async function publishGrantPublicKeys(
  options: PublishGrantPublicKeysOptions,
): Promise<GrantPublicKeysPublisher> {
  const { core, namespace, ring, log } = options;
  const name = where(namespace);

  async function publish(): Promise<void> {
    const keys = publishableKeys(ring.jwks());
    const text = publishedText(keys);
    // Other keys of the ConfigMap are kept: the controller owns only this one.
    const wrote = await publishConfigMap(core, namespace, GRANT_PUBLIC_KEYS_CONFIGMAP, (current) =>
      current?.[GRANT_PUBLIC_KEYS_KEY] === text ? undefined : { ...current, [GRANT_PUBLIC_KEYS_KEY]: text },
    );
    if (wrote)
      log.info({ kids: keys.map((k) => k.kid) }, `published the controller's grant public keys in ${name}`);
  }

  await publish();
  const stop = every(options.intervalMs ?? DEFAULT_PUBLISH_INTERVAL_MS, publish, (error) =>
    log.error({ err: error }, `publishing the grant public keys in ${name} failed; retrying`),
  );
  return { publish, stop };
}

/** Options of {@link readGrantPublicKeys}. */
export interface ReadGrantPublicKeysOptions {
  core: CoreV1Api;
  /** The operator's namespace, where the ConfigMap lives. */
  namespace: string;
  /** How often to re-read the ConfigMap, in milliseconds. */
  resyncMs: number;
  log: Logger;
}

/** The gateway's view of the controller's published keys. */
export interface GrantPublicKeys {
  /** The published keys that passed {@link validPublishedKeys}, as last read. */
  keys(): JWK[];
  /** Re-reads the ConfigMap now; the periodic re-read calls it. Throws on API errors. */
  sync(): Promise<void>;
  stop(): void;
}

/**
 * Reads the controller's published keys (the gateway's side), then re-reads them every `resyncMs`
 * (every second while it holds none).
 * A missing ConfigMap means the controller has published nothing yet: no keys, logged once until it
 * appears. Refused entries are skipped and warned about whenever the refusals change. A later read that
 * fails keeps the keys read before. Errors: the first read's API error (not a missing ConfigMap).
 */
export async function readGrantPublicKeys(options: ReadGrantPublicKeysOptions): Promise<GrantPublicKeys> {
  const { core, namespace, log } = options;
  const name = where(namespace);
  let keys: JWK[] = [];
  let missingLogged = false;
  let lastRefusals = "[]";

  async function sync(): Promise<void> {
    const current = await readConfigMap(core, namespace, GRANT_PUBLIC_KEYS_CONFIGMAP);
    if (!current) {
      if (!missingLogged)
        log.info(`${name} does not exist yet: serving no controller grant keys until it does`);
      missingLogged = true;
      keys = [];
      return;
    }
    missingLogged = false;
    const { keys: valid, refused } = await validPublishedKeys(current.data?.[GRANT_PUBLIC_KEYS_KEY]);
    const refusals = JSON.stringify(refused);
    if (refusals !== lastRefusals && refused.length > 0) {
      log.warn({ refused }, `skipping grant public keys in ${name} that cannot be the controller's`);
    }
    lastRefusals = refusals;
    keys = valid;
  }

  await sync();
  // Until the controller's keys are there, re-read every second: the two Deployments start together,
  // and an approved dispatch signed with a key the JWKS does not serve yet is refused by the provider.
  // Once they are, a rotation is covered by the activation delay (longer than two re-reads).
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const next = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        sync()
          .catch((error: unknown) =>
            log.error({ err: error }, `re-reading ${name} failed; serving the controller keys read before`),
          )
          .finally(next);
      },
      keys.length === 0 ? MISSING_KEYS_RETRY_MS : options.resyncMs,
    );
    timer.unref();
  };
  next();
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  return { keys: () => keys, sync, stop };
}
