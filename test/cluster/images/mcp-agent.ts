/**
 * The `gatehouse/mcp-agent:dev` image: an agent that speaks only MCP to the gateway, for the MCP
 * endpoint's tests. It reads its session's first message (`GET /v1/session`, as any launcher learns
 * its task); a message `mcp-answer: TEXT` makes it connect to `$GATEHOUSE_GATEWAY_URL/mcp` with the
 * SDK's client, call `gatehouse_final_answer` with TEXT and exit 0, as an MCP agent ends its work.
 * Any other message: it sleeps until stopped (SIGTERM: exit 0), as the sleeper image does.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const gateway = process.env.GATEHOUSE_GATEWAY_URL ?? "";
// On the local node a mount path is read under the pod's root (LOCAL_NODE_ROOT), as the agent image does.
const tokenFile = join(process.env.LOCAL_NODE_ROOT ?? "", process.env.GATEHOUSE_TOKEN_FILE ?? "");
const token = () => readFileSync(tokenFile, "utf8").trim();
const ANSWER = "mcp-answer: ";

/**
 * `attempt` until it succeeds, for up to a minute: right after the pod starts the gateway may not
 * know it yet (its caches lag the API server), as the builtin agent's gateway client allows for.
 */
async function retried<T>(what: string, attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      console.error(`${what} failed, retrying: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

const view = await retried("GET /v1/session", async () => {
  const response = await fetch(`${gateway}/v1/session`, { headers: { authorization: `Bearer ${token()}` } });
  if (!response.ok) throw new Error(`GET /v1/session answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { messages: Array<{ text: string }> };
});
const message = view.messages[0]?.text ?? "";
if (!message.startsWith(ANSWER)) {
  console.log("no MCP task: sleeping");
  process.on("SIGTERM", () => process.exit(0));
  setInterval(() => {}, 1 << 30);
} else {
  // A repeated final answer keeps the first: the whole exchange may be retried.
  const result = await retried("the MCP final answer", async () => {
    const transport = new StreamableHTTPClientTransport(new URL("/mcp", gateway), {
      // The node refreshes the token: read it for every request.
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set("authorization", `Bearer ${token()}`);
        return fetch(input, { ...init, headers });
      },
    });
    const client = new Client({ name: "gatehouse-mcp-agent", version: "1" });
    await client.connect(transport);
    try {
      return await client.callTool({
        name: "gatehouse_final_answer",
        arguments: { text: message.slice(ANSWER.length) },
      });
    } finally {
      await client.close();
    }
  });
  console.log(`final answer: ${JSON.stringify(result)}`);
  process.exit(result.isError ? 1 : 0);
}
