/**
 * The agent's loop: the model (Chat Completions) chooses, the MCP server acts. It lists the server's
 * tools once, gives them to the model, runs each tool call the model makes with `tools/call` and hands
 * the result back, until the model calls `gatehouse_final_answer` — or answers without a tool call,
 * whose text it then sends as the final answer. Behind Gatehouse every `tools/call` is decided by
 * Core: the agent needs no policy of its own, and a refusal is a result the model reads.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type CallToolResult, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type OpenAI from "openai";
import { APIError } from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { argumentsOf, FINAL_ANSWER_TOOL, openAiToolsOf, pendingApprovalOf, resultText } from "./convert.ts";

export interface AgentOptions {
  /** The OpenAI client, pointed at the model proxy. */
  model: OpenAI;
  modelName: string;
  /** A connected MCP client. */
  mcp: Pick<Client, "listTools" | "callTool">;
  /** The conversation so far, ending with the user's message to answer. */
  messages: ChatCompletionMessageParam[];
  /** The most model replies with tool calls before the agent gives up (the session's maxToolCalls bounds it anyway). */
  maxSteps: number;
  log: (line: string) => void;
}

/**
 * Runs `name` with `args` until it is settled: a call waiting for a person's approval keeps its
 * request open (the server reports progress, which keeps the SDK's request timeout from firing) and,
 * when the server's wait ends first, is called again with the same arguments — Gatehouse answers the
 * repeat from the same Approval, so the action never runs twice.
 */
async function settledCall(options: AgentOptions, name: string, args: Record<string, unknown>) {
  for (;;) {
    let result: CallToolResult;
    try {
      result = (await options.mcp.callTool({ name, arguments: args }, undefined, {
        resetTimeoutOnProgress: true,
        onprogress: (progress) => options.log(progress.message ?? `${name}: still waiting`),
      })) as CallToolResult;
    } catch (error) {
      // A tool the server does not offer: the model made the name up, and may correct it.
      if (error instanceof McpError && error.code === ErrorCode.InvalidParams)
        return { content: [{ type: "text", text: error.message }], isError: true } satisfies CallToolResult;
      throw error;
    }
    const approval = pendingApprovalOf(result);
    if (approval === undefined) return result;
    options.log(`${name} waits for a person to decide Approval ${approval}; calling it again`);
  }
}

/** Sends `text` as the session's final answer. Throws when the server does not accept it. */
async function finish(options: AgentOptions, text: string): Promise<string> {
  const result = (await options.mcp.callTool({
    name: FINAL_ANSWER_TOOL,
    arguments: { text },
  })) as CallToolResult;
  if (result.isError) throw new Error(`${FINAL_ANSWER_TOOL} was refused: ${resultText(result)}`);
  options.log("final answer sent");
  return text;
}

/**
 * Plays the conversation to its end and returns the final answer the server accepted. Throws when the
 * model or the server fails (the SDKs' errors, which name the status and the cause), when the model
 * asks for a final answer without text, or after `maxSteps` replies that only called tools.
 */
export async function runAgent(options: AgentOptions): Promise<string> {
  const { tools } = await options.mcp.listTools();
  if (!tools.some((tool) => tool.name === FINAL_ANSWER_TOOL)) {
    throw new Error(`the MCP server offers no ${FINAL_ANSWER_TOOL} tool: is it Gatehouse's /mcp endpoint?`);
  }
  options.log(`tools: ${tools.map((tool) => tool.name).join(", ")}`);
  const messages = [...options.messages];
  for (let step = 0; step < options.maxSteps; step++) {
    const completion = await options.model.chat.completions.create({
      model: options.modelName,
      messages,
      tools: openAiToolsOf(tools),
    });
    const reply = completion.choices[0]?.message;
    if (!reply) throw new Error("the model answered with no message");
    const calls = (reply.tool_calls ?? []).filter((call) => call.type === "function");
    if (calls.length === 0) return finish(options, reply.content ?? "");
    messages.push({ role: "assistant", content: reply.content, tool_calls: calls });
    for (const call of calls) {
      const { name } = call.function;
      const args = argumentsOf(call.function.arguments);
      if (!args.ok) {
        messages.push({ role: "tool", tool_call_id: call.id, content: args.message });
        continue;
      }
      if (name === FINAL_ANSWER_TOOL) {
        if (typeof args.value.text !== "string" || args.value.text === "")
          throw new Error(`the model called ${FINAL_ANSWER_TOOL} without text`);
        return finish(options, args.value.text);
      }
      options.log(`calling ${name}`);
      const result = await settledCall(options, name, args.value);
      options.log(`${name}: ${result.isError ? "refused or failed" : "done"}`);
      messages.push({ role: "tool", tool_call_id: call.id, content: resultText(result) });
    }
  }
  throw new Error(
    `the model still called tools after ${options.maxSteps} replies; giving up without an answer`,
  );
}

/** The exit code of a failure that a new pod of the session would meet the same way (Gatehouse does not retry it). */
export const EXIT_FINAL = 2;

/**
 * The exit code for `error`: 2 (final) when the model proxy refused the request with a 4xx other than
 * 408 and 429 — the same request from a new pod is refused again (a bad request, a model not allowed,
 * the token budget used up); 1 otherwise (the gateway or the model failing, a timeout, a rate limit),
 * and Gatehouse starts a new pod while the session has retries left.
 */
export function exitCodeOf(error: unknown): 1 | 2 {
  if (!(error instanceof APIError) || error.status === undefined) return 1;
  const { status } = error;
  return status >= 400 && status < 500 && status !== 408 && status !== 429 ? EXIT_FINAL : 1;
}
