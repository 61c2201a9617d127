/**
 * The gateway's MCP endpoint (`/mcp`, operator/src/gateway/mcp.ts) on the real control plane, driven
 * by the MCP SDK's own Client over Streamable HTTP with a sleeping session's pod token — the test is
 * the MCP-capable agent. The business side is the counting provider, whose ledger shows how often a
 * call reached it. Raw HTTP is used only where the SDK client cannot say it (a malformed body, a
 * newer protocol revision, a cancelled stream read to its end). Two other clients run once: Python's
 * `mcp` package, and Codex's own MCP client (codex-mcp-client.ts), driven as a user interface drives it.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import {
  answerMessages,
  type CodexMessage,
  type McpExchange,
  methodsOf,
  recordMcpExchanges,
  startCodexMcpClient,
} from "./codex-mcp-client.ts";
import {
  coreNamespace,
  createAliceSession,
  getSession,
  getSessionView,
  podToken,
  type SleepingSession,
  sleepingSession,
} from "./core-agent.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { decisionPatch, eventually } from "./story.ts";

const PLACE = "ct.order.place"; // write: approval Required by default
const PUBLISH = "ct.plan.publish"; // write with a plan target: planId and version required
const READ = "ct.stock.read"; // read: Auto
const BANNED = "ct.order.cancel"; // write, policy approval Forbidden
const RESERVED = "ct.stock.audit"; // read offered to bob only, not to alice's sessions
const APPROVAL_WAIT_META = "gatehouse.dev/approvalWaitSeconds";
/** Agent pods sleep, or answer their session over MCP and exit (test/cluster/images/mcp-agent.ts). */
const MCP_AGENT_IMAGE = "gatehouse/mcp-agent:dev";
/** Python's `mcp` package, an MCP client written apart from the SDK the gateway uses. */
const PYTHON_CLIENT = join(import.meta.dirname, "..", "mcp-python", "client.py");
const pythonMcp = spawnSync("python3", ["-c", "import mcp"], { encoding: "utf8" });
const PYTHON_MCP_MISSING =
  pythonMcp.status === 0
    ? undefined
    : `python3 cannot import mcp (${(pythonMcp.stderr || pythonMcp.error?.message || "").trim().split("\n").at(-1)}); install it with pip install mcp`;
/** The scripted model's script Codex plays (test/fakes/scripts/codex-mcp.yaml). */
const CODEX_MODEL = "scripted/codex-mcp";
/** A revision newer than the SDK knows (the next stateless one upstream). */
const NEWER_REVISION = "2026-07-28";

let env: Environment;
let namespace: string;
let counter: Ledger;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: { AGENT_IMAGE: MCP_AGENT_IMAGE } });
  namespace = await coreNamespace(env, "mcp");
  counter = await deployCounter(
    env,
    namespace,
    "counter",
    [
      { id: PLACE, effect: "write" },
      { id: PUBLISH, effect: "write", target: true },
      { id: READ, effect: "read", idempotency: "none" },
      { id: BANNED, effect: "write" },
      { id: RESERVED, effect: "read" },
    ],
    { [BANNED]: { approval: "Forbidden" }, [RESERVED]: { subjects: { users: ["bob"] } } },
  );
}, 600_000);

