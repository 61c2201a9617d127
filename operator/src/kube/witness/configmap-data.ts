/**
 * The data of the audit witness's ConfigMap `gatehouse-audit-checkpoints` (DESIGN §6): its keys and
 * how checkpoints and public keys are encoded there, parsed strictly. Pure (no API client), so that
 * `gatehouse-audit verify --witness-file` reads an archived copy without loading one;
 * `configmap.ts` reads and writes the ConfigMap itself.
 *
 * Shape (docs/audit.md "The witness's ConfigMap"):
 *   data["checkpoints.json"]: a JSON array, ascending by seq, one entry per line, of
 *     { "seq": 123, "hash": "<64 hex>", "at": "2026-11-29T10:00:00.123456Z", "kid": "<thumbprint>", "sig": "<base64url>" }
 *     (`at`: RFC 3339 with microseconds, as metav1.MicroTime; `kid` and `sig` absent on entries written
 *     before checkpoints were signed, which are still read)
 *   data["keys.json"]: a JSON array of { "kid", "createdAt", "publicJwk": {"kty":"OKP","crv":"Ed25519","x"} },
 *     every key of the witness, retired ones included.
 */
import { z } from "zod";
import { CHECKPOINTS_CONFIGMAP } from "../../api/rbac.ts";
import { GatehouseError } from "../../core/errors.ts";
import type { WitnessDocument } from "../../core/witness.ts";
import type { WitnessCheckpoint, WitnessPublicKey } from "../../core/witness-signature.ts";

export { CHECKPOINTS_CONFIGMAP };
/** The data key holding the checkpoints. */
export const CHECKPOINTS_KEY = "checkpoints.json";
/** The data key holding the witness's public keys. */
export const WITNESS_KEYS_KEY = "keys.json";

const MICRO_TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})(\d{3})Z$/;
const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/, "base64url");

/** One checkpoint as the ConfigMap stores it (`kid` and `sig` absent on a legacy entry). */
const StoredCheckpoint = z
  .object({
    seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    hash: z.string().regex(/^[0-9a-f]{64}$/, "64 lowercase hex digits"),
    at: z.string().regex(MICRO_TIME, "RFC 3339 UTC with six fractional digits"),
    kid: z.string().min(1).max(128).optional(),
    sig: Base64Url.max(128).optional(),
  })
  .strict();
const StoredCheckpoints = z.array(StoredCheckpoint);

/** One published key. */
const StoredPublicKey = z
  .object({
    kid: z.string().min(1).max(128),
    createdAt: z.iso.datetime(),
    publicJwk: z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: Base64Url }).strict(),
  })
  .strict();
const StoredPublicKeys = z.array(StoredPublicKey);

/** `micros` (µs since the epoch) as RFC 3339 UTC with six fractional digits, e.g. `…T10:00:00.123456Z`. */
export function microTimeOf(micros: number): string {
  const millis = Math.floor(micros / 1000);
  return `${new Date(millis).toISOString().slice(0, 23)}${String(micros - millis * 1000).padStart(3, "0")}Z`;
}

/** The inverse of {@link microTimeOf}. Errors: `invalid_arguments` for any other form. */
export function microsOf(microTime: string): number {
  const match = MICRO_TIME.exec(microTime);
  const millis = match ? Date.parse(`${match[1]}Z`) : Number.NaN;
  if (!match || Number.isNaN(millis)) {
    throw new GatehouseError("invalid_arguments", `${microTime} is not RFC 3339 UTC with microseconds`);
  }
  return millis * 1000 + Number(match[2]);
}

/**
 * Parses the ConfigMap's `checkpoints.json` (absent → none). Errors: `GatehouseError("conflict")`
 * naming the ConfigMap when the text is not a list of checkpoints — someone edited it by hand.
 */
export function decodeCheckpoints(text: string | undefined, where: string): WitnessCheckpoint[] {
  return parsed(
    text,
    where,
    CHECKPOINTS_KEY,
    StoredCheckpoints,
    "{seq, hash, at[, kid, sig]} checkpoints",
  ).map((c) => ({
    seq: c.seq,
    headHash: c.hash,
    atMicros: microsOf(c.at),
    ...(c.kid !== undefined ? { kid: c.kid } : {}),
    ...(c.sig !== undefined ? { sig: c.sig } : {}),
  }));
}

/** Parses the ConfigMap's `keys.json` (absent → none). Errors: as {@link decodeCheckpoints}. */
export function decodeWitnessKeys(text: string | undefined, where: string): WitnessPublicKey[] {
  return parsed(text, where, WITNESS_KEYS_KEY, StoredPublicKeys, "{kid, createdAt, publicJwk} Ed25519 keys");
}

function parsed<T>(
  text: string | undefined,
  where: string,
  key: string,
  schema: z.ZodType<T[]>,
  what: string,
): T[] {
  if (text === undefined || text.trim() === "") return [];
  try {
    return schema.parse(JSON.parse(text));
  } catch (error) {
    throw new GatehouseError(
      "conflict",
      `${where} ${key} is not a JSON list of ${what}: ${error instanceof z.ZodError ? z.prettifyError(error) : String(error)}`,
      { cause: error },
    );
  }
}

/** The witness document of a ConfigMap's data. Errors: as {@link decodeCheckpoints}. */
export function decodeWitnessDocument(
  data: Record<string, string> | undefined,
  where: string,
): WitnessDocument {
  return {
    checkpoints: decodeCheckpoints(data?.[CHECKPOINTS_KEY], where),
    keys: decodeWitnessKeys(data?.[WITNESS_KEYS_KEY], where),
  };
}

/** The `checkpoints.json` text of `checkpoints`: one checkpoint per line, ascending by seq. */
export function encodeCheckpoints(checkpoints: readonly WitnessCheckpoint[]): string {
  const lines = [...checkpoints]
    .sort((a, b) => a.seq - b.seq)
    .map((c) =>
      JSON.stringify({
        seq: c.seq,
        hash: c.headHash,
        at: microTimeOf(c.atMicros),
        ...(c.kid !== undefined ? { kid: c.kid } : {}),
        ...(c.sig !== undefined ? { sig: c.sig } : {}),
      }),
    );
  return `[\n${lines.join(",\n")}\n]\n`;
}

/** The `keys.json` text of `keys`: one key per line, oldest first. */
export function encodeWitnessKeys(keys: readonly WitnessPublicKey[]): string {
  const lines = [...keys]
    .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
    .map((k) => JSON.stringify({ kid: k.kid, createdAt: k.createdAt, publicJwk: k.publicJwk }));
  return `[\n${lines.join(",\n")}\n]\n`;
}
