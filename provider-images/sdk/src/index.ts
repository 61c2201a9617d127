// The contract and pure helpers only: Core imports this entry, so nothing here may pull in an HTTP library.
// The server helper is the separate entry `@gatehouse/provider-sdk/server`.
export * from "./contract.ts";
export { ProviderError, retryableKinds } from "./provider-error.ts";
export { capabilitySchemaProblems } from "./schema-check.ts";
export { canonicalDigest, schemaDigest } from "./schema-digest.ts";
