/**
 * The audit witness's signing keys (DESIGN §6), kept in Secret `gatehouse-audit-witness-key` in the
 * operator's namespace; only the component that publishes checkpoints reads it. The public keys go to
 * the witness's ConfigMap (`configmap.ts`), the private ones never leave the Secret.
 *
 * Shape: `data["keys.json"]` is a JSON array of
 *   { "kid": "<RFC 7638 thumbprint>", "createdAt": "2026-12-01T10:00:00.000Z",
 *     "publicJwk": {"kty":"OKP","crv":"Ed25519","x":"…"}, "privateJwk": {"kty":"OKP","crv":"Ed25519","x":"…","d":"…"} }
 * The newest key with a `privateJwk` signs; a key without one is retired and only checks the
 * checkpoints it signed. The Secret is created with one key when absent (the first publication after
 * install); a Secret whose content does not parse is never overwritten. Unlike the grant keys
 * (`providers/grant-keys.ts`) nothing rotates on a timer: checkpoints are kept for years, and every key that
 * signed one must stay published.
 */
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { z } from "zod";
import { MANAGED_BY, WITNESS_KEY_SECRET } from "../../api/well-known.ts";
import { GatehouseError } from "../../core/errors.ts";
import type { WitnessSigner } from "../../core/witness.ts";
import {
  kidOf,
  newWitnessKey,
  privateKeyOf,
  publicPartOf,
  signingKeyOf,
  type WitnessKey,
  type WitnessSigningKey,
} from "../../core/witness-signature.ts";
import { describeApiError, isConflict, isNotFound } from "../runtime/client.ts";

/** The data key holding the keys. */
export const WITNESS_KEY_DATA = "keys.json";

const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/, "base64url");
const PublicJwk = z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: Base64Url });
const StoredWitnessKey = z.object({
  kid: z.string().min(1).max(128),
  createdAt: z.iso.datetime(),
  publicJwk: PublicJwk,
  privateJwk: PublicJwk.extend({ d: Base64Url }).optional(),
});
const StoredWitnessKeys = z.array(StoredWitnessKey).min(1);

/**
 * The keys of a Secret. Errors: `invalid_arguments` naming the Secret and what is wrong (not JSON, not
 * the shape, a kid that is not its key's thumbprint, no key that can sign).
 */
export function witnessKeysOfSecret(secret: V1Secret): WitnessKey[] {
  const where = `Secret ${secret.metadata?.namespace}/${secret.metadata?.name} key ${WITNESS_KEY_DATA}`;
  const fix = "restore it from a backup; deleting it makes every checkpoint signed so far unverifiable";
  const encoded = secret.data?.[WITNESS_KEY_DATA];
  if (!encoded) throw new GatehouseError("invalid_arguments", `${where} is missing; ${fix}`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(encoded, "base64").toString("utf8"));
  } catch (error) {
    throw new GatehouseError("invalid_arguments", `${where} is not JSON; ${fix}`, { cause: error });
  }
  const parsed = StoredWitnessKeys.safeParse(json);
  if (!parsed.success) {
    throw new GatehouseError(
      "invalid_arguments",
      `${where} is not a list of {kid, createdAt, publicJwk[, privateJwk]} Ed25519 keys: ${z.prettifyError(parsed.error)}; ${fix}`,
      { cause: parsed.error },
    );
  }
  const keys: WitnessKey[] = parsed.data.map((k) => ({
    kid: k.kid,
    createdAt: k.createdAt,
    publicJwk: { kty: "OKP", crv: "Ed25519", x: k.publicJwk.x },
    ...(k.privateJwk
      ? { privateJwk: { kty: "OKP", crv: "Ed25519", x: k.privateJwk.x, d: k.privateJwk.d } }
      : {}),
  }));
  const misnamed = keys.find((k) => kidOf(k.publicJwk) !== k.kid);
  if (misnamed) {
    throw new GatehouseError(
      "invalid_arguments",
      `${where}: key ${misnamed.kid} is not named by its RFC 7638 thumbprint (${kidOf(misnamed.publicJwk)}); ${fix}`,
    );
  }
  if (!signingKeyOf(keys)) {
    throw new GatehouseError(
      "invalid_arguments",
      `${where} holds no key with a privateJwk to sign with; ${fix}`,
    );
  }
  return keys;
}

/** Options of {@link secretWitnessSigner}. */
export interface WitnessSignerOptions {
  core: CoreV1Api;
  /** The operator's namespace, where the Secret lives. */
  namespace: string;
  log: Pick<Logger, "info">;
  now?: () => Date;
}

/**
 * The {@link WitnessSigner} of Secret `gatehouse-audit-witness-key`: each `keys()` reads the Secret
 * (once per publication, so a restored Secret is used at once) and creates it with a first key when
 * absent. Needs RBAC get on the Secret and create on secrets. Errors: `unavailable` for API errors,
 * `invalid_arguments` for a Secret whose content does not parse.
 */
export function secretWitnessSigner(options: WitnessSignerOptions): WitnessSigner {
  const { core, namespace, log } = options;
  const now = options.now ?? (() => new Date());
  const where = `Secret ${namespace}/${WITNESS_KEY_SECRET}`;
  const imported = new Map<string, WitnessSigningKey>();

  async function read(): Promise<V1Secret | undefined> {
    try {
      return await core.readNamespacedSecret({ name: WITNESS_KEY_SECRET, namespace });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new GatehouseError("unavailable", `cannot read ${where}: ${describeApiError(error)}`, {
        cause: error,
      });
    }
  }

  async function create(): Promise<WitnessKey[] | undefined> {
    const first = [newWitnessKey(now())];
    try {
      await core.createNamespacedSecret({
        namespace,
        body: {
          apiVersion: "v1",
          kind: "Secret",
          type: "Opaque",
          metadata: {
            name: WITNESS_KEY_SECRET,
            namespace,
            labels: { ...MANAGED_BY, "app.kubernetes.io/part-of": "gatehouse" },
          },
          data: { [WITNESS_KEY_DATA]: Buffer.from(JSON.stringify(first)).toString("base64") },
        },
      });
    } catch (error) {
      // AlreadyExists: another replica created it first; read theirs.
      if (isConflict(error)) return undefined;
      throw new GatehouseError("unavailable", `cannot create ${where}: ${describeApiError(error)}`, {
        cause: error,
      });
    }
    log.info({ kid: first[0]!.kid }, `created ${where} with the witness's first signing key`);
    return first;
  }

  async function currentKeys(): Promise<WitnessKey[]> {
    const secret = await read();
    if (secret) return witnessKeysOfSecret(secret);
    const created = await create();
    if (created) return created;
    const raced = await read();
    if (!raced)
      throw new GatehouseError("unavailable", `${where} was created by someone else and is gone again`);
    return witnessKeysOfSecret(raced);
  }

  return {
    async keys() {
      const keys = await currentKeys();
      const signing = signingKeyOf(keys)!;
      let key = imported.get(signing.kid);
      if (!key) {
        key = { kid: signing.kid, privateKey: privateKeyOf(signing.privateJwk) };
        imported.set(signing.kid, key);
      }
      return { signing: key, published: keys.map(publicPartOf) };
    },
  };
}
