/**
 * The `erp` provider's configuration, parsed once from the environment:
 *   ERP_URL             base URL of the ERP business system (required)
 *   HOST                listen address (default 0.0.0.0)
 *   PORT                listen port (default 8080)
 *   LOG_LEVEL           pino level (default info)
 *   HANDLER_TIMEOUT_MS  deadline of one ERP call in milliseconds (default 10000)
 */
import { z } from "zod";

/** Parsed configuration; throws a ZodError naming the bad variable. */
export const ErpProviderConfig = z.object({
  ERP_URL: z.url(),
  HOST: z.string().min(1).default("0.0.0.0"),
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
  HANDLER_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
});
export type ErpProviderConfig = z.infer<typeof ErpProviderConfig>;

/**
 * Reads the configuration from `env` (normally `process.env`). Throws an Error whose message lists each
 * bad variable and what it must be, e.g. `ERP_URL: Invalid URL`.
 */
export function loadConfig(env: Record<string, string | undefined>): ErpProviderConfig {
  const parsed = ErpProviderConfig.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`invalid erp provider configuration:\n${lines.join("\n")}`, { cause: parsed.error });
}
