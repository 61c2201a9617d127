/**
 * Signed audit checkpoints (DESIGN §6, docs/audit.md "Checkpoint signatures"): what the witness signs,
 * how a signature is checked, and how the witness's Ed25519 keys are named. Pure apart from node:crypto.
 *
 * Signed bytes: the RFC 8785 JSON of
 *   { "type": "gatehouse.audit.checkpoint", "v": 1, "seq": 123, "hash": "<64 hex>", "atMicros": 1795…, "kid": "…" }
 * (`atMicros`: the checkpoint's time in integer microseconds, as the chain's records carry theirs).
 * Signature: Ed25519 (RFC 8032) over those bytes, base64url without padding. Key id: the RFC 7638
 * SHA-256 thumbprint of the public key's OKP JWK, so a kid names exactly one key.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import type { AuditCheckpoint } from "./audit.ts";
import { canonicalBytes, canonicalJson } from "./canonical.ts";

/** The `type` inside the signed bytes: a signature over a checkpoint never verifies as anything else. */
export const CHECKPOINT_SIGNATURE_TYPE = "gatehouse.audit.checkpoint";
/** Version of the signed encoding. */
export const CHECKPOINT_SIGNATURE_VERSION = 1;

/** A checkpoint as the witness keeps it; `kid` and `sig` are both absent on one written before signing. */
export interface WitnessCheckpoint extends AuditCheckpoint {
  kid?: string;
  /** base64url Ed25519 signature over {@link checkpointSigningBytes}. */
  sig?: string;
}

/** An Ed25519 public key as an OKP JWK (RFC 8037 §2). */
export interface Ed25519PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  /** base64url public key (32 bytes). */
  x: string;
}

/** An Ed25519 private key as an OKP JWK. */
export interface Ed25519PrivateJwk extends Ed25519PublicJwk {
  /** base64url private key (32 bytes). */
  d: string;
}

/** A public key of the witness, as published beside the checkpoints. */
export interface WitnessPublicKey {
  kid: string;
  /** When the key was made, RFC 3339. */
  createdAt: string;
  publicJwk: Ed25519PublicJwk;
}

/** A key of the witness as its Secret keeps it: a retired key keeps only its public part. */
export interface WitnessKey extends WitnessPublicKey {
  privateJwk?: Ed25519PrivateJwk;
}

/** The key the witness signs with. */
export interface WitnessSigningKey {
  kid: string;
  privateKey: KeyObject;
}

/** The bytes a checkpoint's signature covers (see the file comment). */
export function checkpointSigningBytes(checkpoint: AuditCheckpoint, kid: string): Uint8Array {
  return canonicalBytes({
    type: CHECKPOINT_SIGNATURE_TYPE,
    v: CHECKPOINT_SIGNATURE_VERSION,
    seq: checkpoint.seq,
    hash: checkpoint.headHash,
    atMicros: checkpoint.atMicros,
    kid,
  });
}

/** `checkpoint` with its `kid` and signature by `key`. */
export function signCheckpoint(checkpoint: AuditCheckpoint, key: WitnessSigningKey): WitnessCheckpoint {
  const sig = sign(null, checkpointSigningBytes(checkpoint, key.kid), key.privateKey).toString("base64url");
  return {
    seq: checkpoint.seq,
    headHash: checkpoint.headHash,
    atMicros: checkpoint.atMicros,
    kid: key.kid,
    sig,
  };
}

/** The RFC 7638 SHA-256 thumbprint of `jwk` (base64url): the required members in lexicographic order. */
export function kidOf(jwk: Ed25519PublicJwk): string {
  const members = canonicalJson({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash("sha256").update(members, "utf8").digest("base64url");
}

/** A fresh Ed25519 witness key made at `now`, its kid the thumbprint of its public key. */
export function newWitnessKey(now: Date): WitnessKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const publicJwk = publicKey.export({ format: "jwk" }) as unknown as Ed25519PublicJwk;
  const privateJwk = privateKey.export({ format: "jwk" }) as unknown as Ed25519PrivateJwk;
  const pub: Ed25519PublicJwk = { kty: "OKP", crv: "Ed25519", x: publicJwk.x };
  return {
    kid: kidOf(pub),
    createdAt: now.toISOString(),
    publicJwk: pub,
    privateJwk: { ...pub, d: privateJwk.d },
  };
}

/** The key `keys` signs with: the newest that still has its private part; undefined when none has. */
export function signingKeyOf(
  keys: WitnessKey[],
): (WitnessKey & { privateJwk: Ed25519PrivateJwk }) | undefined {
  const usable = keys.filter((k): k is WitnessKey & { privateJwk: Ed25519PrivateJwk } => !!k.privateJwk);
  return usable.sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt)).at(-1);
}

/** The node:crypto private key of `jwk`. Errors: node:crypto's, for a JWK that is not an Ed25519 key. */
export function privateKeyOf(jwk: Ed25519PrivateJwk): KeyObject {
  return createPrivateKey({ key: { ...jwk }, format: "jwk" });
}

/** The public part of `key`, as published (no private member). */
export function publicPartOf(key: WitnessKey): WitnessPublicKey {
  return { kid: key.kid, createdAt: key.createdAt, publicJwk: { ...key.publicJwk } };
}

// ---------------------------------------------------------------------------------------------------
// Checking

