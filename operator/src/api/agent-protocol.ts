/**
 * The agent ↔ gateway wire contract (DESIGN §5), defined once: the gateway serves it and the agent
 * runtime calls it. Bearer token: the pod's projected ServiceAccount token (audience `gatehouse`),
 * re-read from its file on every request.
 *   GET  /v1/session                       → SessionView
 *   POST /v1/session/events                AgentEvent → { accepted: true }
 *   POST /v1/invoke                        InvokeCall → InvokeAnswer
 *   GET  /v1/approvals/{name}/wait?timeoutSeconds=N  → ApprovalWait (long-poll, N ≤ 60)
 * Errors: non-2xx with ApiError.
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

/** `GET /v1/session`. */
export const SessionView = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  subject: z.object({ user: z.string(), groups: z.array(z.string()) }),
  instructions: z.string(),
  messages: z.array(z.object({ text: z.string() })),
  model: z.object({ name: z.string() }),
  tools: z.array(ToolSpec),
  history: z.array(HistoryEntry),
  limits: z.object({ maxTurns: z.number().int(), maxToolCalls: z.number().int() }),
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

/** `POST /v1/session/events`: what the agent reports. Stored with `source: agent`, never replayed as tool results. */
export const AgentEvent = z.object({
  kind: z.enum(["assistant_text", "final_answer", "error", "usage"]),
  turn: z.number().int().min(0),
  text: z.string().max(65_536).optional(),
  usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int() }).optional(),
});
export type AgentEvent = z.infer<typeof AgentEvent>;

/** Error body of any non-2xx answer. */
export const ApiError = z.object({ kind: z.string(), message: z.string() });
export type ApiError = z.infer<typeof ApiError>;
