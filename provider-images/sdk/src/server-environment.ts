/**
 * The environment variables every provider process reads for its HTTP server and logger, as one zod
 * object a provider's own configuration extends (`ServerEnvironment.extend({ APS_URL: … })`), so each
 * provider parses and documents them the same way.
 */
import { z } from "zod";

/** HOST, PORT and LOG_LEVEL, with their defaults and `--help` texts. */
export const ServerEnvironment = z.object({
  HOST: z.string().min(1).default("0.0.0.0").describe("listen address (default 0.0.0.0)"),
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080).describe("listen port (default 8080)"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace"])
    .default("info")
    .describe("pino level (default info)"),
});