/**
 * How a kept checkpoint's signature checks against the published keys:
 * - `valid`: signed by a published key, and the signature verifies;
 * - `unsigned_legacy`: no `kid` or `sig`, at a seq below every signed checkpoint (written before signing);
 * - `unsigned_after_signing`: no signature, but signing had begun: a signed checkpoint of a lower seq is
 *   kept, the checkpoint is younger than the oldest published key (made at the first signed
 *   publication), or keys are published and no kept checkpoint is signed;
 * - `unknown_kid`: its kid is not a published key (or the published key's kid is not its thumbprint);
 * - `bad_signature`: the signature does not verify, or only one of `kid`, `sig` is present.
 */
export type SignatureStatus =
  | "valid"
  | "unsigned_legacy"
  | "unsigned_after_signing"
  | "unknown_kid"
  | "bad_signature";

/** One kept checkpoint's signature check. */
export interface SignatureCheck {
  seq: number;
  status: SignatureStatus;
  kid?: string;
  message: string;
}

/** True for the statuses that are not a failure (`valid`, `unsigned_legacy`). */
export function signatureAcceptable(status: SignatureStatus): boolean {
  return status === "valid" || status === "unsigned_legacy";
}

/**
 * Checks every checkpoint of `checkpoints` against `keys`; one check per checkpoint, ascending by seq.
 * `signingBegan` (default: `keys` is not empty) says the document published keys, so that keeping no
 * signed checkpoint at all means they were removed; the witness passes whether its document lists keys,
 * since the previous version's ConfigMap has none yet and is checked against the witness's own.
 */
export function checkSignatures(
  checkpoints: readonly WitnessCheckpoint[],
  keys: readonly WitnessPublicKey[],
  signingBegan = keys.length > 0,
): SignatureCheck[] {
  const sorted = [...checkpoints].sort((a, b) => a.seq - b.seq);
  const signedSeqs = sorted.filter((c) => c.kid !== undefined || c.sig !== undefined).map((c) => c.seq);
  const firstSigned = signedSeqs[0];
  const oldestKeyMicros = Math.min(...keys.map((k) => Date.parse(k.createdAt) * 1000));
  const byKid = new Map(keys.map((key) => [key.kid, key]));
  return sorted.map((checkpoint) => {
    const { seq, kid, sig } = checkpoint;
    if (kid === undefined && sig === undefined) {
      if (firstSigned !== undefined && seq > firstSigned) {
        return {
          seq,
          status: "unsigned_after_signing",
          message: `unsigned, yet checkpoint ${firstSigned} before it is signed: added without the witness's key`,
        };
      }
      if (checkpoint.atMicros >= oldestKeyMicros) {
        return {
          seq,
          status: "unsigned_after_signing",
          message: `unsigned, yet taken after the witness's first key was made (${new Date(oldestKeyMicros / 1000).toISOString()}): added without the witness's key`,
        };
      }
      if (firstSigned === undefined && signingBegan) {
        return {
          seq,
          status: "unsigned_after_signing",
          message: `unsigned, yet witness keys are published and no kept checkpoint is signed: signed checkpoints were removed`,
        };
      }
      return {
        seq,
        status: "unsigned_legacy",
        message: "unsigned (legacy): written before checkpoints were signed",
      };
    }
    if (kid === undefined || sig === undefined) {
      return {
        seq,
        status: "bad_signature",
        ...(kid !== undefined ? { kid } : {}),
        message: `carries ${kid === undefined ? "sig but no kid" : "kid but no sig"}: not a signature the witness writes`,
      };
    }
    const key = byKid.get(kid);
    if (!key) {
      return {
        seq,
        status: "unknown_kid",
        kid,
        message: `signed by kid ${kid}, which is not a published (or, with --trust-kid, a trusted) witness key`,
      };
    }
    if (kidOf(key.publicJwk) !== kid) {
      return {
        seq,
        status: "unknown_kid",
        kid,
        message: `the published key ${kid} is not named by its thumbprint (${kidOf(key.publicJwk)}): it is not the witness's`,
      };
    }
    if (!verifies(checkpoint, kid, sig, key.publicJwk)) {
      return { seq, status: "bad_signature", kid, message: `the signature does not verify with key ${kid}` };
    }
    return { seq, status: "valid", kid, message: `signed by key ${kid}` };
  });
}

/**
 * The published keys a person trusts, for {@link checkSignatures}: with `trusted` kids pinned (from an
 * earlier, trusted reading — trust on first use, as SSH host keys), only those keys; a key someone
 * added to the document then signs nothing that counts, and `signingBegan` holds, so removing every
 * signed checkpoint does not pass as legacy. Without pins, every published key. Pure.
 */
export function trustedWitnessKeys(
  keys: readonly WitnessPublicKey[],
  trusted: readonly string[] | undefined,
): { keys: WitnessPublicKey[]; signingBegan: boolean } {
  if (trusted === undefined || trusted.length === 0)
    return { keys: [...keys], signingBegan: keys.length > 0 };
  const pinned = new Set(trusted);
  return { keys: keys.filter((key) => pinned.has(key.kid)), signingBegan: true };
}

function verifies(checkpoint: AuditCheckpoint, kid: string, sig: string, jwk: Ed25519PublicJwk): boolean {
  try {
    const key = createPublicKey({ key: { ...jwk }, format: "jwk" });
    return verify(null, checkpointSigningBytes(checkpoint, kid), key, Buffer.from(sig, "base64url"));
  } catch {
    // A malformed key or signature verifies nothing.
    return false;
  }
}
