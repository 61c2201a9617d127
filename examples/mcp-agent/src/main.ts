/**
 * An agent of your own behind Gatehouse (`spec.engine: external`): it reads its task from the
 * gateway, reaches the session's tools over MCP (Streamable HTTP) with `@modelcontextprotocol/sdk`,
 * asks its model through the gateway's model proxy with the `openai` SDK, and ends with
 * `gatehouse_final_answer`. It holds no model key and no business credential: the pod's projected
 * token is its only secret, and the gateway is the only host it reaches.
 *
 * Exit codes: 0 the final answer is recorded (or every message was answered already); 1 the model or
 * the gateway failed and a new pod may succeed (Gatehouse retries it); 2 a failure a new pod would
 * meet again — the model proxy refused the request (a 4xx other than 408 and 429) or the configuration
 * is incomplete (Gatehouse does not retry it). A failure is also posted to the session as an `error`
 * event, which the session's status message then shows.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";
import { exitCodeOf, runAgent } from "./agent.ts";
import { conversationOf } from "./convert.ts";
import { gatewayFetch, postError, readTask, readToken } from "./gateway.ts";

const USAGE = `Usage: node examples/mcp-agent/src/main.ts

An MCP client agent for a Gatehouse AgentSession with spec.engine: external. The agent pod sets:
  GATEHOUSE_GATEWAY_URL  the gateway: GET /v1/session is the task (instructions, messages, model)
  GATEHOUSE_MCP_URL      the gateway's MCP endpoint (default: $GATEHOUSE_GATEWAY_URL/mcp)
  GATEHOUSE_TOKEN_FILE   the pod's projected token: the bearer for the gateway, MCP and the model proxy
  OPENAI_BASE_URL        the gateway's model proxy, OpenAI-compatible (MODEL_BASE_URL is read too)
  LOCAL_NODE_ROOT        the local test node's pod root, prefixed to GATEHOUSE_TOKEN_FILE (unset elsewhere)

Exit codes: 0 the final answer is recorded; 1 a failure a new pod may not meet (retried);
2 a failure a new pod would meet again: the model proxy's 4xx (not 408/429), configuration missing.
`;

const log = (line: string) => console.log(`mcp-agent: ${line}`);

function fail(message: string, code: number): never {
  console.error(`mcp-agent: ${message}`);
  process.exit(code);
}

if (process.argv.includes("--help")) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const env = process.env;
const gatewayUrl = env.GATEHOUSE_GATEWAY_URL ?? "";
if (!gatewayUrl || !env.GATEHOUSE_TOKEN_FILE) {
  fail("GATEHOUSE_GATEWAY_URL and GATEHOUSE_TOKEN_FILE must be set (a Gatehouse agent pod sets both)", 2);
}
const tokenFile = join(env.LOCAL_NODE_ROOT ?? "", env.GATEHOUSE_TOKEN_FILE);
const mcpUrl = env.GATEHOUSE_MCP_URL || `${gatewayUrl.replace(/\/+$/, "")}/mcp`;
const modelUrl = env.OPENAI_BASE_URL || env.MODEL_BASE_URL || `${gatewayUrl.replace(/\/+$/, "")}/v1/model`;

const fetchGateway = gatewayFetch(tokenFile, log);
// The message being answered, once known: the turn an error is reported for.
let turn = 0;
try {
  const task = await readTask(gatewayUrl, fetchGateway);
  const conversation = conversationOf(task.instructions, task.messages, task.answers);
  if (!conversation) {
    log(`every message of ${task.name} is answered`);
    process.exit(0);
  }
  turn = conversation.index;
  log(`answering message ${conversation.index} of ${task.name} with model ${task.model.name}`);

  const mcp = new Client({ name: "gatehouse-example-mcp-agent", version: "0.1.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: fetchGateway }));
  // The model proxy takes the same token as its API key and adds the real key itself.
  const model = new OpenAI({ baseURL: modelUrl, apiKey: async () => readToken(tokenFile), maxRetries: 5 });
  try {
    await runAgent({
      model,
      modelName: task.model.name,
      mcp,
      messages: conversation.messages,
      maxSteps: task.limits.maxToolCalls + 1,
      log,
    });
  } finally {
    await mcp.close();
  }
  process.exit(0);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  await postError(gatewayUrl, fetchGateway, turn, message, log);
  fail(message, exitCodeOf(error));
}
