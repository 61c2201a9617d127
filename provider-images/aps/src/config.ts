/**
 * The `aps` provider's configuration, parsed once from the environment. Each variable's meaning is its
 * `.describe()` text below; `node provider-images/aps/src/main.ts --help` prints them ({@link USAGE}),
 * with the grant verifier's GATEHOUSE_JWKS_URL and GATEHOUSE_GRANT_AUDIENCE (the SDK's
 * `grantVerifierFromEnvironment`).
 */
import {
  environmentUsage,
  GrantEnvironment,
  parseEnvironment,
  ServerEnvironment,
  setOnProviderInstance,
} from "@gatehouse/provider-sdk";
import { z } from "zod";

/** Default APS user of the provider's own calls (status queries, target versions). */
export const DEFAULT_APS_SERVICE_USER = "gatehouse";

/** The provider's variables (parse them with {@link loadConfig}). */
export const ApsProviderConfig = ServerEnvironment.extend({
  APS_URL: z.url().describe("base URL of the APS business system (required)"),
  APS_SERVICE_USER: z
    .string()
    .min(1)
    .default(DEFAULT_APS_SERVICE_USER)
    .describe(
      `the provider's own APS user, for calls that act for nobody: status queries by idempotency key and target versions (default ${DEFAULT_APS_SERVICE_USER})`,
    ),
  HANDLER_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(20_000)
    .describe("deadline of one APS call in milliseconds (default 20000)"),
});
export type ApsProviderConfig = z.infer<typeof ApsProviderConfig>;

/** The `--help` text: every variable the process reads, from the schemas that parse them. */
export const USAGE = environmentUsage(
  "node provider-images/aps/src/main.ts [--help]",
  "The Gatehouse `aps` provider: serves the APS capabilities (read, draft, write) to the operator and accepts only calls carrying a valid grant. Configured by environment variables only; it writes no files.",
  [ApsProviderConfig, GrantEnvironment],
);

/**
 * Reads the configuration from `env` (normally `process.env`). Errors: throws an SDK `EnvironmentError`
 * with one line per missing or bad variable, naming it and the fix, e.g. `APS_URL is required: set
 * spec.config.APS_URL on the ProviderInstance (base URL of the APS business system)`.
 */
export function loadConfig(env: Record<string, string | undefined>): ApsProviderConfig {
  return parseEnvironment(ApsProviderConfig, env, setOnProviderInstance);
}
