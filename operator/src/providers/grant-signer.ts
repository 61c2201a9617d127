/**
 * Signs the grants Core's provider calls carry (DESIGN §5): JWTs (RFC 7519) signed with EdDSA over
 * Ed25519 (RFC 8037), header `{alg: "EdDSA", kid}` naming the key in the operator's JWKS. Claims are the
 * SDK's `GrantClaims`: `iss` gatehouse, `aud` the ProviderInstance `<namespace>/<name>`, `iat`, `exp`
 * (at most 60 s later), and a `jti` unique per HTTP call — the execution id plus a random suffix, so a
 * retry of one execution with the same idempotency key is a new grant, not a replay (the refinement of
 * DESIGN §5 "jti (execution id)" documented in the SDK's grant-claims.ts). Per route:
 * - invoke: `sub` (the subject user), `cap`, `idempotencyKey`, and `argsDigest`, the RFC 8785 sha256 of
 *   the exact JSON body sent — the body is serialized here, and the digest taken of that text parsed
 *   back, i.e. of what the provider will parse;
 * - status: `idempotencyKey`; target: `target` = `<kind>/<id>`. Neither has a body digest or a subject.
 * Every grant of a call for a session names it (`sid`, the AgentSession uid): a Sidecar provider admits
 * only its own session's grants, since every session's sidecar of a ProviderInstance shares the audience.
 */
import { randomBytes } from "node:crypto";
import {
  canonicalDigest,
  GRANT_ISSUER,
  type GrantClaims,
  grantAudience,
  type InvokeRequest,
  MAX_GRANT_LIFETIME_SECONDS,
} from "@gatehouse/provider-sdk";
import { SignJWT } from "jose";
import type { ProviderRef } from "../core/ports.ts";
import type { SigningKey } from "./grant-keys.ts";

/**
 * Signs grants; every method throws when no grant can be signed (the caller then sends nothing).
 * `sessionUid`, the session the call is for, becomes the grant's `sid`.
 */
export interface GrantSigner {
  /** The JSON body of `POST /v1/invoke` for `request` and the grant for exactly that body. */
  signInvoke(
    provider: ProviderRef,
    request: InvokeRequest,
    sessionUid?: string,
  ): Promise<{ body: string; grant: string }>;
  /** A grant for `GET /v1/executions/{idempotencyKey}`. */
  signStatus(provider: ProviderRef, idempotencyKey: string, sessionUid?: string): Promise<string>;
  /** A grant for `GET /v1/targets/{kind}/{id}`. */
  signTarget(provider: ProviderRef, kind: string, id: string, sessionUid?: string): Promise<string>;
}

/** Options of {@link grantSigner}. */
export interface GrantSignerOptions {
  /** The key to sign with now (providers/grant-keys.ts `GrantKeyRing.signingKey`). */
  signingKey: () => Promise<SigningKey>;
  /** `exp - iat` in seconds, 1 … 60 (default 60). */
  ttlSeconds?: number;
  /** Seconds since the epoch (default the clock). */
  nowSeconds?: () => number;
}

/** A `jti` part no two calls share: 96 random bits, base64url. */
function randomSuffix(): string {
  return randomBytes(12).toString("base64url");
}

/** Builds the signer. Throws a RangeError for a `ttlSeconds` outside 1 … 60. */
export function grantSigner(options: GrantSignerOptions): GrantSigner {
  const ttl = options.ttlSeconds ?? MAX_GRANT_LIFETIME_SECONDS;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_GRANT_LIFETIME_SECONDS) {
    throw new RangeError(`a grant lives 1 to ${MAX_GRANT_LIFETIME_SECONDS} s, not ${ttl}`);
  }
  const nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));

  async function sign(
    provider: ProviderRef,
    jtiPrefix: string,
    claims: Omit<GrantClaims, "iss" | "aud" | "jti" | "iat" | "exp" | "sid">,
    sessionUid: string | undefined,
  ) {
    const { kid, privateKey } = await options.signingKey();
    const iat = nowSeconds();
    const payload: GrantClaims = {
      iss: GRANT_ISSUER,
      aud: grantAudience(provider.namespace, provider.name),
      jti: `${jtiPrefix}.${randomSuffix()}`,
      iat,
      exp: iat + ttl,
      ...claims,
      ...(sessionUid !== undefined ? { sid: sessionUid } : {}),
    };
    return new SignJWT(payload).setProtectedHeader({ alg: "EdDSA", kid }).sign(privateKey);
  }

  return {
    async signInvoke(provider, request, sessionUid) {
      const body = JSON.stringify(request);
      const claims = {
        sub: request.subject.user,
        cap: request.capability,
        idempotencyKey: request.idempotencyKey,
        argsDigest: canonicalDigest(JSON.parse(body)),
      };
      return { body, grant: await sign(provider, request.executionId, claims, sessionUid) };
    },
    signStatus: (provider, idempotencyKey, sessionUid) =>
      sign(provider, `status.${idempotencyKey}`, { idempotencyKey }, sessionUid),
    signTarget: (provider, kind, id, sessionUid) =>
      sign(provider, "target", { target: `${kind}/${id}` }, sessionUid),
  };
}
