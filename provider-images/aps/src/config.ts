/**
 * The `aps` provider's configuration, parsed once from the environment:
 *   APS_URL      base URL of the APS business system (required)
 *   APS_SERVICE_USER  the provider's own APS user, for calls that act for nobody: status queries by
 *                idempotency key and target versions (default gatehouse)
 *   HOST         listen address (default 0.0.0.0)
 *   PORT         listen port (default 8080)
 *   LOG_LEVEL    pino level (default info)
 *   HANDLER_TIMEOUT_MS  deadline of one APS call (default 20000)
 * Grant verification reads GATEHOUSE_JWKS_URL and GATEHOUSE_GRANT_AUDIENCE (the SDK's
 * `grantVerifierFromEnvironment`).
 */
import { z } from "zod";

/** Default APS user of the provider's own calls (status queries, target versions). */
export const DEFAULT_APS_SERVICE_USER = "gatehouse";

/** Parsed configuration; throws a ZodError naming the bad variable. */
export const ApsProviderConfig = z.object({
  APS_URL: z.url(),
  APS_SERVICE_USER: z.string().min(1).default(DEFAULT_APS_SERVICE_USER),
  HOST: z.string().min(1).default("0.0.0.0"),
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
  HANDLER_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
});
export type ApsProviderConfig = z.infer<typeof ApsProviderConfig>;

/** Reads the configuration from `env` (normally `process.env`). */
export function loadConfig(env: Record<string, string | undefined>): ApsProviderConfig {
  return ApsProviderConfig.parse(env);
}
