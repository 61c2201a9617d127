/**
 * `/mcp`: the session's gated capabilities to any MCP-capable agent, over MCP's Streamable HTTP
 * transport (`@modelcontextprotocol/sdk`; protocol revisions up to its LATEST_PROTOCOL_VERSION,
 * 2025-11-25 — a client offering a newer one is answered with that). Registered inside the gateway's
 * authenticated `/v1` scope: the same TokenReview, pod binding and session limits as every agent route.
 *
 * Stateless across replicas: every request gets a fresh SDK server and transport, so any replica
 * serves any request. The MCP session id the `initialize` answer carries is `<AgentSession uid>.<random>`
 * (mcp-tools.ts): every later request must carry it, and one naming another session is not found.
 *   tools/list → sessionTools (the rule of `GET /v1/session`) + gatehouse_final_answer
 *   tools/call → callTool (Core's invoke, recorded like `POST /v1/invoke`); a call waiting for an
 *               Approval keeps its request open (waitForApproval) up to a bound, with progress
 *               notifications when the client sent a progressToken
 * GET (a server-initiated stream) answers 405: the server sends nothing outside a request's stream.
 * Before the SDK reads a body, requestProblemOf refuses what it would answer unclearly: an empty batch
 * (-32600) and a tools/call without a string name or with non-object arguments (-32602).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { MCP_ENDPOINT_PATH } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import { approvalWaitAnswer, waitForApproval } from "./approval-wait.ts";
import {
  callPositionOf,
  FINAL_ANSWER_CHARS,
  FINAL_ANSWER_TOOL,
  finalAnswerResultOf,
  finalAnswerTool,
  mcpSessionBelongsTo,
  mcpToolOf,
  newMcpSessionId,
  requestProblemOf,
  toolResultOf,
} from "./mcp-tools.ts";
import { sessionTools } from "./session-tools.ts";
import { admitIntake, callTool, type ToolCallDeps } from "./tool-calls.ts";

/** The longest a `tools/call` waits for its Approval, in seconds: under the SDK client's 60 s default. */
export const MCP_APPROVAL_WAIT_SECONDS = 50;
/** A client may ask for a shorter wait in the call's `_meta` under this key (seconds, ≥ 1). */
export const APPROVAL_WAIT_META = "gatehouse.dev/approvalWaitSeconds";
/** How often a waiting call reports progress, in milliseconds. */
const PROGRESS_INTERVAL_MS = 5_000;
/** The codes the SDK's transport answers session problems with (JSON-RPC's implementation-defined range). */
const BAD_REQUEST = -32000;
const SESSION_NOT_FOUND = -32001;
/** The body limit of one MCP request: a tool call of ≤ 1 MB of arguments, JSON-RPC framed. */
const MCP_BODY_BYTES = 2 * 1024 * 1024;

export interface McpRouteOptions {
  caches: Caches;
  toolCalls: ToolCallDeps;
  /** True once this replica is stopping: a waiting call answers "call again" at once. */
  stopping: () => boolean;
}

/**
 * The requests this replica is answering, by `<MCP session id>\u0000<request id>`: what ends one when
 * its client sends `notifications/cancelled` (closing its stream, which aborts its handler).
 */
type Open = Map<string, () => void>;

function requestKey(mcpSessionId: string, requestId: string | number): string {
  return `${mcpSessionId}\u0000${typeof requestId}:${requestId}`;
}

/** A JSON-RPC error answer without an id, as the transport answers malformed requests. */
function rpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply.code(status).send({ jsonrpc: "2.0", error: { code, message }, id: null });
}

type Message = { id?: unknown; method?: unknown; params?: { requestId?: unknown } };

function messagesOf(body: unknown): Message[] {
  const all = Array.isArray(body) ? body : [body];
  return all.filter((m): m is Message => typeof m === "object" && m !== null);
}

/** The message being answered: one per continuation of the session (spec.messages index). */
function messageIndexOf(session: AgentSession): number {
  return session.status?.continuations ?? 0;
}

/** The client's shorter approval wait from the call's `_meta`, within the endpoint's bound; in ms. */
export function approvalWaitMsOf(meta: Record<string, unknown> | undefined): number {
  const asked = meta?.[APPROVAL_WAIT_META];
  const seconds =
    typeof asked === "number" && Number.isFinite(asked) && asked >= 1
      ? Math.min(asked, MCP_APPROVAL_WAIT_SECONDS)
      : MCP_APPROVAL_WAIT_SECONDS;
  return Math.floor(seconds * 1000);
}

