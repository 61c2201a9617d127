/**
 * The `aps` provider process: configuration from the environment (see `config.ts`), a JSON logger on
 * stdout, the APS client, the grant verifier (the operator's JWKS, from the environment) and the SDK
 * server. Stops on SIGTERM/SIGINT after in-flight requests finish. `--help` prints the variables and exits 0;
 * a missing or bad variable is named on stderr, one line each with its fix, and the process exits 1.
 */
import { configureOrExit, grantVerifierFromEnvironment } from "@gatehouse/provider-sdk";
import { closeOnSignals, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { createApsClient } from "./aps-client.ts";
import { apsProvider } from "./aps-provider.ts";
import { loadConfig, USAGE } from "./config.ts";

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
const logger = pino({ level: config.LOG_LEVEL, base: { provider: "aps" } });
const server = await serveProvider({
  ...apsProvider(createApsClient(config.APS_URL), config.APS_SERVICE_USER),
  host: config.HOST,
  port: config.PORT,
  logger,
  handlerTimeoutMs: config.HANDLER_TIMEOUT_MS,
  verifyGrant,
});
logger.info({ url: server.url, apsUrl: config.APS_URL }, "aps provider listening");
closeOnSignals(server, logger, "aps provider");
