/**
 * The production `GrantVerifier` (DESIGN §5): verifies the operator's grants against its JWKS.
 *
 * For every invoke, status and target call it checks, in order: the JWS signature (EdDSA/Ed25519,
 * RFC 8037) with the key the header's `kid` names in the remote JWKS (RFC 7517; a `kid` the cached set
 * lacks refetches it, so a rotation is learnt within `jwksCooldownSeconds`); `iss`, `aud` (this
 * ProviderInstance), `exp` and `iat` present and `exp` not passed (RFC 7519 §4.1.4), `exp - iat` ≤ the
 * maximum lifetime; that the grant is for this route; the call's claims (`cap`, `idempotencyKey`,
 * `sub`, `argsDigest` = `canonicalDigest` of the body as received, or `target`); for a Sidecar
 * provider (given `session`), that `sid` names its session — every session's sidecar of one
 * ProviderInstance shares the audience, so a grant for another session's call is refused; and last
 * that its `jti` was not used before. A `jti` is remembered only once the grant admitted a call, so a forged
 * request cannot burn someone else's grant.
 *
 * Refusals are `GrantRefusal`s: `unauthenticated` (401) for a grant that is malformed or expired,
 * `forbidden` (403) for one that does not admit the call (bad signature, unknown key, other audience,
 * other call, reused). The `jti` memory is per process: with several provider replicas a grant could
 * be replayed once per replica — within its ≤ 60 s, to the same call, whose idempotency key the
 * provider deduplicates anyway.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import { z } from "zod";
import { type HowToSet, parseEnvironment } from "./environment-problems.ts";
import type { GrantedCall, GrantVerifier } from "./grant.ts";
import { GrantRefusal } from "./grant.ts";
import {
  GRANT_ENVIRONMENT,
  GRANT_ISSUER,
  GrantClaims,
  grantRouteOf,
  MAX_GRANT_LIFETIME_SECONDS,
} from "./grant-claims.ts";
import { canonicalDigest } from "./schema-digest.ts";

/** Options of {@link jwksGrantVerifier}. Durations in seconds. */
export interface JwksGrantVerifierOptions {
  /** The operator's JWKS, e.g. `http://gatehouse.gatehouse-system:8443/v1/grants/jwks`. */
  jwksUrl: string | URL;
  /** This provider's audience, `<namespace>/<name>` of its ProviderInstance. */
  audience: string;
  /** A Sidecar provider's session uid: grants must carry it as `sid`. Unset for a Shared provider. */
  session?: string;
  /** Default `gatehouse`. */
  issuer?: string;
  /** Longest accepted `exp - iat` (default 60). */
  maxLifetimeSeconds?: number;
  /** Clock skew accepted on `exp`, `nbf` (default 5). */
  clockToleranceSeconds?: number;
  /** After a fetch, how long an unknown `kid` waits before it may trigger another (default 5). */
  jwksCooldownSeconds?: number;
  /** How long a fetched JWKS is used before it is fetched again (default 60). */
  jwksCacheMaxAgeSeconds?: number;
  /** Most `jti`s remembered at once; when full of unexpired grants, new ones are refused (default 100 000). */
  maxRememberedGrants?: number;
}

/**
 * Remembers used `jti`s until their grant expires. `Map` keeps insertion order and grants are issued
 * with near-equal lifetimes, so expired entries collect at the front and are dropped from there; a
 * full sweep runs only when the bound is reached.
 */
function jtiMemory(limit: number) {
  const expiries = new Map<string, number>();
  const dropExpired = (nowSeconds: number, everywhere: boolean) => {
    for (const [jti, forgetAt] of expiries) {
      if (forgetAt <= nowSeconds) expiries.delete(jti);
      else if (!everywhere) return;
    }
  };
  return {
    /** Records `jti` until `forgetAt` (seconds); `"reused"` if it is remembered, `"full"` if no room. */
    remember(jti: string, forgetAt: number, nowSeconds: number): "remembered" | "reused" | "full" {
      dropExpired(nowSeconds, false);
      if (expiries.has(jti)) return "reused";
      if (expiries.size >= limit) {
        dropExpired(nowSeconds, true);
        if (expiries.size >= limit) return "full";
      }
      expiries.set(jti, forgetAt);
      return "remembered";
    },
  };
}

