/**
 * Codex's configuration, written into CODEX_HOME before it starts: `config.toml` and the model
 * catalog it names. One model provider, the gateway's model proxy (Responses API), which the pod
 * holds no key for: the bearer is the pod's projected token, read from its file by an auth command
 * Codex runs again before the token expires (or a fixed key, outside a pod). Everything that would let
 * Codex act on its own is off: shell and unified exec, web search, apps, plugins (which would also
 * reach the network at start), goals, sub-agents, hooks, analytics; the sandbox is read-only and
 * approvals are asked of us, so every one is declined (engine.ts). Two built-in tools stay offered in
 * 0.169.0 whatever the configuration: `request_user_input` (its request comes to us and is declined)
 * and `view_image` (refused by Codex itself, as the catalog's model takes text only).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The provider id in config.toml. */
export const PROVIDER = "gatehouse";

/** How Codex reaches the model. */
export interface CodexModelSettings {
  /** The OpenAI-compatible base URL ending in `/v1` (the gateway's model proxy in a pod). */
  baseUrl: string;
  /** A fixed key, or the projected token's file, re-read by Codex (`refreshMs`). */
  auth: { apiKey: string } | { tokenFile: string };
  /** Per request, connect to last byte. */
  timeoutMs: number;
  /** Retries of a failed request (5xx, 429, a broken stream) before the turn fails. */
  maxRetries: number;
}

/** The environment variable holding a fixed key (`auth.apiKey`) for Codex. */
export const API_KEY_ENV = "GATEHOUSE_MODEL_KEY";

/** How often Codex runs the auth command again: well inside the projected token's 600 s lifetime. */
const TOKEN_REFRESH_MS = 60_000;

/** A TOML basic string: JSON's escapes are TOML's for every string JSON.stringify writes. */
function str(value: string): string {
  return JSON.stringify(value);
}

/** `config.toml`, naming the catalog at `catalogFile`. */
export function configToml(catalogFile: string, model: CodexModelSettings): string {
  const auth =
    "apiKey" in model.auth
      ? [`env_key = ${str(API_KEY_ENV)}`]
      : [
          "",
          `[model_providers.${PROVIDER}.auth]`,
          // Node is the one program the agent image surely has; the token file is re-read each time.
          `command = ${str(process.execPath)}`,
          `args = [${[
            "-e",
            "process.stdout.write(require('node:fs').readFileSync(process.argv[1], 'utf8').trim())",
            model.auth.tokenFile,
          ]
            .map(str)
            .join(", ")}]`,
          `refresh_interval_ms = ${TOKEN_REFRESH_MS}`,
        ];
  return [
    `model_provider = ${str(PROVIDER)}`,
    `model_catalog_json = ${str(catalogFile)}`,
    `approval_policy = "on-request"`,
    `sandbox_mode = "read-only"`,
    `web_search = "disabled"`,
    `check_for_update_on_startup = false`,
    `cli_auth_credentials_store = "file"`,
    // The session's system prompt is the model's only instruction: no environment, permissions or
    // skills text of Codex's own.
    "include_environment_context = false",
    "include_permissions_instructions = false",
    "include_apps_instructions = false",
    "",
    "[features]",
    "shell_tool = false",
    "unified_exec = false",
    "shell_snapshot = false",
    "apps = false",
    "plugins = false",
    "goals = false",
    "image_generation = false",
    "hooks = false",
    "browser_use = false",
    "computer_use = false",
    // A model endpoint that cannot be reached ends the turn after the provider's retries (the run
    // then ends retryable and a new pod tries again), instead of Codex retrying forever.
    "unbounded_connection_retries = false",
    // The model's questions to the user come to us, to be declined and recorded, rather than being
    // refused by Codex unseen.
    "default_mode_request_user_input = true",
    "",
    "[agents]",
    "enabled = false",
    "",
    "[skills]",
    "include_instructions = false",
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[history]",
    `persistence = "none"`,
    "",
    `[model_providers.${PROVIDER}]`,
    `name = "Gatehouse model proxy"`,
    `base_url = ${str(model.baseUrl)}`,
    `wire_api = "responses"`,
    `request_max_retries = ${model.maxRetries}`,
    `stream_max_retries = ${model.maxRetries}`,
    `stream_idle_timeout_ms = ${model.timeoutMs}`,
    ...auth,
    "",
  ].join("\n");
}

/**
 * The model catalog: one entry whose slug prefixes every model name the sessions use (`slugPrefix`),
 * so Codex knows the endpoint's context window instead of guessing, offers no shell, and adds no
 * instructions of its own (the session's system prompt is the only one).
 */
export function modelCatalog(slugPrefix: string, contextWindow: number): string {
  return JSON.stringify({
    models: [
      {
        slug: slugPrefix,
        display_name: slugPrefix,
        description: null,
        supported_reasoning_levels: [],
        shell_type: "disabled",
        visibility: "hide",
        supported_in_api: true,
        priority: 0,
        upgrade: null,
        base_instructions: "",
        supports_reasoning_summaries: false,
        support_verbosity: false,
        default_verbosity: null,
        apply_patch_tool_type: null,
        truncation_policy: { mode: "bytes", limit: 10_000_000 },
        supports_parallel_tool_calls: true,
        context_window: contextWindow,
        experimental_supported_tools: [],
        input_modalities: ["text"],
      },
    ],
  });
}

/** Writes both files into `home` (created if missing). */
export function writeCodexConfig(
  home: string,
  model: CodexModelSettings,
  catalog: { slugPrefix: string; contextWindow: number },
): void {
  mkdirSync(home, { recursive: true });
  const catalogFile = path.join(home, "model-catalog.json");
  writeFileSync(catalogFile, modelCatalog(catalog.slugPrefix, catalog.contextWindow));
  writeFileSync(path.join(home, "config.toml"), configToml(catalogFile, model));
}
