/**
 * The schema digest of a capability (DESIGN §2): sha256 hex of the RFC 8785 form of
 * `{inputSchema, outputSchema}`. An Approval records it; dispatch refuses (Stale) when it changed.
 */
import { canonicalDigest } from "./canonical.ts";

/** Digest of a capability offer's two schemas. */
export function schemaDigestOf(offer: { inputSchema: unknown; outputSchema: unknown }): string {
  return canonicalDigest({ inputSchema: offer.inputSchema, outputSchema: offer.outputSchema });
}
