/**
 * The agent ↔ gateway wire contract (DESIGN §5), defined once: the gateway serves it and the agent
 * runtime calls it. Bearer token: the pod's projected ServiceAccount token (audience `gatehouse`),
 * re-read from its file on every request.
 *   GET  /v1/session                       → SessionView (history: its first page)
 *   GET  /v1/session/history?afterSeq=N[&limit=M]  → HistoryPage (the events after seq N, M ≤ 1000)
 *   POST /v1/session/events                AgentEvent → { accepted: true }
 *   POST /v1/invoke                        InvokeCall → InvokeAnswer
 *   GET  /v1/approvals/{name}/wait?timeoutSeconds=N  → ApprovalWait (long-poll, N ≤ 60)
 *   POST /v1/model/chat/completions        OpenAI Chat Completions, proxied (see MODEL_PROXY_PATH)
 *   POST /v1/model/responses               OpenAI Responses, proxied the same way
 * Errors: non-2xx with ApiError, except under MODEL_PROXY_PATH, which answers OpenAI's ModelProxyError.
 * 429 (both shapes): the session is over its request rate or in-flight cap; retry after `Retry-After`
 * seconds (with the same execution identity, an invoke never runs twice).
 */
import { z } from "zod";

/** A tool as the model sees it (OpenAI function-tool shape). `name` is the capability id with `.` → `_`. */
export const ToolSpec = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

/** One stored transcript entry, replayed to a resuming agent. Tool results come from Core's records. */
export const HistoryEntry = z.object({
  seq: z.number().int(),
  source: z.enum(["agent", "core"]),
  kind: z.string(),
  payload: z.record(z.string(), z.unknown()),
});
export type HistoryEntry = z.infer<typeof HistoryEntry>;

/** Events of one history page: `GET /v1/session` holds the first, `GET /v1/session/history` the rest. */
export const HISTORY_PAGE = 1000;

/** `GET /v1/session/history`: events after `afterSeq` in seq order; `complete` when none follow. */
export const HistoryPage = z.object({
  history: z.array(HistoryEntry),
  complete: z.boolean(),
});
export type HistoryPage = z.infer<typeof HistoryPage>;

/**
 * The context window, in tokens, an agent assumes for a model whose endpoint's configuration names
 * none (`MODEL_ENDPOINTS[].contextWindow`): the builtin engine compacts the conversation to fit it.
 */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** `GET /v1/session`. */
export const SessionView = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  subject: z.object({ user: z.string(), groups: z.array(z.string()) }),
  instructions: z.string(),
  messages: z.array(z.object({ text: z.string() })),
  /** The model, and its endpoint's context window in tokens (absent from an older gateway: the default). */
  model: z.object({
    name: z.string(),
    contextWindow: z.number().int().min(1).default(DEFAULT_CONTEXT_WINDOW),
  }),
  tools: z.array(ToolSpec),
  /** The history's first page; unless `historyComplete`, read on with `GET /v1/session/history`. */
  history: z.array(HistoryEntry),
  historyComplete: z.boolean(),
  limits: z.object({
    maxTurns: z.number().int(),
    maxToolCalls: z.number().int(),
    /**
     * The effective `spec.approval.holdPodForSeconds`: how long the pod waits for a decision before it
     * posts `released` and exits 0; the operator starts a new pod once the Approval is decided.
     */
    holdPodForSeconds: z.number().int().min(0),
  }),
});
export type SessionView = z.infer<typeof SessionView>;

/** `POST /v1/invoke`: one tool call as the model produced it; `arguments` is the model's raw string. */
export const InvokeCall = z.object({
  turn: z.number().int().min(0),
  position: z.number().int().min(0),
  callId: z.string().max(256),
  tool: z.string().max(128),
  arguments: z.string().max(1_000_000),
});
export type InvokeCall = z.infer<typeof InvokeCall>;

/**
 * `POST /v1/invoke` answer. `content` is what goes back to the model as the tool result (a JSON string
 * or a human-readable error). `pending_approval` names the Approval to wait on.
 */
export const InvokeAnswer = z.object({
  status: z.enum(["succeeded", "failed", "pending_approval", "denied", "invalid_arguments", "unknown"]),
  content: z.string(),
  executionId: z.string().optional(),
  approval: z.object({ name: z.string() }).optional(),
  errorKind: z.string().optional(),
});
export type InvokeAnswer = z.infer<typeof InvokeAnswer>;

/** `GET /v1/approvals/{name}/wait`: `done` once the Approval left Pending/Approved/Executing; then `answer` is final. */
export const ApprovalWait = z.object({
  name: z.string(),
  phase: z.string(),
  done: z.boolean(),
  answer: InvokeAnswer.optional(),
});
export type ApprovalWait = z.infer<typeof ApprovalWait>;

/**
 * A compaction of what the model sees (the transcript keeps everything): before asking the model in
 * `turn`, `summarizedTurns` units (user messages, assistant turns with their results) were replaced by
 * a summary and `keptTurns` kept whole; tokens are the agent's estimates. `reason`: the conversation
 * outgrew the `window`, the endpoint refused it as too long, or a call had lost its result.
 */
export const CompactionReport = z.object({
  reason: z.enum(["window", "refused", "pairing"]),
  summarizedTurns: z.number().int().min(0),
  keptTurns: z.number().int().min(0),
  tokensBefore: z.number().int().min(0),
  tokensAfter: z.number().int().min(0),
  window: z.number().int().min(0),
});
export type CompactionReport = z.infer<typeof CompactionReport>;

