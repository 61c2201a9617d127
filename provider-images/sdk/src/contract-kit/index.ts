// The provider contract-test kit: `@gatehouse/provider-sdk/contract-kit`, for providers' test files only
// (it registers vitest tests).
export {
  type ContractExample,
  describeProviderContract,
  type ProviderContractOptions,
  type RunningProvider,
} from "./describe-provider-contract.ts";
export { capabilityIdProblems, exampleCoverageProblems, manifestSchemaProblems } from "./manifest-checks.ts";