afterAll(async () => {
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

function mcpUrl(): URL {
  return new URL("/mcp", env.gatewayUrl);
}

/** An SDK client connected (initialize done) with `token` as the pod's bearer token. */
async function connect(token: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(mcpUrl(), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "gatehouse-e2e", version: "1" });
  await client.connect(transport);
  return { client, transport };
}

async function agentOf(prefix: string) {
  const session = await sleepingSession(env, namespace, prefix);
  const token = await podToken(env, session);
  return { session, token, ...(await connect(token)) };
}

interface RawReply {
  status: number;
  headers: Headers;
  /** JSON-RPC messages: the JSON body, or every `data:` event of an SSE body. */
  messages: Array<Record<string, unknown>>;
  text: string;
}

/** One POST to /mcp as a client would send it; the body is sent as given when it is a string. */
async function rawPost(
  token: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(mcpUrl(), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

function messagesOf(text: string): Array<Record<string, unknown>> {
  if (!text.trim()) return [];
  if (text.trimStart().startsWith("{")) return [JSON.parse(text)];
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.slice(5).trim())
    .map((line) => JSON.parse(line.slice(5)));
}

async function readReply(response: Response): Promise<RawReply> {
  const text = await response.text();
  return { status: response.status, headers: response.headers, messages: messagesOf(text), text };
}

async function transcriptOf(
  sessionUid: string,
): Promise<Array<{ kind: string; source: string; payload: Record<string, unknown> }>> {
  const result = await env.pool.query(
    "SELECT kind, source, payload FROM session_events WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return result.rows;
}

async function auditKindsOf(sessionUid: string): Promise<string[]> {
  const result = await env.pool.query<{ kind: string }>(
    "SELECT kind FROM audit_log WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return result.rows.map((row) => row.kind);
}

interface ApprovalObject {
  metadata: { name: string };
  spec: { sessionRef: { uid: string } };
  status?: { phase?: string };
}

async function approvalsOf(session: SleepingSession): Promise<ApprovalObject[]> {
  const list = await env.kubectl.json<{ items: ApprovalObject[] }>("admin", [
    "get",
    "approvals",
    "-n",
    namespace,
  ]);
  return list.items.filter((a) => a.spec.sessionRef.uid === session.uid);
}

function approvalInPhase(name: string, phase: string): Promise<ApprovalObject> {
  return eventually(`Approval ${name} to be ${phase}`, 120_000, async () => {
    const approval = await env.kubectl.json<ApprovalObject>("admin", [
      "get",
      "approval",
      name,
      "-n",
      namespace,
    ]);
    return approval.status?.phase === phase ? approval : undefined;
  });
}

async function approve(name: string): Promise<void> {
  await env.kubectl.ok("alice", [
    "patch",
    "approval",
    name,
    "-n",
    namespace,
    "--type",
    "json",
    "-p",
    decisionPatch("alice", "Approve"),
  ]);
}

/**
 * What the agent pods of session `name` printed so far (the local node's container logs), merged into
 * `seen`: a pod's directory goes with the pod, so a test reads them while it waits.
 */
function collectAgentLogs(name: string, seen: Map<string, string>): void {
  const podsDir = join(clusterInfo().runDir, "pods");
  for (const dir of readdirSync(podsDir).filter((d) => d.startsWith(`${namespace}_${name}-`))) {
    try {
      seen.set(dir, readFileSync(join(podsDir, dir, "logs", "agent.log"), "utf8").slice(-3000));
    } catch {}
  }
}

/** The text of a tool result's first content block. */
function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ text?: string }> }).content;
  return content?.[0]?.text ?? "";
}

