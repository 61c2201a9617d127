/**
 * The grant's wire contract (DESIGN §5), defined once for the operator that signs grants and the
 * providers that verify them: the claims, the issuer, the audience of a ProviderInstance, the longest
 * lifetime, and the environment variables through which the operator tells a provider container where
 * its verification keys are. A grant is a JWT (RFC 7519) signed with EdDSA over Ed25519 (RFC 8037), its
 * key named by `kid` in the operator's JWKS (RFC 7517).
 *
 * Refinement of DESIGN §5 "jti (execution id)": `jti` is unique per HTTP call — the execution id plus a
 * random suffix — so that a retry of the same execution with the same idempotency key is not refused as
 * a replay; the execution is still named by `idempotencyKey`.
 */
import { z } from "zod";
import { CapabilityId } from "./contract.ts";

/** The `iss` of every grant. */
export const GRANT_ISSUER = "gatehouse";

/** The longest lifetime of a grant, `exp - iat`, in seconds (DESIGN §5: `exp` ≤ 60 s). */
export const MAX_GRANT_LIFETIME_SECONDS = 60;

/** Environment variables the operator sets on every provider container (Deployment and Sidecar). */
export const GRANT_ENVIRONMENT = {
  /** URL of the operator's JWKS (`<gateway>/v1/grants/jwks`). */
  jwksUrl: "GATEHOUSE_JWKS_URL",
  /** This provider's audience, `<namespace>/<name>` of its ProviderInstance. */
  audience: "GATEHOUSE_GRANT_AUDIENCE",
  /**
   * A Sidecar provider's session: the uid of the AgentSession whose agent pod it runs in. Set on
   * sidecars only; with it, a grant must name that session (`sid`).
   */
  session: "GATEHOUSE_GRANT_SESSION",
} as const;

/** The `aud` of grants for a ProviderInstance: `<namespace>/<name>`. */
export function grantAudience(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** sha256 hex, as `canonicalDigest` produces it. */
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * The claims of a grant. Registered claims (RFC 7519 §4.1): `iss`, `aud` (one string), `sub` (the
 * subject user; absent on status and target queries, which have none), `jti`, `iat` and `exp` (seconds
 * since the epoch). Private claims, by route:
 * - invoke: `cap` (capability id), `idempotencyKey`, `argsDigest` (RFC 8785 sha256 of the whole JSON
 *   body sent, `canonicalDigest`);
 * - status (`GET /v1/executions/{idempotencyKey}`): `idempotencyKey` only;
 * - target (`GET /v1/targets/{kind}/{id}`): `target` = `<kind>/<id>` only.
 * And on every route `sid`, the uid of the AgentSession the call is for (the session id, as OpenID
 * Connect names the claim): a Sidecar provider serves one session's pod, and every session's sidecar
 * of a ProviderInstance shares its audience, so only `sid` tells them apart.
 * Unknown claims are allowed and ignored.
 */
export const GrantClaims = z.object({
  iss: z.string(),
  aud: z.string(),
  sub: z.string().optional(),
  jti: z.string().min(1).max(256),
  iat: z.number().int(),
  exp: z.number().int(),
  cap: CapabilityId.optional(),
  idempotencyKey: z.string().min(1).max(128).optional(),
  argsDigest: Sha256Hex.optional(),
  target: z.string().min(1).max(320).optional(),
  sid: z.string().min(1).max(128).optional(),
});
export type GrantClaims = z.infer<typeof GrantClaims>;

/** Which route a grant's claims admit: a body digest means invoke, a target means a target query, else status. */
export function grantRouteOf(
  claims: Pick<GrantClaims, "argsDigest" | "target">,
): "invoke" | "status" | "target" {
  if (claims.argsDigest !== undefined) return "invoke";
  if (claims.target !== undefined) return "target";
  return "status";
}
