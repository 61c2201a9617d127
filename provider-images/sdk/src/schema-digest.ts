/**
 * The digest that pins what a capability's arguments and results mean: sha256 (hex) of the RFC 8785
 * canonical JSON of `{inputSchema, outputSchema}`. Descriptions, mode and idempotency are left out on
 * purpose — changing them must not make a pending Approval stale; an effect change is caught separately
 * (`EffectChanged`, DESIGN §2).
 */
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import type { CapabilityOffer } from "./contract.ts";

/** sha256 hex of RFC 8785 canonical JSON of any JSON value (throws on lone surrogates, NaN, Infinity). */
export function canonicalDigest(value: unknown): string {
  const canonical = canonicalize(value);
  if (canonical === undefined) throw new TypeError("value has no JSON representation");
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/** The schema digest of one offered capability (see the file comment for what it covers). */
export function schemaDigest(offer: Pick<CapabilityOffer, "inputSchema" | "outputSchema">): string {
  return canonicalDigest({ inputSchema: offer.inputSchema, outputSchema: offer.outputSchema });
}
