// The provider contract-test kit: `@gatehouse/provider-sdk/contract-kit`, for providers' test files only
// (it registers vitest tests).
export {
  type ContractCheck,
  ContractCheckSkipped,
  contractChecks,
  GRANT_CHECK_NAMES,
} from "./contract-checks.ts";
export {
  type ContractExample,
  type ContractSession,
  openContractSession,
  type ProviderContractOptions,
  type RunningProvider,
} from "./contract-session.ts";
export { describeProviderContract } from "./describe-provider-contract.ts";
export { type ContractGrants, type GrantForgery, startKitGrantIssuer } from "./kit-grants.ts";
export { capabilityIdProblems, exampleCoverageProblems, manifestSchemaProblems } from "./manifest-checks.ts";
export { type ContractCheckResult, runProviderContract } from "./run-provider-contract.ts";