/** The refusal for a failed `jwtVerify`, with a message naming what failed. */
function refusalOfJose(error: unknown, jwksUrl: string, audience: string): GrantRefusal {
  const cause = { cause: error };
  if (error instanceof errors.JWTExpired) {
    return new GrantRefusal("unauthenticated", `the grant expired (exp ${String(error.payload.exp)})`, cause);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new GrantRefusal("unauthenticated", `the grant is not a valid JWT: ${error.message}`, cause);
  }
  if (
    error instanceof errors.JWTClaimValidationFailed &&
    error.claim === "aud" &&
    error.reason !== "missing"
  ) {
    return new GrantRefusal(
      "forbidden",
      `the grant is for ${JSON.stringify(error.payload.aud)}, not for this provider (${audience})`,
      cause,
    );
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    const value = JSON.stringify(error.payload[error.claim] ?? null);
    return new GrantRefusal(
      "forbidden",
      `the grant's ${error.claim} claim is ${error.reason === "missing" ? "missing" : `${value}: ${error.message}`}`,
      cause,
    );
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return new GrantRefusal(
      "forbidden",
      `the grant's key (kid) is not in the operator's JWKS at ${jwksUrl}`,
      cause,
    );
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new GrantRefusal(
      "forbidden",
      "the grant's signature does not verify with the operator's key",
      cause,
    );
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return new GrantRefusal("forbidden", "the grant is not signed with EdDSA", cause);
  }
  if (
    error instanceof errors.JWKSTimeout ||
    error instanceof TypeError ||
    error instanceof errors.JOSEError
  ) {
    // Includes a JWKS that cannot be fetched or parsed: refused (fail closed), the message says why.
    return new GrantRefusal(
      "forbidden",
      `the grant could not be checked against the operator's JWKS at ${jwksUrl}: ${(error as Error).message}`,
      cause,
    );
  }
  return new GrantRefusal("forbidden", `the grant could not be verified: ${String(error)}`, cause);
}

/** The claims `call` requires, each with the value it must have. */
function expectedClaims(call: GrantedCall): Record<string, string> {
  switch (call.route) {
    case "invoke":
      return {
        cap: call.request.capability,
        idempotencyKey: call.request.idempotencyKey,
        sub: call.request.subject.user,
      };
    case "status":
      return { idempotencyKey: call.idempotencyKey };
    case "target":
      return { target: `${call.kind}/${call.id}` };
  }
}

/** Throws a `GrantRefusal` unless `claims` admit exactly `call`. */
function checkCall(claims: GrantClaims, call: GrantedCall): void {
  const route = grantRouteOf(claims);
  if (route !== call.route) {
    throw new GrantRefusal(
      "forbidden",
      `the grant is for the ${route} route, not for this ${call.route} call`,
    );
  }
  for (const [claim, value] of Object.entries(expectedClaims(call))) {
    const granted = claims[claim as keyof GrantClaims];
    if (granted !== value) {
      throw new GrantRefusal(
        "forbidden",
        `the grant's ${claim} is ${JSON.stringify(granted ?? null)}, but the call's is ${JSON.stringify(value)}`,
      );
    }
  }
  if (call.route === "invoke") {
    let received: string;
    try {
      received = canonicalDigest(call.body);
    } catch (error) {
      throw new GrantRefusal(
        "forbidden",
        "the body has no RFC 8785 canonical form to compare with argsDigest",
        {
          cause: error,
        },
      );
    }
    if (received !== claims.argsDigest) {
      throw new GrantRefusal(
        "forbidden",
        `the body's RFC 8785 digest ${received} differs from the grant's argsDigest ${claims.argsDigest}: the body was changed after the grant was signed`,
      );
    }
  }
}

/**
 * A `GrantVerifier` for `serveProvider({verifyGrant})` over the operator's remote JWKS (jose
 * `createRemoteJWKSet` + `jwtVerify`, algorithms `["EdDSA"]`). See the file comment for the checks and
 * refusals. Throws a `TypeError` at once for an invalid `jwksUrl`; fetches the JWKS on first use.
 */
