/**
 * The agent pod's entry point: configuration (see `config.ts`), a JSON logger on stdout, the gateway
 * client, the builtin engine on the openai SDK, and one `runAgent`. SIGTERM/SIGINT abort the run.
 * Exit code: 0 when the final answer was posted, or the pod was released (held past
 * `holdPodForSeconds` for an approval, or stopped by a signal); 1 on failure. `--help` prints the
 * variables and exits 0.
 */
import OpenAI from "openai";
import { pino } from "pino";
import { loadConfig, USAGE } from "./config.ts";
import { createBuiltinRuntime } from "./engines/builtin/engine.ts";
import { defaultRetryPolicy } from "./engines/builtin/retry.ts";
import { createGatewayClient, readBearerToken } from "./gateway-client.ts";
import { gatewayToolExecutor } from "./gateway-tools.ts";
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
  const model = new OpenAI({
    baseURL: config.modelBaseUrl,
    // Towards the gateway's model proxy the bearer is the pod's token, re-read as the node refreshes it.
    apiKey: config.modelApiKey ?? (() => readBearerToken(config.tokenFile)),
    // The engine retries itself (engines/builtin/retry.ts).
    maxRetries: 0,
    timeout: config.modelTimeoutMs,
  });
  const stop = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info({ signal }, "stopping");
      stop.abort(new Error(`received ${signal}`));
    });
  }
  code = await runAgent({
    gateway,
    logger,
    signal: stop.signal,
    createRuntime: (session) =>
      createBuiltinRuntime({
        client: model,
        model: session.model.name,
        tools: gatewayToolExecutor(gateway, { waitSeconds: config.approvalWaitSeconds }),
        maxTurns: session.limits.maxTurns,
        maxToolCalls: session.limits.maxToolCalls,
        retry: {
          ...defaultRetryPolicy,
          maxRetries: config.modelMaxRetries,
          maxRetryAfterMs: config.modelMaxRetryAfterSeconds * 1000,
        },
        logger,
      }),
  });
} catch (error) {
  // Only configuration can fail here (runAgent never throws); the message names the bad variable.
  logger.fatal({ message: error instanceof Error ? error.message : String(error) }, "agent cannot start");
}
process.exitCode = code;