describe("an MCP client in an agent pod", () => {
  it("initializes at the SDK's revision with an MCP session id bound to its AgentSession", async () => {
    const { session, client, transport } = await agentOf("mcp-init");
    expect(LATEST_PROTOCOL_VERSION).toBe("2025-11-25");
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(transport.sessionId?.startsWith(`${session.uid}.`)).toBe(true);
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    await client.close();
  });

  it("lists exactly the session's tools by the rule of GET /v1/session, with their schemas and annotations", async () => {
    const { token, client } = await agentOf("mcp-list");
    const { tools } = await client.listTools();
    const view = (await getSessionView(env, token)).body as {
      tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
    };
    const offered = [PLACE, PUBLISH, READ, BANNED].map(toolName).sort();
    expect(view.tools.map((t) => t.name).sort()).toEqual(offered);
    expect(tools.map((t) => t.name).sort()).toEqual([...offered, "gatehouse_final_answer"].sort());
    for (const spec of view.tools) {
      const tool = tools.find((t) => t.name === spec.name);
      expect(tool?.inputSchema).toEqual(spec.parameters);
      expect(tool?.description).toBe(spec.description);
    }
    const annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(annotations[toolName(READ)]).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
    });
    expect(annotations[toolName(PLACE)]).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true, // the counter deduplicates by idempotency key
    });
    await client.close();
  });

  it("runs an allowed call once and records its tool_call and tool_result as POST /v1/invoke does", async () => {
    const { session, client } = await agentOf("mcp-read");
    const mark = await counter.mark();
    const result = await client.callTool({ name: toolName(READ), arguments: { sku: "A-1" } });
    expect(result.isError).toBeFalsy();
    expect((await mark.calls()).map((c) => c.capability)).toEqual([READ]);
    const transcript = await transcriptOf(session.uid);
    expect(transcript.map((e) => [e.kind, e.source])).toEqual([
      ["tool_call", "agent"],
      ["tool_result", "core"],
    ]);
    expect(transcript[0]?.payload).toMatchObject({
      tool: toolName(READ),
      arguments: '{"sku":"A-1"}',
      turn: 0,
    });
    expect(transcript[1]?.payload).toMatchObject({ status: "succeeded", effect: "read" });
    await client.close();
  });

  it("keeps a call that needs approval open with progress notifications, then returns the outcome; the provider is called once", async () => {
    const { session, client } = await agentOf("mcp-wait");
    const mark = await counter.mark();
    let progressed!: () => void;
    const firstProgress = new Promise<void>((resolve) => {
      progressed = resolve;
    });
    const progress: string[] = [];
    const call = client.callTool({ name: toolName(PLACE), arguments: { orderId: "MCP-1" } }, undefined, {
      onprogress: (p) => {
        progress.push(p.message ?? "");
        progressed();
      },
    });
    await firstProgress;
    const [approval] = await approvalsOf(session);
    expect(approval?.status?.phase ?? "Pending").toBe("Pending");
    expect(progress[0]).toContain(approval?.metadata.name);
    await approve(approval?.metadata.name ?? "");
    const result = await call;
    expect(result.isError).toBeFalsy();
    expect((await mark.effects()).map((e) => e.capability)).toEqual([PLACE]);
    expect((await mark.calls()).length).toBe(1);
    await client.close();
  });

  it("past the bound names the Approval, and the same call again is answered from the record", async () => {
    const { session, client } = await agentOf("mcp-bound");
    const mark = await counter.mark();
    const args = { orderId: "MCP-2" };
    const first = await client.callTool({
      name: toolName(PLACE),
      arguments: args,
      _meta: { [APPROVAL_WAIT_META]: 1 },
    });
    const name = (first.structuredContent as { approval?: string } | undefined)?.approval ?? "";
    expect(first.isError).toBeFalsy();
    expect(textOf(first)).toContain(`Approval ${name}`);
    expect((await approvalsOf(session)).map((a) => a.metadata.name)).toEqual([name]);
    expect(await mark.calls()).toEqual([]);
    await approve(name);
    await approvalInPhase(name, "Succeeded");
    const again = await client.callTool({ name: toolName(PLACE), arguments: args });
    expect(again.isError).toBeFalsy();
    expect(textOf(again)).not.toContain("waiting");
    expect((await mark.effects()).map((e) => e.capability)).toEqual([PLACE]);
    expect((await approvalsOf(session)).length).toBe(1);
    await client.close();
  });

  it("stops waiting when the client cancels, and leaves the Approval pending", async () => {
    const { session, token, transport, client } = await agentOf("mcp-cancel");
    const headers = {
      "mcp-session-id": transport.sessionId ?? "",
      "mcp-protocol-version": transport.protocolVersion ?? "",
    };
    const mark = await counter.mark();
    const response = await rawPost(
      token,
      {
        jsonrpc: "2.0",
        id: 41,
        method: "tools/call",
        params: { name: toolName(PLACE), arguments: { orderId: "MCP-3" }, _meta: { progressToken: "p41" } },
      },
      headers,
    );
    expect(response.status).toBe(200);
    const reader = response.body?.getReader();
    if (!reader) throw new Error("no stream");
    let seen = "";
    while (!seen.includes("notifications/progress")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended before any progress: ${seen}`);
      seen += new TextDecoder().decode(chunk.value);
    }
    const cancel = await rawPost(
      token,
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 41, reason: "user stop" } },
      headers,
    );
    expect(cancel.status).toBe(202);
    // The stream ends without an answer to request 41 (a wait that went on would answer at its bound).
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      seen += new TextDecoder().decode(chunk.value);
    }
    expect(messagesOf(seen).filter((m) => m.id === 41)).toEqual([]);
    const [approval] = await approvalsOf(session);
    expect(approval?.status?.phase ?? "Pending").toBe("Pending");
    expect(await mark.calls()).toEqual([]);
    // Closing the stream is a cancellation too: the Approval stays as it was.
    const closing = new AbortController();
    const second = await rawPost(
      token,
      {
        jsonrpc: "2.0",
        id: 42,
        method: "tools/call",
        params: { name: toolName(PLACE), arguments: { orderId: "MCP-3" }, _meta: { progressToken: "p42" } },
      },
      headers,
      closing.signal,
    );
    const secondReader = second.body?.getReader();
    await secondReader?.read();
    closing.abort();
    const again = await approvalsOf(session);
    expect(again.map((a) => [a.metadata.name, a.status?.phase ?? "Pending"])).toEqual([
      [approval?.metadata.name, "Pending"],
    ]);
    await client.close();
  });

  it("is served by any gateway replica: a session initialized on one calls on another", async () => {
    const second = await env.startReplica("gateway", "mcp-second");
    try {
      const { session, token, transport, client } = await agentOf("mcp-replicas");
      const elsewhere = new StreamableHTTPClientTransport(new URL("/mcp", second.gatewayUrl), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
        ...(transport.sessionId ? { sessionId: transport.sessionId } : {}),
      });
      const resumed = new Client({ name: "gatehouse-e2e", version: "1" });
      // A transport that has a session id skips initialize: this replica never saw the session start.
      await resumed.connect(elsewhere);
      expect((await resumed.listTools()).tools.map((t) => t.name)).toContain(toolName(READ));
      const result = await resumed.callTool({ name: toolName(READ), arguments: { sku: "R-2" } });
      expect(result.isError).toBeFalsy();
      expect((await transcriptOf(session.uid)).map((e) => e.kind)).toEqual(["tool_call", "tool_result"]);
      await resumed.close();
      await client.close();
    } finally {
      await second.kill("SIGTERM");
    }
  });

  it("returns a denial as an error result worded for the model", async () => {
    const { client } = await agentOf("mcp-deny");
    const mark = await counter.mark();
    const result = await client.callTool({ name: toolName(BANNED), arguments: { orderId: "MCP-4" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Gatehouse refused this call: /);
    expect(await mark.calls()).toEqual([]);
    await client.close();
  });

  it("returns invalid arguments as an error result and never calls the provider", async () => {
    const { session, client } = await agentOf("mcp-invalid");
    const mark = await counter.mark();
    const result = await client.callTool({ name: toolName(PUBLISH), arguments: { planId: "", version: 0 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^The arguments were not accepted, nothing was done: /);
    expect(await mark.calls()).toEqual([]);
    expect(await approvalsOf(session)).toEqual([]);
    await client.close();
  });

  it("records one final answer per message for gatehouse_final_answer, the first", async () => {
    const { session, client } = await agentOf("mcp-final");
    const result = await client.callTool({
      name: "gatehouse_final_answer",
      arguments: { text: "Three orders placed." },
    });
    expect(result.isError).toBeFalsy();
    const again = await client.callTool({
      name: "gatehouse_final_answer",
      arguments: { text: "Changed my mind." },
    });
    expect(again.isError).toBe(true);
    expect(again.content).toEqual([
      { type: "text", text: "A final answer for this session is already recorded; this one was not kept." },
    ]);
    const finals = (await transcriptOf(session.uid)).filter((e) => e.kind === "final_answer");
    expect(finals.map((e) => [e.source, e.payload.turn, e.payload.text])).toEqual([
      ["agent", 0, "Three orders placed."],
    ]);
    await client.close();
  });

  it("completes the session of an MCP-only agent that answers with gatehouse_final_answer and exits", async () => {
    const name = `mcp-done-${Date.now().toString(36)}`;
    await createAliceSession(env, namespace, name, {
      messages: [{ text: "mcp-answer: Two orders placed." }],
    });
    const logs = new Map<string, string>();
    const printed = () => [...logs].map(([pod, text]) => `\n--- ${pod}:\n${text}`).join("");
    const done = await eventually("the session to complete", 180_000, async () => {
      collectAgentLogs(name, logs);
      const object = (await getSession(env, namespace, name)) as {
        status?: { phase?: string; reason?: string; result?: string };
      };
      return object.status?.phase === "Completed" || object.status?.phase === "Failed" ? object : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}${printed()}`);
    });
    expect(done.status, printed()).toMatchObject({ phase: "Completed", result: "Two orders placed." });
  });
});