export function jwksGrantVerifier(options: JwksGrantVerifierOptions): GrantVerifier {
  const jwksUrl = new URL(options.jwksUrl);
  const issuer = options.issuer ?? GRANT_ISSUER;
  const maxLifetime = options.maxLifetimeSeconds ?? MAX_GRANT_LIFETIME_SECONDS;
  const tolerance = options.clockToleranceSeconds ?? 5;
  const keys = createRemoteJWKSet(jwksUrl, {
    cooldownDuration: (options.jwksCooldownSeconds ?? 5) * 1000,
    cacheMaxAge: (options.jwksCacheMaxAgeSeconds ?? 60) * 1000,
  });
  const used = jtiMemory(options.maxRememberedGrants ?? 100_000);

  return async (grant, call) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(grant, keys, {
        algorithms: ["EdDSA"],
        issuer,
        audience: options.audience,
        requiredClaims: ["exp", "iat", "jti"],
        clockTolerance: tolerance,
      }));
    } catch (error) {
      throw refusalOfJose(error, jwksUrl.href, options.audience);
    }
    const parsed = GrantClaims.safeParse(payload);
    if (!parsed.success) {
      const fields = parsed.error.issues.map((issue) => issue.path.join(".") || "(claims)").join(", ");
      throw new GrantRefusal("forbidden", `the grant's claims are malformed: ${fields}`);
    }
    const claims = parsed.data;
    if (claims.exp - claims.iat > maxLifetime) {
      throw new GrantRefusal(
        "forbidden",
        `the grant lives ${claims.exp - claims.iat} s (exp - iat), more than the ${maxLifetime} s a grant may`,
      );
    }
    checkCall(claims, call);
    if (options.session !== undefined && claims.sid !== options.session) {
      throw new GrantRefusal(
        "forbidden",
        `the grant is for session ${JSON.stringify(claims.sid ?? null)}, not for this sidecar's session ${options.session}`,
      );
    }
    const nowSeconds = Math.floor(Date.now() / 1000);
    switch (used.remember(claims.jti, claims.exp + tolerance, nowSeconds)) {
      case "reused":
        throw new GrantRefusal(
          "forbidden",
          `the grant ${claims.jti} was already used; every call needs a new grant`,
        );
      case "full":
        throw new GrantRefusal(
          "forbidden",
          "too many unexpired grants to remember; refusing rather than risk a replay (retry shortly)",
        );
      case "remembered":
        return;
    }
  };
}

/**
 * The grant verifier's environment, which the ProviderInstance controller sets on every provider
 * container; its `.describe()` texts are the providers' `--help` lines for these variables.
 */
export const GrantEnvironment = z.object({
  [GRANT_ENVIRONMENT.jwksUrl]: z
    .url({ error: "must be the operator's JWKS URL (http(s)://…/v1/grants/jwks)" })
    .describe("the operator's JWKS URL, http(s)://…/v1/grants/jwks (required; set by the operator)"),
  [GRANT_ENVIRONMENT.audience]: z
    .string({ error: "must be this provider's audience <namespace>/<name>" })
    .regex(/^[^/\s]+\/[^/\s]+$/, { error: "must be this provider's audience <namespace>/<name>" })
    .describe("this provider's grant audience <namespace>/<name> (required; set by the operator)"),
  [GRANT_ENVIRONMENT.session]: z
    .string()
    .min(1, { error: "must be the session uid of the agent pod this sidecar runs in" })
    .optional()
    .describe("a Sidecar provider's session uid (set by the operator on sidecars only)"),
});

/** The grant variables are the operator's to set (the ProviderInstance controller), never the user's. */
const setByTheOperator: HowToSet = () =>
  "the operator sets it on every provider container it runs (DESIGN §5): run this provider through a ProviderInstance";

/**
 * The verifier configured by the operator through the container's environment:
 * `GATEHOUSE_JWKS_URL` and `GATEHOUSE_GRANT_AUDIENCE` (set by the ProviderInstance controller on every
 * provider container), and on a sidecar `GATEHOUSE_GRANT_SESSION` (set by the AgentSession controller). Throws an `EnvironmentError` with one line per missing or bad variable
 * (`environment-problems.ts`), so a provider started without them refuses to start rather than accept
 * any caller.
 */
export function grantVerifierFromEnvironment(
  env: Record<string, string | undefined>,
  options: Omit<JwksGrantVerifierOptions, "jwksUrl" | "audience" | "session"> = {},
): GrantVerifier {
  const parsed = parseEnvironment(GrantEnvironment, env, setByTheOperator);
  return jwksGrantVerifier({
    ...options,
    jwksUrl: parsed[GRANT_ENVIRONMENT.jwksUrl],
    audience: parsed[GRANT_ENVIRONMENT.audience],
    ...(parsed[GRANT_ENVIRONMENT.session] !== undefined
      ? { session: parsed[GRANT_ENVIRONMENT.session] }
      : {}),
  });
}
