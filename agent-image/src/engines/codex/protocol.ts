/**
 * The part of the Codex app-server protocol (v2, JSON-RPC 2.0 without the `jsonrpc` field, one JSON
 * object per line on stdio) the engine speaks. Codex's types stay in this folder: what arrives is
 * parsed here once; the rest of the engine sees typed values.
 */
import { z } from "zod";

/** A message from Codex: a response to our request, a request to us, or a notification. */
export const Incoming = z.union([
  z.object({
    id: z.union([z.string(), z.number()]),
    method: z.string(),
    params: z.unknown().optional(),
  }),
  z.object({
    id: z.union([z.string(), z.number()]),
    result: z.unknown().optional(),
    error: z.object({ code: z.number(), message: z.string() }).optional(),
  }),
  z.object({ method: z.string(), params: z.unknown().optional() }),
]);
export type Incoming = z.infer<typeof Incoming>;

/** A raw Responses API item of the thread, as Codex keeps it (only the fields the engine reads). */
export const ResponseItem = z.union([
  z.object({
    type: z.literal("message"),
    role: z.string(),
    content: z.array(z.object({ type: z.string(), text: z.string().optional() })),
  }),
  z.object({
    type: z.literal("function_call"),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
  z.object({ type: z.string() }),
]);
export type ResponseItem = z.infer<typeof ResponseItem>;

const Usage = z.object({ inputTokens: z.number(), outputTokens: z.number() });

/** Codex's error of a failed turn; `codexErrorInfo` carries the upstream HTTP status when there was one. */
export const TurnError = z.object({
  message: z.string(),
  codexErrorInfo: z.unknown().nullish(),
  additionalDetails: z.string().nullish(),
});
export type TurnError = z.infer<typeof TurnError>;

/** The notifications the engine follows, by method. */
export const Notifications = {
  /** One item of a model answer, raw (`thread/start` with `experimentalRawEvents`). */
  "rawResponseItem/completed": z.object({ threadId: z.string(), turnId: z.string(), item: ResponseItem }),
  /** One model answer completed, with its exact usage. */
  "rawResponse/completed": z.object({ threadId: z.string(), turnId: z.string(), usage: Usage.nullable() }),
  error: z.object({ threadId: z.string(), error: TurnError, willRetry: z.boolean() }),
  /** An item of the turn begins or ends (the engine follows Codex's own compaction by them). */
  "item/started": z.object({
    threadId: z.string(),
    turnId: z.string(),
    item: z.object({ type: z.string() }),
  }),
  "item/completed": z.object({
    threadId: z.string(),
    turnId: z.string(),
    item: z.object({ type: z.string() }),
  }),
  "turn/completed": z.object({
    threadId: z.string(),
    turn: z.object({
      id: z.string(),
      status: z.enum(["completed", "interrupted", "failed", "inProgress"]),
      error: TurnError.nullable(),
    }),
  }),
} as const;

/** A call of a capability tool (`dynamicTools`); Codex waits for our answer. */
export const DynamicToolCall = z.object({
  threadId: z.string(),
  turnId: z.string(),
  callId: z.string(),
  tool: z.string(),
});

/** The server requests that ask for a person's decision or input: each is declined. */
export const DECLINED_REQUESTS = {
  "item/commandExecution/requestApproval": { decision: "decline" },
  "item/fileChange/requestApproval": { decision: "decline" },
  execCommandApproval: { decision: { denied: { rejection: "Gatehouse runs no commands" } } },
  applyPatchApproval: { decision: { denied: { rejection: "Gatehouse edits no files" } } },
  // An empty grant: nothing beyond the read-only sandbox.
  "item/permissions/requestApproval": { permissions: {}, scope: "turn" },
  // No answers: the model learns that nobody answered.
  "item/tool/requestUserInput": { answers: {} },
  "mcpServer/elicitation/request": { action: "decline", content: null, _meta: null },
} as const satisfies Record<string, unknown>;

/**
 * Every method the engine sends Codex. Nothing that runs something on Codex's side is among them
 * (`thread/shellCommand`, `command/exec`, `fs/*`, `process/*`): the host sends no other.
 */
export type ClientMethod =
  | "initialize"
  | "thread/start"
  | "thread/inject_items"
  | "turn/start"
  | "turn/interrupt"
  | "thread/unsubscribe";

/** The answer to `thread/start`: the new thread. */
export const ThreadStarted = z.object({ thread: z.object({ id: z.string() }) });

/** The answer to `turn/start`: the turn that runs. */
export const TurnStarted = z.object({ turn: z.object({ id: z.string() }) });

/** A thread's id in a request's params, when it names one. */
export const ThreadScoped = z.object({ threadId: z.string() });