describe("another MCP client", () => {
  it("Python's mcp package initializes, lists the tools and calls one", async (context) => {
    if (PYTHON_MCP_MISSING) {
      console.log(`skipped: ${PYTHON_MCP_MISSING}`);
      context.skip(PYTHON_MCP_MISSING);
    }
    const session = await sleepingSession(env, namespace, "mcp-python");
    const token = await podToken(env, session);
    const run = spawnSync(
      "python3",
      [PYTHON_CLIENT, mcpUrl().toString(), token, toolName(READ), JSON.stringify({ sku: "PY-1" })],
      { encoding: "utf8" },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      protocolVersion: "2025-11-25",
      tools: [...[PLACE, PUBLISH, READ, BANNED].map(toolName), "gatehouse_final_answer"].sort(),
      isError: false,
    });
    expect((await transcriptOf(session.uid)).map((e) => e.kind)).toEqual(["tool_call", "tool_result"]);
  });
});

/** The `tools/call` exchanges of tool `name`, and each one's JSON-RPC request id. */
function toolCallsOf(exchanges: McpExchange[], name: string): Array<{ exchange: McpExchange; id: number }> {
  return exchanges.flatMap((exchange) => {
    const body = exchange.body as { id?: number; method?: string; params?: { name?: string } } | undefined;
    return body?.method === "tools/call" && body.params?.name === name && typeof body.id === "number"
      ? [{ exchange, id: body.id }]
      : [];
  });
}

