// The kit run against a small SDK provider that verifies the kit's grants with the production verifier.
import { grantVerifierFromEnvironment } from "../jwks-verifier.ts";
import { counterExamples, startCounterProvider } from "./counter-fixture.ts";
import { describeProviderContract } from "./describe-provider-contract.ts";

describeProviderContract({
  name: "a demo provider that verifies grants",
  start: (grants) => startCounterProvider(grantVerifierFromEnvironment(grants.environment)),
  examples: counterExamples,
});
