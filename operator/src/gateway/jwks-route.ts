/**
 * `GET /v1/grants/jwks`: the public keys providers verify grants with (DESIGN §5), as a JWK Set
 * (RFC 7517 §5; Ed25519 keys as OKP JWKs, RFC 8037) with `content-type: application/jwk-set+json`
 * (RFC 7517 §8.5.1). Unauthenticated — public keys are no secret and providers hold no token — so it
 * is registered outside the gateway's TokenReview-guarded /v1 plugin. Every replica answers from its
 * own copy of the gateway's key Secret (providers/grant-keys.ts) plus the controller's published public keys
 * (providers/grant-public-keys.ts `combinedJwks`), each re-read every 30 s by default; the short max-age
 * keeps caches in front of it no staler than that.
 */
import type { FastifyInstance } from "fastify";
import type { JSONWebKeySet } from "jose";
import { GRANT_JWKS_PATH } from "../api/well-known.ts";

/** Options of {@link jwksRoute}: where the current key set comes from. */
export interface JwksRouteOptions {
  jwks: () => JSONWebKeySet;
}

/** Seconds a client or proxy may cache the key set. */
const MAX_AGE_SECONDS = 30;

/** A fastify plugin serving {@link GRANT_JWKS_PATH}; register it on the root app, not under the /v1 auth hook. */
export async function jwksRoute(app: FastifyInstance, options: JwksRouteOptions): Promise<void> {
  app.get(GRANT_JWKS_PATH, async (_request, reply) =>
    reply
      .header("content-type", "application/jwk-set+json")
      .header("cache-control", `public, max-age=${MAX_AGE_SECONDS}`)
      // A Buffer, so fastify adds no charset parameter (RFC 7517 §8.5.1 defines none).
      .send(Buffer.from(JSON.stringify(options.jwks()))),
  );
}
