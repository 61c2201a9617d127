/**
 * The engine a pod runs, as its configuration names it (GATEHOUSE_ENGINE, the session's
 * spec.engine): `createRuntime` once the session is known, `close` when the run is over (a subprocess
 * engine's child is stopped; the builtin engine holds nothing).
 *
 * Only the selected engine's modules are loaded (dynamic imports): they are most of the agent's start
 * (the OpenAI SDK for builtin, Pi's and Codex's hosts), and a pod runs one engine.
 */
import type { Logger } from "pino";
import type { AgentConfig } from "../config.ts";
import type { AgentSessionView } from "../gateway-client.ts";
import { type GatewayClient, readBearerToken } from "../gateway-client.ts";
import { gatewayToolExecutor } from "../gateway-tools.ts";
import type { AgentRuntime } from "../runtime.ts";
import type { DeclinedRequest } from "./codex/engine.ts";

export interface Engine {
  createRuntime(session: AgentSessionView): AgentRuntime;
  close(): Promise<void>;
}

export async function selectEngine(
  config: AgentConfig,
  gateway: GatewayClient,
  logger: Logger,
): Promise<Engine> {
  const tools = () => gatewayToolExecutor(gateway, { waitSeconds: config.approvalWaitSeconds });
  // As for the builtin engine: towards the gateway's proxy the bearer is the pod's token.
  const auth = config.modelApiKey ? { apiKey: config.modelApiKey } : { tokenFile: config.tokenFile };
  if (config.engine === "codex") {
    const [{ createCodexRuntime }, { CodexHost }] = await Promise.all([
      import("./codex/engine.ts"),
      import("./codex/host.ts"),
    ]);
    const host = new CodexHost({
      dir: config.engineDir,
      model: {
        baseUrl: config.modelBaseUrl,
        auth,
        timeoutMs: config.modelTimeoutMs,
        maxRetries: config.modelMaxRetries,
      },
      logger,
    });
    return {
      createRuntime: (session) => {
        // The pod's one session: Codex starts knowing its model and the endpoint's window.
        host.catalog = { slugPrefix: session.model.name, contextWindow: session.model.contextWindow };
        return createCodexRuntime({
          host,
          model: session.model.name,
          tools: tools(),
          maxTurns: session.limits.maxTurns,
          maxToolCalls: session.limits.maxToolCalls,
          logger,
          onDeclined: (declined) => reportDeclined(gateway, declined, logger),
        });
      },
      close: () => host.close(),
    };
  }
  if (config.engine === "pi") {
    const [{ createPiRuntime }, { PiHost }] = await Promise.all([
      import("./pi/engine.ts"),
      import("./pi/host.ts"),
    ]);
    const host = new PiHost({
      dir: config.engineDir,
      model: {
        baseUrl: config.modelBaseUrl,
        auth,
        timeoutMs: config.modelTimeoutMs,
        maxRetries: config.modelMaxRetries,
        maxRetryDelayMs: config.modelMaxRetryAfterSeconds * 1000,
      },
      logger,
    });
    return {
      createRuntime: (session) => {
        // The pod's one session: its endpoint's window is the host's.
        host.contextWindow = session.model.contextWindow;
        return createPiRuntime({
          host,
          model: session.model.name,
          tools: tools(),
          maxTurns: session.limits.maxTurns,
          maxToolCalls: session.limits.maxToolCalls,
          logger,
        });
      },
      close: () => host.close(),
    };
  }
  const [{ default: OpenAI }, { createBuiltinRuntime }, { defaultRetryPolicy }] = await Promise.all([
    import("openai"),
    import("./builtin/engine.ts"),
    import("./builtin/retry.ts"),
  ]);
  const model = new OpenAI({
    baseURL: config.modelBaseUrl,
    // Towards the gateway's model proxy the bearer is the pod's token, re-read as the node refreshes it.
    apiKey: config.modelApiKey ?? (() => readBearerToken(config.tokenFile)),
    // The engine retries itself (engines/builtin/retry.ts).
    maxRetries: 0,
    timeout: config.modelTimeoutMs,
  });
  return {
    createRuntime: (session) =>
      createBuiltinRuntime({
        client: model,
        model: session.model.name,
        tools: tools(),
        maxTurns: session.limits.maxTurns,
        maxToolCalls: session.limits.maxToolCalls,
        contextWindow: session.model.contextWindow,
        retry: {
          ...defaultRetryPolicy,
          maxRetries: config.modelMaxRetries,
          maxRetryAfterMs: config.modelMaxRetryAfterSeconds * 1000,
        },
        logger,
      }),
    close: async () => {},
  };
}

/**
 * Tells the gateway that the engine asked a person for something and was declined (it records it in
 * the transcript and the audit chain). The run does not wait for it: a report that fails is logged.
 */
function reportDeclined(gateway: GatewayClient, declined: DeclinedRequest, logger: Logger): void {
  gateway
    .postEvent({ kind: "approval_declined", turn: declined.turn, declined: { request: declined.method } })
    .catch((error: unknown) =>
      logger.warn(
        { request: declined.method, message: error instanceof Error ? error.message : String(error) },
        "the declined request was not reported",
      ),
    );
}
