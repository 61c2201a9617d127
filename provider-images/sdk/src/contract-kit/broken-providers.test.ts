// The kit cannot pass for a provider that does not verify grants: run its checks programmatically
// against deliberately broken providers and assert exactly which checks fail.
import { createRemoteJWKSet, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import type { GrantVerifier } from "../grant.ts";
import { GrantRefusal } from "../grant.ts";
import { grantVerifierFromEnvironment } from "../jwks-verifier.ts";
import { GRANT_CHECK_NAMES } from "./contract-checks.ts";
import { counterExamples, startCounterProvider } from "./counter-fixture.ts";
import type { ContractGrants } from "./kit-grants.ts";
import { type ContractCheckResult, runProviderContract } from "./run-provider-contract.ts";

/** Runs the kit against the counter provider with the verifier `verifierFor` builds from the kit's grants. */
function runAgainst(verifierFor: (grants: ContractGrants) => GrantVerifier | undefined) {
  return runProviderContract({
    name: "counter",
    start: (grants) => startCounterProvider(verifierFor(grants)),
    examples: counterExamples,
  });
}

const failed = (results: ContractCheckResult[]) =>
  results.filter((result) => result.outcome === "failed").map((result) => result.name);

/** Checks the signature, issuer and audience with the operator's JWKS, and nothing about the call. */
function signatureOnly(grants: ContractGrants): GrantVerifier {
  const keys = createRemoteJWKSet(new URL(grants.jwksUrl));
  return async (grant) => {
    try {
      await jwtVerify(grant, keys, { algorithms: ["EdDSA"], issuer: "gatehouse", audience: grants.audience });
    } catch (error) {
      throw new GrantRefusal("forbidden", `the grant does not verify: ${(error as Error).message}`);
    }
  };
}

describe("the contract kit against broken providers", () => {
  it("passes a provider that verifies grants with the production verifier", async () => {
    const results = await runAgainst((grants) => grantVerifierFromEnvironment(grants.environment));
    expect(failed(results)).toEqual([]);
    expect(results.filter((result) => result.outcome === "passed").length).toBeGreaterThan(20);
  });

  it("fails every grant check of a provider that skips grant verification", async () => {
    const results = await runAgainst(() => undefined);
    expect(failed(results)).toEqual(Object.values(GRANT_CHECK_NAMES));
  });

  it("fails a provider that takes any bearer token as a grant on every forged grant", async () => {
    const results = await runAgainst(() => async () => {});
    const { missing: _passes, ...forged } = GRANT_CHECK_NAMES;
    expect(failed(results)).toEqual(Object.values(forged));
  });

  it("fails a provider that checks the signature but not the call or the jti", async () => {
    const results = await runAgainst(signatureOnly);
    expect(failed(results)).toEqual([
      GRANT_CHECK_NAMES.otherCall,
      GRANT_CHECK_NAMES.otherKey,
      GRANT_CHECK_NAMES.replay,
    ]);
  });

  it("names what went wrong: a forged grant was answered 200", async () => {
    const results = await runAgainst(() => async () => {});
    const audience = results.find((result) => result.name === GRANT_CHECK_NAMES.audience);
    expect(audience?.message).toMatch(/answered 200/);
  });
});
