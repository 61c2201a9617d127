// The contract and pure helpers only: Core imports this entry, so nothing here may pull in an HTTP library.
// The server helper is the separate entry `@gatehouse/provider-sdk/server`. The grant verifier is here
// (jose only; its remote JWKS uses the global fetch), so a provider's main can build it from its environment.
export * from "./contract.ts";
export {
  configureOrExit,
  EnvironmentError,
  environmentProblems,
  type HowToSet,
  parseEnvironment,
  setOnProviderInstance,
} from "./environment-problems.ts";
export { environmentUsage, UNDOCUMENTED } from "./environment-usage.ts";
export {
  GRANT_ENVIRONMENT,
  GRANT_ISSUER,
  GrantClaims,
  grantAudience,
  grantRouteOf,
  MAX_GRANT_LIFETIME_SECONDS,
} from "./grant-claims.ts";
export {
  GrantEnvironment,
  grantVerifierFromEnvironment,
  type JwksGrantVerifierOptions,
  jwksGrantVerifier,
} from "./jwks-verifier.ts";
export { ProviderError, retryableKinds } from "./provider-error.ts";
export { capabilitySchemaProblems } from "./schema-check.ts";
export { canonicalDigest, schemaDigest } from "./schema-digest.ts";
export { ServerEnvironment } from "./server-environment.ts";
