/**
 * What Pi reads from its agent directory: `models.json` with one provider, the gateway's model proxy
 * (Chat Completions; the proxy adds the endpoint's key, the pod holds none), and `settings.json`
 * (no compaction — the platform keeps the transcript —, no telemetry, and retries left to the
 * openai SDK under Pi: 429/5xx/connection failures with backoff honouring Retry-After. Pi's own
 * retry loop is off: it ends a run and starts another, so a run's end would not be its end).
 */
import { writeFileSync } from "node:fs";
import path from "node:path";

/** Pi's provider name for the gateway, and the one model id it knows (requests carry the session's). */
export const PROVIDER = "gatehouse";
export const MODEL_ID = "session-model";

/** The variable that carries a literal model key into Pi's environment (never into a file). */
export const MODEL_KEY_ENV = "GATEHOUSE_MODEL_KEY";

/** How Pi authenticates to the model endpoint. */
export type ModelAuth =
  /** The pod's projected token, read again for every request (the node refreshes it). */
  | { tokenFile: string }
  /** A key for an endpoint other than the gateway (passed through `MODEL_KEY_ENV`). */
  | { apiKey: string };

export interface PiModelSettings {
  baseUrl: string;
  auth: ModelAuth;
  /** Per model request. */
  timeoutMs: number;
  /** Retries of a failed model request (429, 5xx, connection). */
  maxRetries: number;
  /** The longest Retry-After waited for. */
  maxRetryDelayMs: number;
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** `models.json`'s content. */
export function modelsJson(settings: PiModelSettings): unknown {
  return {
    providers: {
      [PROVIDER]: {
        baseUrl: settings.baseUrl,
        api: "openai-completions",
        // "!command" is run for every request: the token file is read fresh each time.
        apiKey: "tokenFile" in settings.auth ? `!cat ${shellQuote(settings.auth.tokenFile)}` : MODEL_KEY_ENV,
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: MODEL_ID, name: MODEL_ID, reasoning: false, input: ["text"] }],
      },
    },
  };
}

/** `settings.json`'s content. */
export function settingsJson(settings: PiModelSettings): unknown {
  return {
    defaultProvider: PROVIDER,
    defaultModel: MODEL_ID,
    compaction: { enabled: false },
    retry: {
      enabled: false,
      provider: {
        maxRetries: settings.maxRetries,
        timeoutMs: settings.timeoutMs,
        maxRetryDelayMs: settings.maxRetryDelayMs,
      },
    },
    enableInstallTelemetry: false,
    quietStartup: true,
  };
}

/** Writes both files into `agentDir`; returns the environment Pi needs besides them. */
export function writePiConfig(agentDir: string, settings: PiModelSettings): Record<string, string> {
  writeFileSync(path.join(agentDir, "models.json"), JSON.stringify(modelsJson(settings), null, 2), {
    mode: 0o600,
  });
  writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify(settingsJson(settings), null, 2));
  return "apiKey" in settings.auth ? { [MODEL_KEY_ENV]: settings.auth.apiKey } : {};
}
