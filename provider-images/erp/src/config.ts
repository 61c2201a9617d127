/**
 * The `erp` provider's configuration, parsed once from the environment. Each variable's meaning is its
 * `.describe()` text below; `node provider-images/erp/src/main.ts --help` prints them ({@link USAGE}),
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

/** The provider's variables (parse them with {@link loadConfig}). */
export const ErpProviderConfig = ServerEnvironment.extend({
  ERP_URL: z.url().describe("base URL of the ERP business system (required)"),
  HANDLER_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe("deadline of one ERP call in milliseconds (default 10000)"),
});
export type ErpProviderConfig = z.infer<typeof ErpProviderConfig>;

/** The `--help` text: every variable the process reads, from the schemas that parse them. */
export const USAGE = environmentUsage(
  "node provider-images/erp/src/main.ts [--help]",
  "The Gatehouse `erp` provider: serves the ERP's read-only capabilities to the operator and accepts only calls carrying a valid grant. Configured by environment variables only; it writes no files.",
  [ErpProviderConfig, GrantEnvironment],
);

/**
 * Reads the configuration from `env` (normally `process.env`). Errors: throws an SDK `EnvironmentError`
 * with one line per missing or bad variable, naming it and the fix, e.g. `ERP_URL is required: set
 * spec.config.ERP_URL on the ProviderInstance (base URL of the ERP business system)`.
 */
export function loadConfig(env: Record<string, string | undefined>): ErpProviderConfig {
  return parseEnvironment(ErpProviderConfig, env, setOnProviderInstance);
}