/** The text of the JSON-RPC result answering request `id` in `exchange`, if one came. */
function resultTextOf(exchange: McpExchange, id: number): string | undefined {
  const answer = answerMessages(exchange).find((m) => m.id === id) as
    | { result?: { content?: Array<{ text?: string }>; isError?: boolean } }
    | undefined;
  return answer?.result?.content?.[0]?.text;
}

/** Codex's notification that its MCP call `tool` (an `mcpToolCall` item) ended. */
function mcpCallCompleted(tool: string) {
  return (m: CodexMessage) =>
    m.method === "item/completed" &&
    (m.params.item as { type?: string; tool?: string }).type === "mcpToolCall" &&
    (m.params.item as { tool?: string }).tool === tool;
}

describe("Codex's MCP client", () => {
  it("initializes, lists, calls, waits on an Approval with progress and cancels the wait when its turn is interrupted", async () => {
    const session = await sleepingSession(env, namespace, "mcp-codex");
    const wire = await recordMcpExchanges(mcpUrl().toString());
    const codex = await startCodexMcpClient({
      mcpUrl: wire.url,
      token: await podToken(env, session),
      modelUrl: env.model.url,
    });
    const since = env.model.requests().at(-1)?.seq ?? 0;
    const modelRequests = () => env.model.requests(since).filter((r) => r.model === CODEX_MODEL);
    const turnEnded = (turnId: string) => (m: CodexMessage) =>
      m.method === "turn/completed" && (m.params.turn as { id: string }).id === turnId;
    try {
      expect(codex.version).toBe("0.169.0");
      const mark = await counter.mark();
      const { thread } = (await codex.request("thread/start", {
        model: CODEX_MODEL,
        ephemeral: true,
        sandbox: "read-only",
        approvalPolicy: "on-request",
      })) as { thread: { id: string } };
      const userText = (text: string) => [{ type: "text", text, text_elements: [] }];
      const first = (await codex.request("turn/start", {
        threadId: thread.id,
        input: userText("Check the stock of CX-1, then place order CX-1."),
      })) as { turn: { id: string } };

      // initialize (Codex offers 2025-06-18 and gets it), then tools/list: the session's tools.
      const read = await codex.next(mcpCallCompleted(toolName(READ)));
      expect(read.params.item).toMatchObject({ server: "gatehouse", status: "completed" });
      const [init, initialized] = wire.exchanges;
      expect(init?.body).toMatchObject({ method: "initialize", params: { protocolVersion: "2025-06-18" } });
      expect(answerMessages(init as McpExchange)[0]).toMatchObject({
        result: { protocolVersion: "2025-06-18" },
      });
      expect(init?.sessionId?.startsWith(`${session.uid}.`)).toBe(true);
      expect(methodsOf(initialized as McpExchange)).toEqual(["notifications/initialized"]);
      expect(initialized?.status).toBe(202);
      const listed = wire.exchanges.find((e) => methodsOf(e)[0] === "tools/list");
      const tools = (
        answerMessages(listed as McpExchange)[0] as { result: { tools: Array<{ name: string }> } }
      ).result.tools;
      expect(tools.map((t) => t.name).sort()).toEqual(
        [...[PLACE, PUBLISH, READ, BANNED].map(toolName), "gatehouse_final_answer"].sort(),
      );
      // Codex also opens the server-initiated stream, which the gateway does not offer (405): it goes on.
      expect(wire.exchanges.filter((e) => e.httpMethod === "GET").map((e) => e.status)).toEqual([405]);

      // The allowed call ran once, was recorded as POST /v1/invoke records it, and its result reached the model.
      const [readCall] = toolCallsOf(wire.exchanges, toolName(READ));
      const readResult = resultTextOf(readCall?.exchange as McpExchange, readCall?.id ?? -1) ?? "";
      expect(readResult).not.toBe("");
      expect((await mark.calls()).map((c) => c.capability)).toEqual([READ]);
      // Codex asks the model next once the result is in: the request of the script's next step.
      const outputs = async (step: number) => {
        const asked = await eventually(`the model to be asked at step ${step}`, 30_000, async () =>
          modelRequests().find((r) => r.step === step && r.status !== 0),
        );
        return JSON.stringify(asked.responses?.input ?? []);
      };
      expect(await outputs(1)).toContain(JSON.stringify(readResult).slice(1, -1));

      // The write waits on its Approval with progress naming it; approved, it returns its outcome once.
      const approval = await eventually(
        "the write's Approval",
        60_000,
        async () => (await approvalsOf(session))[0],
      );
      const name = approval.metadata.name;
      const placeCall = await eventually("a progress notification on the waiting call", 30_000, async () => {
        const call = toolCallsOf(wire.exchanges, toolName(PLACE))[0];
        return call?.exchange.response.includes("notifications/progress") ? call : undefined;
      });
      const progress = answerMessages(placeCall.exchange).find(
        (m) => m.method === "notifications/progress",
      ) as {
        params: { progressToken: unknown; message: string };
      };
      expect(progress.params.message).toContain(`Approval ${name}`);
      const sent = placeCall.exchange.body as { params: { _meta?: { progressToken?: unknown } } };
      expect(progress.params.progressToken).toBe(sent.params._meta?.progressToken);
      await approve(name);
      const placed = await codex.next(mcpCallCompleted(toolName(PLACE)));
      expect(placed.params.item).toMatchObject({ status: "completed" });
      const done = await codex.next(turnEnded(first.turn.id));
      expect(done.params.turn).toMatchObject({ status: "completed" });
      const placeResult = resultTextOf(placeCall.exchange, placeCall.id) ?? "";
      expect(placeResult).not.toMatch(/waiting|Approval/);
      expect(toolCallsOf(wire.exchanges, toolName(PLACE))).toHaveLength(1);
      const placeEffects = async () => (await mark.effects()).filter((e) => e.capability === PLACE);
      expect((await placeEffects()).map((e) => e.arguments.orderId)).toEqual(["CX-1"]);
      expect(await outputs(2)).toContain(JSON.stringify(placeResult).slice(1, -1));
      await approvalInPhase(name, "Succeeded");

      // Interrupting a turn while a call waits: Codex sends notifications/cancelled for that request,
      // the gateway ends its stream without an answer, and the Approval stays Pending.
      const second = (await codex.request("turn/start", {
        threadId: thread.id,
        input: userText("Place order CX-2."),
      })) as { turn: { id: string } };
      const waiting = await eventually("the second write's Approval", 60_000, async () =>
        (await approvalsOf(session)).find((a) => a.metadata.name !== name),
      );
      const pendingCall = await eventually("the second write's progress", 30_000, async () => {
        const call = toolCallsOf(wire.exchanges, toolName(PLACE))[1];
        return call?.exchange.response.includes("notifications/progress") ? call : undefined;
      });
      await codex.request("turn/interrupt", { threadId: thread.id, turnId: second.turn.id });
      const interrupted = await codex.next(turnEnded(second.turn.id));
      expect(interrupted.params.turn).toMatchObject({ status: "interrupted" });
      const cancelled = await eventually("Codex's notifications/cancelled", 30_000, async () =>
        wire.exchanges.find((e) => methodsOf(e)[0] === "notifications/cancelled"),
      );
      expect(cancelled.body).toMatchObject({ params: { requestId: pendingCall.id } });
      await eventually("the waiting call's stream to end", 30_000, async () =>
        pendingCall.exchange.ended ? true : undefined,
      );
      expect(resultTextOf(pendingCall.exchange, pendingCall.id)).toBeUndefined();
      const after = await approvalsOf(session);
      expect(after.map((a) => [a.metadata.name, a.status?.phase ?? "Pending"]).sort()).toEqual(
        [
          [name, "Succeeded"],
          [waiting.metadata.name, "Pending"],
        ].sort(),
      );
      expect((await placeEffects()).map((e) => e.arguments.orderId)).toEqual(["CX-1"]);
      const transcript = await transcriptOf(session.uid);
      // Each call as POST /v1/invoke records it; the approved one's outcome once, the cancelled one's none.
      expect(
        transcript.map((e) => [e.kind, e.kind === "tool_call" ? e.payload.tool : e.payload.status]),
      ).toEqual([
        ["tool_call", toolName(READ)],
        ["tool_result", "succeeded"],
        ["tool_call", toolName(PLACE)],
        ["tool_result", "pending_approval"],
        ["approval_outcome", "succeeded"],
        ["tool_call", toolName(PLACE)],
        ["tool_result", "pending_approval"],
      ]);
    } finally {
      await codex.close();
      await wire.close();
    }
  });
});

