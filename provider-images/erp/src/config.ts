/**
 * The `erp` provider's configuration, parsed once from the environment. Each variable's meaning is its
 * `.describe()` text below; `node provider-images/erp/src/main.ts --help` prints them ({@link USAGE}),
 * with the grant verifier's GATEHOUSE_JWKS_URL and GATEHOUSE_GRANT_AUDIENCE (the SDK's
 * `grantVerifierFromEnvironment`).
 */
import { environmentUsage, GrantEnvironment, ServerEnvironment } from "@gatehouse/provider-sdk";
import { z } from "zod";

/** Parsed configuration; throws a ZodError naming the bad variable. */
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
 * Reads the configuration from `env` (normally `process.env`). Throws an Error whose message lists each
 * bad variable and what it must be, e.g. `ERP_URL: Invalid URL`.
 */
export function loadConfig(env: Record<string, string | undefined>): ErpProviderConfig {
  const parsed = ErpProviderConfig.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`invalid erp provider configuration:\n${lines.join("\n")}`, { cause: parsed.error });
}
