/**
 * The contract kit's stand-in for the operator's side of grants (DESIGN §5): an Ed25519 key, its JWKS
 * served over HTTP on loopback (`GET /v1/grants/jwks`, as the gateway serves it), and grants signed with
 * the claims of `grant-claims.ts` for exactly one call. The provider under test is started with the
 * environment the operator would give its container (`GATEHOUSE_JWKS_URL`, `GATEHOUSE_GRANT_AUDIENCE`),
 * so it verifies grants with the production verifier; the kit also forges grants — another key, another
 * audience, another call, expired — to check that the provider refuses them.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from "jose";
import type { GrantedCall } from "../grant.ts";
import { GRANT_ENVIRONMENT, GRANT_ISSUER } from "../grant-claims.ts";
import { canonicalDigest } from "../schema-digest.ts";

/** What a provider under test needs to verify the kit's grants, as the operator would give it. */
export interface ContractGrants {
  /** The provider's audience, `<namespace>/<name>` of a ProviderInstance. */
  audience: string;
  jwksUrl: string;
  /** `GATEHOUSE_JWKS_URL` and `GATEHOUSE_GRANT_AUDIENCE`: pass to `grantVerifierFromEnvironment`. */
  environment: Record<string, string>;
}

/** How to forge a grant (all default to a valid one). */
export interface GrantForgery {
  /** Sign with a key the JWKS does not hold, under the JWKS key's `kid`. */
  foreignKey?: boolean;
  /** Replace or add claims, e.g. `{aud: "other/provider"}` or an `exp` in the past. */
  claims?: Record<string, unknown>;
}

/** The kit's grant issuer: `issue` signs a grant admitting exactly `call` unless told to forge one. */
export interface KitGrantIssuer extends ContractGrants {
  issue(call: GrantedCall, forgery?: GrantForgery): Promise<string>;
  close(): Promise<void>;
}

const KID = "contract-kit-1";
const LIFETIME_SECONDS = 60;

/** The private claims a grant for `call` carries (grant-claims.ts). */
function claimsOf(call: GrantedCall): Record<string, string> {
  switch (call.route) {
    case "invoke":
      return {
        sub: call.request.subject.user,
        cap: call.request.capability,
        idempotencyKey: call.request.idempotencyKey,
        argsDigest: canonicalDigest(call.body),
      };
    case "status":
      return { idempotencyKey: call.idempotencyKey };
    case "target":
      return { target: `${call.kind}/${call.id}` };
  }
}

/** Generates the keys and starts the JWKS server on 127.0.0.1 (a free port). */
export async function startKitGrantIssuer(audience = "contract-kit/provider"): Promise<KitGrantIssuer> {
  const [signing, foreign] = await Promise.all([
    generateKeyPair("EdDSA", { crv: "Ed25519" }),
    generateKeyPair("EdDSA", { crv: "Ed25519" }),
  ]);
  const jwk = { ...(await exportJWK(signing.publicKey)), kid: KID, alg: "EdDSA", use: "sig" };
  const body = JSON.stringify({ keys: [jwk] });
  const server = createServer((request, response) => {
    if (request.url !== "/v1/grants/jwks") {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": "application/jwk-set+json" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/grants/jwks`;

  async function issue(call: GrantedCall, forgery: GrantForgery = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: GRANT_ISSUER,
      aud: audience,
      jti: `contract-kit.${randomUUID()}`,
      iat: now,
      exp: now + LIFETIME_SECONDS,
      ...claimsOf(call),
      ...forgery.claims,
    };
    const key = forgery.foreignKey ? foreign.privateKey : signing.privateKey;
    return new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: KID }).sign(key as CryptoKey);
  }

  return {
    audience,
    jwksUrl,
    environment: { [GRANT_ENVIRONMENT.jwksUrl]: jwksUrl, [GRANT_ENVIRONMENT.audience]: audience },
    issue,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
