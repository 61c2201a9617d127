/**
 * The agent runtime's configuration, parsed once from the environment. Each variable's meaning is its
 * `.describe()` text below; `node agent-image/src/main.ts --help` prints them ({@link USAGE}).
 */
import path from "node:path";
import { MODEL_PROXY_PATH } from "@gatehouse/operator/agent-protocol";
import { z } from "zod";

const Env = z.object({
  GATEHOUSE_ENGINE: z
    .enum(["builtin", "pi", "codex"])
    .default("builtin")
    .describe(
      "the session's spec.engine (default builtin): builtin is the runtime's own loop; pi runs Pi, codex the Codex app server, as a child process",
    ),
  GATEHOUSE_ENGINE_DIR: z
    .string()
    .min(1)
    .default("/tmp/gatehouse-engine")
    .describe(
      "writable directory of a subprocess engine (pi: its settings, session files, the tool bridge's socket; codex: CODEX_HOME); an emptyDir in the pod (default /tmp/gatehouse-engine)",
    ),
  GATEHOUSE_GATEWAY_URL: z.url().describe("the gateway's agent API, e.g. http://10.88.0.1:8443 (required)"),
  GATEHOUSE_TOKEN_FILE: z
    .string()
    .min(1)
    .default("/var/run/secrets/gatehouse/token")
    .describe("projected ServiceAccount token (default /var/run/secrets/gatehouse/token)"),
  LOCAL_NODE_ROOT: z
    .string()
    .min(1)
    .optional()
    .describe("when set, prefixes mounted paths (the local node writes volumes under it)"),
  MODEL_BASE_URL: z
    .url()
    .optional()
    .describe(
      `OpenAI-compatible base URL (default <GATEHOUSE_GATEWAY_URL>${MODEL_PROXY_PATH}, the gateway's model proxy, which adds the endpoint's key: the pod holds none)`,
    ),
  MODEL_API_KEY: z
    .string()
    .min(1)
    .optional()
    .describe(
      "bearer for MODEL_BASE_URL when it is not on the gateway's origin (optional); towards the gateway the bearer is always the pod's projected token, re-read on every request",
    ),
  MODEL_MAX_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(4)
    .describe("retries of a model request for 429/5xx/connection failures (default 4)"),
  MODEL_MAX_RETRY_AFTER_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(60)
    .describe("the longest Retry-After the agent waits for (default 60)"),
  MODEL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(120_000)
    .describe("per model request, in milliseconds (default 120000)"),
  APPROVAL_WAIT_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(60)
    .default(30)
    .describe("long-poll length per approval wait request (default 30, at most 60)"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace"])
    .default("info")
    .describe("pino level (default info)"),
});

/**
 * The `--help` text, one line per key of the schema above with its `.describe()` text. (The provider
 * SDK's `environmentUsage` formats the others; the agent does not depend on the SDK.)
 */
export const USAGE = [
  "Usage: node agent-image/src/main.ts [--help]",
  "",
  "The Gatehouse agent runtime: runs one AgentSession's model loop, its tool calls going through the gateway. Configured by environment variables only; only a subprocess engine (pi, codex) writes files, under GATEHOUSE_ENGINE_DIR.",
  "",
  "Environment variables:",
  ...Object.entries(Env.shape).map(
    ([name, field]) =>
      `  ${name.padEnd(29)}  ${field.description ?? "(undocumented: give it a .describe() text)"}`,
  ),
  "",
].join("\n");

/**
 * Parsed configuration; `tokenFile` and `engineDir` are already prefixed by LOCAL_NODE_ROOT. `modelApiKey` undefined:
 * the model endpoint is the gateway and the bearer is the pod's token.
 */
export interface AgentConfig {
  engine: "builtin" | "pi" | "codex";
  /** Already prefixed by LOCAL_NODE_ROOT. */
  engineDir: string;
  gatewayUrl: string;
  tokenFile: string;
  modelBaseUrl: string;
  modelApiKey: string | undefined;
  modelMaxRetries: number;
  modelMaxRetryAfterSeconds: number;
  modelTimeoutMs: number;
  approvalWaitSeconds: number;
  logLevel: string;
}

/** True when `url` is on the gateway's origin: only there may the pod's token be the bearer. */
function isGatewayUrl(url: string, gatewayUrl: string): boolean {
  return new URL(url).origin === new URL(gatewayUrl).origin;
}

/**
 * Reads the configuration from `env` (normally `process.env`); throws a ZodError naming the bad
 * variable. A model endpoint other than the gateway never receives the pod's token: without
 * MODEL_API_KEY it gets a placeholder key (the scripted model needs none).
 */
export function loadConfig(env: Record<string, string | undefined>): AgentConfig {
  const parsed = Env.parse(env);
  const gatewayUrl = parsed.GATEHOUSE_GATEWAY_URL.replace(/\/+$/, "");
  const modelBaseUrl = parsed.MODEL_BASE_URL ?? `${gatewayUrl}${MODEL_PROXY_PATH}`;
  const toGateway = isGatewayUrl(modelBaseUrl, gatewayUrl);
  const mounted = (file: string) => (parsed.LOCAL_NODE_ROOT ? path.join(parsed.LOCAL_NODE_ROOT, file) : file);
  return {
    engine: parsed.GATEHOUSE_ENGINE,
    engineDir: mounted(parsed.GATEHOUSE_ENGINE_DIR),
    gatewayUrl,
    tokenFile: mounted(parsed.GATEHOUSE_TOKEN_FILE),
    modelBaseUrl,
    modelApiKey: toGateway ? undefined : (parsed.MODEL_API_KEY ?? "no-key-configured"),
    modelMaxRetries: parsed.MODEL_MAX_RETRIES,
    modelMaxRetryAfterSeconds: parsed.MODEL_MAX_RETRY_AFTER_SECONDS,
    modelTimeoutMs: parsed.MODEL_TIMEOUT_MS,
    approvalWaitSeconds: parsed.APPROVAL_WAIT_SECONDS,
    logLevel: parsed.LOG_LEVEL,
  };
}
