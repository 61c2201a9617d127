/**
 * The agent pod's entry point: configuration (see `config.ts`), a JSON logger on stdout, the gateway
 * client, the engine the configuration names (`engines/select.ts`, which loads only that engine's
 * modules: builtin, or pi or codex as a child process), and one `runAgent`. SIGTERM/SIGINT abort the run.
 * Exit code: 0 when the final answer was posted, or the pod was released (held past
 * `holdPodForSeconds` for an approval, or stopped by a signal); 1 on failure. `--help` prints the
 * variables and exits 0.
 */
import { pino } from "pino";
import { loadConfig, USAGE } from "./config.ts";
import { selectEngine } from "./engines/select.ts";
import { createGatewayClient } from "./gateway-client.ts";
import { runAgent } from "./run-agent.ts";

if (process.argv.slice(2).includes("--help")) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const logger = pino({ base: { component: "agent" } });
let code = 1;
try {
  const config = loadConfig(process.env);
  logger.level = config.logLevel;
  const gateway = createGatewayClient({ baseUrl: config.gatewayUrl, tokenFile: config.tokenFile });
  const engine = await selectEngine(config, gateway, logger);
  const stop = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info({ signal }, "stopping");
      stop.abort(new Error(`received ${signal}`));
    });
  }
  try {
    code = await runAgent({ gateway, logger, signal: stop.signal, createRuntime: engine.createRuntime });
  } finally {
    await engine.close();
  }
} catch (error) {
  // Only configuration (the message names the bad variable) or loading the engine's modules can fail
  // here: runAgent never throws.
  logger.fatal({ message: error instanceof Error ? error.message : String(error) }, "agent cannot start");
}
process.exitCode = code;
