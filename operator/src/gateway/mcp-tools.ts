/**
 * The pure parts of the MCP endpoint (mcp.ts): the session's tools as MCP tools (names, schemas,
 * annotations), Core's answers as MCP tool results, the MCP session id and the turn and position a
 * `tools/call` is invoked as. No I/O: each is unit-tested in mcp-tools.test.ts.
 */
import { createHash, randomUUID } from "node:crypto";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import type { SessionTool } from "./session-tools.ts";

/** The tool an MCP-only agent ends its session with: its answer goes to the transcript as `final_answer`. */
export const FINAL_ANSWER_TOOL = "gatehouse_final_answer";
/** The longest final answer stored, in characters (the agent protocol's AgentEvent text bound). */
export const FINAL_ANSWER_CHARS = 65_536;

export const finalAnswerTool: Tool = {
  name: FINAL_ANSWER_TOOL,
  description:
    "End this session with your final answer to the user's message. Call it once, when you are done; " +
    "after it the session is complete and no more tool calls are accepted for this message.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The final answer, as the user will read it." } },
    required: ["text"],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
};

/**
 * The answer to `gatehouse_final_answer` once the transcript holds `stored` (the payload of the
 * message's final_answer event, this call's or an earlier one's: a repeat appends nothing). Recorded
 * only when the stored text is this call's; another text is an earlier answer, kept, so the agent is
 * told that its new one was not.
 */
export function finalAnswerResultOf(stored: Readonly<Record<string, unknown>>, text: string): CallToolResult {
  if (stored.text !== text) {
    return {
      content: [
        { type: "text", text: "A final answer for this session is already recorded; this one was not kept." },
      ],
      isError: true,
    };
  }
  return {
    content: [{ type: "text", text: "Your final answer is recorded and the session is complete. Stop now." }],
  };
}

/**
 * The MCP annotations of a capability: a read only reads; a write may change or destroy business
 * data (a draft only prepares one); a call is idempotent when it reads or its provider deduplicates
 * (idempotency `key` or `natural`). Hints only: Gatehouse's policy, not the client, decides.
 */
export function annotationsOf(
  tool: Pick<SessionTool, "effect" | "idempotency">,
): NonNullable<Tool["annotations"]> {
  return {
    readOnlyHint: tool.effect === "read",
    destructiveHint: tool.effect === "write",
    idempotentHint: tool.effect === "read" || tool.idempotency !== "none",
    openWorldHint: true,
  };
}

/** A session tool as MCP lists it: the capability's tool name, description and input schema. */
export function mcpToolOf(tool: SessionTool): Tool {
  return {
    name: tool.spec.name,
    description: tool.spec.description,
    inputSchema: { type: "object", ...tool.spec.parameters } as Tool["inputSchema"],
    annotations: annotationsOf(tool),
  };
}

/** Statuses whose result the model gets as an error: it did not happen and will not as asked. */
const ERROR_STATUSES = new Set<InvokeAnswer["status"]>(["failed", "denied", "invalid_arguments", "unknown"]);

/**
 * Core's answer as the model reads it. Successes carry the provider's result; denials, invalid
 * arguments, business refusals and unknown outcomes are `isError` results worded for the model; an
 * answer still pending after the wait names the Approval and asks for the same call again.
 */
export function toolResultOf(answer: InvokeAnswer): CallToolResult {
  if (answer.status === "pending_approval") {
    const name = answer.approval?.name ?? "(unnamed)";
    return {
      content: [
        {
          type: "text",
          text:
            `This call is waiting for a person to approve it (Approval ${name}); it has not run yet. ` +
            "Call this tool again with exactly the same arguments to keep waiting: the repeat is " +
            "answered from the same Approval and never runs the action twice.",
        },
      ],
      structuredContent: { status: answer.status, approval: name },
      isError: false,
    };
  }
  const prefix =
    answer.status === "denied"
      ? "Gatehouse refused this call: "
      : answer.status === "invalid_arguments"
        ? "The arguments were not accepted, nothing was done: "
        : answer.status === "failed"
          ? "The business system refused or failed this call: "
          : answer.status === "unknown"
            ? "The outcome of this call is unknown: "
            : "";
  return {
    content: [{ type: "text", text: `${prefix}${answer.content}` }],
    ...(ERROR_STATUSES.has(answer.status) ? { isError: true } : {}),
  };
}

/** What the endpoint refuses before the SDK reads a body: the HTTP status and JSON-RPC error. */
export interface RequestProblem {
  status: number;
  code: number;
  message: string;
  id: string | number | null;
}

/** JSON-RPC's codes for a request that is not one (an empty batch) and for invalid params. */
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The problem of a parsed POST body the SDK would answer unclearly, or none: an empty batch is
 * JSON-RPC's Invalid Request (the SDK answers it 202, as if it held only notifications); a
 * `tools/call` without a string `name`, or with `arguments` that is not an object, is invalid params
 * (the SDK answers -32603 with its schema's dump). A single request's problem is answered under its
 * id; one in a batch refuses the batch, nothing of it done.
 */
export function requestProblemOf(body: unknown): RequestProblem | undefined {
  if (Array.isArray(body) && body.length === 0) {
    return { status: 400, code: INVALID_REQUEST, message: "Invalid Request: an empty batch", id: null };
  }
  const messages = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    // Not JSON-RPC 2.0: the SDK answers it (parse error).
    if (!isObject(message) || message.jsonrpc !== "2.0" || message.method !== "tools/call") continue;
    const params = message.params;
    if (
      isObject(params) &&
      typeof params.name === "string" &&
      (params.arguments === undefined || isObject(params.arguments))
    )
      continue;
    const id = typeof message.id === "string" || typeof message.id === "number" ? message.id : null;
    return {
      status: Array.isArray(body) ? 400 : 200,
      code: INVALID_PARAMS,
      message: "tools/call needs params.name (a string) and params.arguments (an object)",
      id: Array.isArray(body) ? null : id,
    };
  }
  return undefined;
}

/**
 * MCP session ids: `<AgentSession uid>.<random>`. Any replica checks one against the session its
 * caller's token authenticated, with no shared state: an id of another session is not found.
 */
export function newMcpSessionId(sessionUid: string): string {
  return `${sessionUid}.${randomUUID()}`;
}

/** True when `mcpSessionId` was issued to the AgentSession `sessionUid`. */
export function mcpSessionBelongsTo(mcpSessionId: string, sessionUid: string): boolean {
  return mcpSessionId.startsWith(`${sessionUid}.`) && mcpSessionId.length > sessionUid.length + 1;
}

/** Positions are 48-bit: exact in a JSON number and in Postgres, and collisions are negligible. */
const POSITION_BITS = 48;

/**
 * The turn and position Core's invoke gets for a `tools/call` (Core identifies a call by session,
 * turn, position, tool and arguments). An MCP client numbers no turns: the turn is the message
 * being answered (`spec.messages` index: the session's continuations). The position is a 48-bit
 * digest of the MCP session id and the JSON-RPC request id, both of which a client keeps when it
 * resends a request and changes for any other request — so a resent call is the same call on any
 * replica, and two requests are one call only if their ids collide (2^-48) with the same tool and
 * arguments.
 */
export function callPositionOf(
  messageIndex: number,
  mcpSessionId: string,
  requestId: string | number,
): { turn: number; position: number } {
  const digest = createHash("sha256")
    .update(`${mcpSessionId}\u0000${typeof requestId}:${requestId}`)
    .digest();
  return { turn: messageIndex, position: digest.readUIntBE(0, POSITION_BITS / 8) };
}