/**
 * A request for a person's decision or input that the session's engine raised and the agent declined:
 * its name in the engine's protocol (e.g. Codex's `item/commandExecution/requestApproval`). A name
 * only: the audit chain keeps no request content.
 */
export const DeclinedRequest = z.strictObject({
  request: z.string().regex(/^[A-Za-z][A-Za-z0-9_./-]{0,127}$/),
});
export type DeclinedRequest = z.infer<typeof DeclinedRequest>;

/**
 * `POST /v1/session/events`: what the agent reports. Stored with `source: agent`, never replayed as tool
 * results. `usage` (of kind `usage` or on another event) is kept as the agent's own report only: the
 * session's `status.usage` and its token budget count what the model proxy metered, never this.
 */
export const AgentEvent = z
  .object({
    /**
     * `released`: the pod stops while a decision is pending; the operator resumes the session later.
     * `compaction`: the engine compacted what the model sees (`compaction` says how); the session's
     * `status.compactions` counts these. `approval_declined`: the engine asked for a person's decision
     * or input itself (a command, a file change, a question to the user) and the agent declined it
     * (`declined` names the request); the gateway also appends `engine.approval_declined` to the
     * audit chain.
     */
    kind: z.enum([
      "assistant_text",
      "final_answer",
      "error",
      "usage",
      "released",
      "compaction",
      "approval_declined",
    ]),
    turn: z.number().int().min(0),
    text: z.string().max(65_536).optional(),
    usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int() }).optional(),
    compaction: CompactionReport.optional(),
    declined: DeclinedRequest.optional(),
  })
  .refine((event) => (event.kind === "approval_declined") === (event.declined !== undefined), {
    message: "declined is set exactly when kind is approval_declined",
    path: ["declined"],
  });
export type AgentEvent = z.infer<typeof AgentEvent>;

/** Error body of any non-2xx answer. */
export const ApiError = z.object({ kind: z.string(), message: z.string() });
export type ApiError = z.infer<typeof ApiError>;

/**
 * The model proxy (DESIGN §5): an OpenAI-compatible base URL under the gateway, i.e. the agent's
 * `MODEL_BASE_URL` is `<gatewayUrl>/v1/model` and its client calls `<base>/chat/completions` (Chat
 * Completions) or `<base>/responses` (Responses) — one path for both: the same checks, key and budget.
 * - Bearer: the pod's projected token, as for every /v1 call (with the openai SDK: `apiKey` = a function
 *   re-reading the token file). The pod holds no model key; the gateway adds the key of the session's
 *   endpoint (`spec.model.endpointRef`, else the default) and never forwards the pod's token.
 * - `model` must be the session's `spec.model.name` (and one of the endpoint's models when it lists any).
 * - Streaming and non-streaming bodies pass through unchanged; streamed Chat Completions requests get
 *   `stream_options.include_usage: true`, so the last chunk carries `usage` (a chunk with no choices); a
 *   Responses stream carries it in `response.completed` unasked.
 * - Responses requests may not run in the `background` nor offer tools the endpoint runs itself (web
 *   search, remote MCP, code interpreter, file search, image generation, hosted shells): 400
 *   `background_not_allowed` / `endpoint_tool_not_allowed`. Function, custom and client-side tools pass.
 *   A Chat Completions request with `web_search_options` (search at the endpoint) is refused alike.
 * - Upstream errors pass through with their status and retry headers (`retry-after`, `x-should-retry`).
 * - The gateway's own refusals answer {@link ModelProxyError}; the token budget's is
 *   {@link BUDGET_EXCEEDED}.
 */
export const MODEL_PROXY_PATH = "/v1/model";

/**
 * The gateway's MCP endpoint (Streamable HTTP; docs/mcp.md): an agent's `GATEHOUSE_MCP_URL` is
 * `<gatewayUrl>/mcp`, authenticated with the pod's projected token like every /v1 call.
 */
export const MCP_ENDPOINT_PATH = "/mcp";

/** An OpenAI-style error body: what the proxy answers for its own refusals (and what endpoints send). */
export const ModelProxyError = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});
export type ModelProxyError = z.infer<typeof ModelProxyError>;

/**
 * The refusal once a session's metered tokens (input + output, all its model requests) reached its
 * effective `tokenBudget`: HTTP 400 with header `x-should-retry: false` and body
 * `{"error": {"type": "budget_exceeded", "code": "token_budget_exceeded", "param": null,
 * "message": "Token budget exhausted: this session used 1234 of its 1000 tokens (tokenBudget) …"}}`.
 * It is final for the whole session: a runtime must not retry it (in this turn or a later one), end
 * the turn and report the message as the reason. With the openai SDK it surfaces as a
 * `BadRequestError` whose `type` is `budget_exceeded` (see {@link isBudgetExceeded}).
 */
export const BUDGET_EXCEEDED = {
  status: 400,
  type: "budget_exceeded",
  code: "token_budget_exceeded",
} as const;

/** True when an error (e.g. the openai SDK's `APIError`: `status`, `type`) is the budget refusal. */
export function isBudgetExceeded(error: { status?: number | undefined; type?: string | null | undefined }) {
  return error.status === BUDGET_EXCEEDED.status && error.type === BUDGET_EXCEEDED.type;
}
