/**
 * The `erp` provider process: configuration from the environment (see `config.ts`), a JSON logger on
 * stdout, the ERP client, the grant verifier (the operator's JWKS, from the environment) and the SDK
 * server. Stops on SIGTERM/SIGINT after in-flight requests finish. `--help` prints the variables and exits 0;
 * a missing or bad variable is named on stderr, one line each with its fix, and the process exits 1.
 */
import { configureOrExit, grantVerifierFromEnvironment } from "@gatehouse/provider-sdk";
import { closeOnSignals, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { loadConfig, USAGE } from "./config.ts";
import { createErpClient } from "./erp-client.ts";
import { erpHandlers } from "./handlers.ts";
import { erpHealth } from "./health.ts";
import { erpManifest } from "./manifest.ts";

if (process.argv.slice(2).includes("--help")) {
  process.stdout.write(USAGE);
  process.exit(0);
}
// A missing or bad variable: one line each on stderr, naming it and the fix, then exit 1.
const { config, verifyGrant } = configureOrExit({
  config: () => loadConfig(process.env),
  // Refuses to start without GATEHOUSE_JWKS_URL and GATEHOUSE_GRANT_AUDIENCE (set by the operator).
  verifyGrant: () => grantVerifierFromEnvironment(process.env),
});
const logger = pino({ level: config.LOG_LEVEL, base: { provider: "erp" } });
const erp = createErpClient(config.ERP_URL);
const server = await serveProvider({
  manifest: erpManifest,
  handlers: erpHandlers(erp),
  health: erpHealth(erp),
  host: config.HOST,
  port: config.PORT,
  logger,
  handlerTimeoutMs: config.HANDLER_TIMEOUT_MS,
  verifyGrant,
});
logger.info({ url: server.url, erpUrl: config.ERP_URL }, "erp provider listening");
closeOnSignals(server, logger, "erp provider");
