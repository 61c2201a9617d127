/**
 * A grant issuer and verifier for tests of the grant hook, on real EdDSA JWTs (jose): the issuer signs
 * the claims of DESIGN §5 (`aud`, `jti`, `cap`, `idempotencyKey`, `argsDigest`, `exp` 60 s), the verifier
 * checks signature, audience, expiry, that the claims match the call and the RFC 8785 digest of the body,
 * and that a `jti` is used once. Not the production verifier (that one, with the operator's JWKS and
 * `kid` rotation, is jwks-verifier.ts); test files only.
 */
import { type CryptoKey, errors, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { type GrantedCall, GrantRefusal, type GrantVerifier } from "./grant.ts";
import { canonicalDigest } from "./schema-digest.ts";

/** Signs grants for calls and verifies them for one audience. */
export interface TestGrants {
  audience: string;
  /** A grant admitting exactly `call`; `overrides` replace claims to forge a wrong one. */
  issue(call: GrantedCall, overrides?: Record<string, unknown>): Promise<string>;
  verify: GrantVerifier;
}

/** A fresh key pair and an empty `jti` memory for `audience` (a ProviderInstance `ns/name`). */
export async function testGrants(audience: string): Promise<TestGrants> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA");
  const usedJtis = new Set<string>();
  let issued = 0;

  async function issue(call: GrantedCall, overrides: Record<string, unknown> = {}): Promise<string> {
    issued += 1;
    const claims = claimsOf(call);
    const now = Math.floor(Date.now() / 1000);
    const registered = { iss: "gatehouse", aud: audience, jti: `grant-${issued}`, iat: now, exp: now + 60 };
    return new SignJWT({ ...registered, ...claims, ...overrides })
      .setProtectedHeader({ alg: "EdDSA", kid: "test-1" })
      .sign(privateKey as CryptoKey);
  }

  async function verify(grant: string, call: GrantedCall): Promise<void> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(grant, publicKey as CryptoKey, {
        issuer: "gatehouse",
        audience,
        algorithms: ["EdDSA"],
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw new GrantRefusal("unauthenticated", "the grant expired");
      throw new GrantRefusal("forbidden", `the grant does not verify: ${(error as Error).message}`);
    }
    const expected = claimsOf(call);
    for (const [claim, value] of Object.entries(expected)) {
      if (payload[claim] !== value)
        throw new GrantRefusal("forbidden", `the grant's ${claim} does not match the call`);
    }
    const jti = String(payload.jti);
    if (usedJtis.has(jti)) throw new GrantRefusal("forbidden", `the grant ${jti} was already used`);
    usedJtis.add(jti);
  }

  return { audience, issue, verify };
}

/** The call-specific claims a grant for `call` carries (DESIGN §5). */
function claimsOf(call: GrantedCall): Record<string, string> {
  switch (call.route) {
    case "invoke":
      return {
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