/** The SDK server answering one HTTP request of `session`'s MCP session `mcpSessionId`. */
function serverFor(
  options: McpRouteOptions,
  session: AgentSession,
  mcpSessionId: string,
  closed: AbortSignal,
): Server {
  const server = new Server(
    { name: "gatehouse", version: "1" },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        "These tools reach business systems through Gatehouse: every call is checked by policy, some " +
        `wait for a person's approval. End the session with ${FINAL_ANSWER_TOOL}.`,
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...sessionTools(options.caches, session).map(mcpToolOf), finalAnswerTool],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    if (name === FINAL_ANSWER_TOOL) return finalAnswer(options.toolCalls, session, args);
    if (!sessionTools(options.caches, session).some((tool) => tool.spec.name === name)) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
    const { turn, position } = callPositionOf(messageIndexOf(session), mcpSessionId, extra.requestId);
    const call = { turn, position, callId: `mcp-${position}`, tool: name, arguments: JSON.stringify(args) };
    const answer = await callTool(options.toolCalls, session, call);
    if (answer.status !== "pending_approval" || !answer.approval) return toolResultOf(answer);

    const progressToken = request.params._meta?.progressToken;
    const timeoutMs = approvalWaitMsOf(request.params._meta);
    const started = Date.now();
    let reported = 0;
    const approval = await waitForApproval(options.caches, {
      name: answer.approval.name,
      session,
      timeoutMs,
      signal: AbortSignal.any([extra.signal, closed]),
      stopping: options.stopping,
      onPending: async (pending) => {
        if (progressToken === undefined || (reported > 0 && Date.now() - reported < PROGRESS_INTERVAL_MS))
          return;
        reported = Date.now();
        await extra.sendNotification({
          method: "notifications/progress",
          params: {
            progressToken,
            progress: Math.round((reported - started) / 1000),
            total: Math.round(timeoutMs / 1000),
            message: `Waiting for a person to decide Approval ${pending.metadata.name} (${pending.status?.phase ?? ApprovalPhase.Pending}).`,
          },
        });
      },
    });
    const { core, transcripts } = options.toolCalls;
    const waited = await approvalWaitAnswer(core, transcripts, approval, Date.now() * 1000);
    // Past the bound, or cancelled (then nobody reads it): the Approval is left as it is.
    return toolResultOf(waited.answer ?? answer);
  });
  return server;
}

/** `gatehouse_final_answer`: the answer goes to the transcript as the builtin engine posts it. */
async function finalAnswer(
  deps: ToolCallDeps,
  session: AgentSession,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  if (typeof args.text !== "string" || args.text.length === 0) {
    return {
      content: [
        {
          type: "text",
          text: `${FINAL_ANSWER_TOOL} needs {"text": "<your final answer>"}; nothing was recorded.`,
        },
      ],
      isError: true,
    };
  }
  const turn = messageIndexOf(session);
  const payload = { turn, text: args.text.slice(0, FINAL_ANSWER_CHARS) };
  await admitIntake(deps, session, Buffer.byteLength(JSON.stringify(payload)));
  // Once per message: a repeated call (a retry, or the model calling it twice) keeps the first answer.
  const stored = await deps.transcripts.append({
    dedupeKey: `final_answer:mcp:${turn}`,
    sessionUid: session.metadata.uid,
    source: "agent",
    kind: "final_answer",
    payload,
    atMicros: Date.now() * 1000,
  });
  return finalAnswerResultOf(stored.payload, payload.text);
}

/** Registers `/mcp` on `scope`, which must carry the gateway's authentication hook (request.session). */
export async function mcpRoute(scope: FastifyInstance, options: McpRouteOptions): Promise<void> {
  const open: Open = new Map();
  // The SDK answers malformed JSON-RPC itself; fastify's parser would answer its own error shape.
  scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) =>
    done(null, body),
  );

  scope.get(MCP_ENDPOINT_PATH, async (_request, reply) =>
    reply
      .code(405)
      .header("allow", "POST, DELETE")
      .send({
        jsonrpc: "2.0",
        error: {
          code: BAD_REQUEST,
          message: "This server sends messages only on a request's stream.",
        },
        id: null,
      }),
  );

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const session = request.session;
    let body: unknown;
    if (request.method === "POST") {
      try {
        body = JSON.parse(typeof request.body === "string" ? request.body : "");
      } catch {
        return rpcError(reply, 400, ErrorCode.ParseError, "Parse error: the body is not JSON.");
      }
    }
    const problem = request.method === "POST" ? requestProblemOf(body) : undefined;
    if (problem) {
      return reply
        .code(problem.status)
        .send({ jsonrpc: "2.0", error: { code: problem.code, message: problem.message }, id: problem.id });
    }
    const messages = messagesOf(body);
    const initializing = messages.some((m) => m.method === "initialize");
    const header = request.headers["mcp-session-id"];
    let mcpSessionId = typeof header === "string" ? header : undefined;
    if (initializing) {
      mcpSessionId = newMcpSessionId(session.metadata.uid);
      reply.raw.setHeader("mcp-session-id", mcpSessionId);
    } else if (!mcpSessionId) {
      return rpcError(reply, 400, BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    } else if (!mcpSessionBelongsTo(mcpSessionId, session.metadata.uid)) {
      // Another session's id (or one never issued): not found for this caller, whoever holds it.
      return rpcError(reply, 404, SESSION_NOT_FOUND, "Session not found");
    }
    for (const message of messages) {
      if (message.method === "notifications/cancelled") {
        const requestId = message.params?.requestId;
        if (typeof requestId === "string" || typeof requestId === "number")
          open.get(requestKey(mcpSessionId, requestId))?.();
      }
    }
    const closed = new AbortController();
    const server = serverFor(options, session, mcpSessionId, closed.signal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const keys = messages.flatMap((m) =>
      typeof m.id === "string" || typeof m.id === "number" ? [requestKey(mcpSessionId, m.id)] : [],
    );
    // Cancelled, the request's stream ends (its handler's signal aborts): nothing is left waiting.
    const cancel = () => void transport.close();
    for (const key of keys) open.set(key, cancel);
    reply.raw.once("close", () => {
      for (const key of keys) if (open.get(key) === cancel) open.delete(key);
      closed.abort();
      void transport.close();
      void server.close();
    });
    reply.hijack();
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, body);
    } catch (error) {
      request.log.error({ err: error }, "mcp request failed");
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { "content-type": "application/json" });
        reply.raw.end(
          JSON.stringify({
            jsonrpc: "2.0",
            error: { code: ErrorCode.InternalError, message: "Internal error" },
            id: null,
          }),
        );
      }
    }
  };
  scope.post(MCP_ENDPOINT_PATH, { bodyLimit: MCP_BODY_BYTES }, handle);
  scope.delete(MCP_ENDPOINT_PATH, handle);
}
