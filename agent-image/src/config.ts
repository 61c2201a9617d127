/**
 * The agent runtime's configuration, parsed once from the environment:
 *   GATEHOUSE_GATEWAY_URL   the gateway's agent API, e.g. http://10.88.0.1:8443 (required)
 *   GATEHOUSE_TOKEN_FILE    projected ServiceAccount token (default /var/run/secrets/gatehouse/token)
 *   LOCAL_NODE_ROOT         when set, prefixes mounted paths (the local node writes volumes under it)
 *   MODEL_BASE_URL          OpenAI-compatible base URL, e.g. http://10.88.0.1:18080/v1 (required for now)
 *   MODEL_API_KEY           key for MODEL_BASE_URL (optional; the scripted model needs none)
 *   MODEL_MAX_RETRIES       SDK retries for 429/5xx/connection failures (default 4)
 *   MODEL_TIMEOUT_MS        per model request (default 120000)
 *   APPROVAL_WAIT_SECONDS   long-poll length per approval wait request (default 30, at most 60)
 *   LOG_LEVEL               pino level (default info)
 */
import path from "node:path";
import { z } from "zod";

const Env = z.object({
  GATEHOUSE_GATEWAY_URL: z.url(),
  GATEHOUSE_TOKEN_FILE: z.string().min(1).default("/var/run/secrets/gatehouse/token"),
  LOCAL_NODE_ROOT: z.string().min(1).optional(),
  // model proxy issue: default to `${GATEHOUSE_GATEWAY_URL}/v1/model` (the gateway adds the key and
  // meters tokens) and drop MODEL_API_KEY from the pod once the proxy exists.
  MODEL_BASE_URL: z.url(),
  MODEL_API_KEY: z.string().min(1).default("not-needed-by-the-scripted-model"),
  MODEL_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(4),
  MODEL_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
  APPROVAL_WAIT_SECONDS: z.coerce.number().int().min(1).max(60).default(30),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
});

/** Parsed configuration; `tokenFile` is already prefixed by LOCAL_NODE_ROOT. */
export interface AgentConfig {
  gatewayUrl: string;
  tokenFile: string;
  modelBaseUrl: string;
  modelApiKey: string;
  modelMaxRetries: number;
  modelTimeoutMs: number;
  approvalWaitSeconds: number;
  logLevel: string;
}

/** Reads the configuration from `env` (normally `process.env`); throws a ZodError naming the bad variable. */
export function loadConfig(env: Record<string, string | undefined>): AgentConfig {
  const parsed = Env.parse(env);
  return {
    gatewayUrl: parsed.GATEHOUSE_GATEWAY_URL,
    tokenFile: parsed.LOCAL_NODE_ROOT
      ? path.join(parsed.LOCAL_NODE_ROOT, parsed.GATEHOUSE_TOKEN_FILE)
      : parsed.GATEHOUSE_TOKEN_FILE,
    modelBaseUrl: parsed.MODEL_BASE_URL,
    modelApiKey: parsed.MODEL_API_KEY,
    modelMaxRetries: parsed.MODEL_MAX_RETRIES,
    modelTimeoutMs: parsed.MODEL_TIMEOUT_MS,
    approvalWaitSeconds: parsed.APPROVAL_WAIT_SECONDS,
    logLevel: parsed.LOG_LEVEL,
  };
}