describe("the MCP endpoint, from the attacker's side", () => {
  const listTools = { jsonrpc: "2.0", id: 7, method: "tools/list" };

  it("refuses a request without a token before anything else", async () => {
    // 403 like every agent route: the pod's projected token is the only credential, nothing to discover.
    for (const token of [undefined, "not-a-token"]) {
      const reply = await readReply(await rawPost(token, listTools));
      expect(reply.status).toBe(403);
      expect(reply.text).not.toContain("tools");
    }
  });

  it("refuses another pod's token with this MCP session id, and records nothing for either session", async () => {
    const victim = await agentOf("mcp-victim");
    const other = await sleepingSession(env, namespace, "mcp-other");
    const otherToken = await podToken(env, other);
    const mark = await counter.mark();
    const headers = { "mcp-session-id": victim.transport.sessionId ?? "" };
    const listed = await readReply(await rawPost(otherToken, listTools, headers));
    expect(listed.status).toBe(404);
    expect(listed.messages[0]).toMatchObject({ error: { message: "Session not found" } });
    const called = await readReply(
      await rawPost(
        otherToken,
        { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: toolName(READ), arguments: {} } },
        headers,
      ),
    );
    expect(called.status).toBe(404);
    expect(await mark.calls()).toEqual([]);
    expect(await transcriptOf(victim.session.uid)).toEqual([]);
    expect(await transcriptOf(other.uid)).toEqual([]);
    // The other pod's token serves its own session only: its own initialize gets its own id.
    const own = await connect(otherToken);
    expect(own.transport.sessionId?.startsWith(`${other.uid}.`)).toBe(true);
    await own.client.close();
    await victim.client.close();
  });

  it("answers a request without the MCP session id it was issued with a protocol error", async () => {
    const { token, client } = await agentOf("mcp-noid");
    const reply = await readReply(await rawPost(token, listTools));
    expect(reply.status).toBe(400);
    expect(reply.messages[0]).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
    await client.close();
  });

  it("answers a malformed body with JSON-RPC's parse error and never reaches Core", async () => {
    const { session, token, transport, client } = await agentOf("mcp-malformed");
    const headers = { "mcp-session-id": transport.sessionId ?? "" };
    const notJson = await readReply(
      await rawPost(token, '{"jsonrpc": "2.0", "method": "tools/call"', headers),
    );
    expect(notJson.status).toBe(400);
    expect(notJson.messages[0]).toMatchObject({ error: { code: ErrorCode.ParseError } });
    const notRpc = await readReply(
      await rawPost(
        token,
        { jsonrpc: "1.0", id: 1, method: "tools/call", params: { name: toolName(READ) } },
        headers,
      ),
    );
    expect(notRpc.status).toBe(400);
    expect(notRpc.messages[0]).toMatchObject({ error: { code: ErrorCode.ParseError } });
    expect(await transcriptOf(session.uid)).toEqual([]);
    expect(await auditKindsOf(session.uid)).toEqual([]);
    await client.close();
  });

  it("answers a tools/call without a name or with non-object arguments, and an empty batch, as JSON-RPC says", async () => {
    const { session, token, transport, client } = await agentOf("mcp-params");
    const headers = { "mcp-session-id": transport.sessionId ?? "" };
    const mark = await counter.mark();
    for (const params of [{ arguments: {} }, { name: toolName(READ), arguments: [1] }]) {
      const reply = await readReply(
        await rawPost(token, { jsonrpc: "2.0", id: 9, method: "tools/call", params }, headers),
      );
      expect(reply.messages[0]).toEqual({
        jsonrpc: "2.0",
        id: 9,
        error: {
          code: ErrorCode.InvalidParams,
          message: "tools/call needs params.name (a string) and params.arguments (an object)",
        },
      });
    }
    const empty = await readReply(await rawPost(token, [], headers));
    expect(empty.status).toBe(400);
    expect(empty.messages[0]).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    expect(await mark.calls()).toEqual([]);
    expect(await transcriptOf(session.uid)).toEqual([]);
    await client.close();
  });

  it("answers an unknown tool, or one offered to someone else, with invalid params and never reaches Core", async () => {
    const { session, client } = await agentOf("mcp-unknown");
    const mark = await counter.mark();
    for (const name of ["no_such_tool", toolName(RESERVED)]) {
      const error = await client.callTool({ name, arguments: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
    }
    expect(await mark.calls()).toEqual([]);
    expect(await transcriptOf(session.uid)).toEqual([]);
    expect(await auditKindsOf(session.uid)).toEqual([]);
    await client.close();
  });

  it("negotiates a client offering a newer revision down to 2025-11-25", async () => {
    const session = await sleepingSession(env, namespace, "mcp-newer");
    const token = await podToken(env, session);
    const reply = await readReply(
      await rawPost(token, {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: NEWER_REVISION,
          capabilities: {},
          clientInfo: { name: "future", version: "9" },
        },
      }),
    );
    expect(reply.status).toBe(200);
    expect(reply.messages[0]).toMatchObject({ id: 1, result: { protocolVersion: "2025-11-25" } });
    expect(reply.headers.get("mcp-session-id")?.startsWith(`${session.uid}.`)).toBe(true);
  });
});
