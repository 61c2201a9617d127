import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ScriptedModel, startScriptedModel } from "@gatehouse/fakes/model";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeEvent, RuntimeTool, ToolCallRequest, ToolExecutor } from "../../runtime.ts";
import { createCodexRuntime, type DeclinedRequest } from "./engine.ts";
import { CodexHost } from "./host.ts";

/**
 * Codex's own tools must neither be offered to the model nor run, and whatever it asks a person for is
 * declined. The scripted model only plays calls of tools the request offers, so a proxy between Codex
 * and it records what Codex sent and then offers a shell, exec and apply_patch too: the model asks for
 * them, as a model talked into it would, and for the built-ins Codex offers whatever its configuration
 * says (request_user_input, view_image).
 */
const tools: RuntimeTool[] = ["plan_read", "plan_draft"].map((name) => ({
  name,
  description: `${name} of the production plan`,
  parameters: { type: "object", properties: { planId: { type: "string" } } },
}));
const FORBIDDEN = ["shell", "exec_command", "apply_patch"];

let dir = "";
let model: ScriptedModel;
let proxy: Server;
let host: CodexHost;
const sent: { tools: string[]; input: unknown[] }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "gatehouse-codex-isolation-"));
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
  const upstream = new URL(model.url);
  proxy = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      sent.push({
        tools: (body.tools ?? []).map((tool: { name?: string; type: string }) => tool.name ?? tool.type),
        input: body.input,
      });
      for (const name of FORBIDDEN)
        body.tools.push({ type: "function", name, description: name, parameters: { type: "object" } });
      const payload = JSON.stringify(body);
      const forwarded = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: incoming.url,
          method: "POST",
          headers: { ...incoming.headers, "content-length": Buffer.byteLength(payload) },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.end(payload);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  host = new CodexHost({
    dir: path.join(dir, "codex"),
    model: {
      baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`,
      auth: { apiKey: "k" },
      timeoutMs: 10_000,
      maxRetries: 0,
    },
    logger: pino({ level: "silent" }),
  });
  host.catalog = { slugPrefix: "scripted", contextWindow: 64_000 };
}, 30_000);
afterAll(async () => {
  await host?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the codex engine's tools", { timeout: 30_000 }, () => {
  it("are the capability tools and two inert built-ins: a model asking to run a command, edit a file, ask the user or view an image gets nothing run", async () => {
    const marker = path.join(dir, "ran");
    const target = path.join(dir, "edited.txt");
    const patch = `*** Begin Patch\n*** Add File: ${target}\n+edited\n*** End Patch`;
    writeFileSync(
      path.join(dir, "isolation.yaml"),
      JSON.stringify({
        steps: [
          {
            call: [
              { tool: "shell", arguments: { command: ["touch", marker] }, id: "shell_1" },
              { tool: "exec_command", arguments: { cmd: `touch ${marker}` }, id: "exec_1" },
              { tool: "apply_patch", arguments: { input: patch }, id: "patch_1" },
              {
                tool: "request_user_input",
                arguments: {
                  questions: [
                    {
                      id: "go",
                      header: "Go?",
                      question: "May I?",
                      options: [{ label: "Yes", description: "y" }],
                    },
                  ],
                },
                id: "ask_1",
              },
              {
                tool: "view_image",
                arguments: { path: path.join(dir, "codex", "config.toml") },
                id: "view_1",
              },
            ],
          },
          { wait: "previous", say: "I could do none of it." },
        ],
      }),
    );
    const invoked: ToolCallRequest[] = [];
    const executor: ToolExecutor = {
      invoke: async (call) => {
        invoked.push(call);
        return { kind: "done", status: "not_found", content: `No capability ${call.name}.` };
      },
    };
    const declined: DeclinedRequest[] = [];
    const runtime = createCodexRuntime({
      host,
      model: "scripted/isolation",
      tools: executor,
      maxTurns: 5,
      maxToolCalls: 10,
      logger: pino({ level: "silent" }),
      onDeclined: (request) => declined.push(request),
    });
    const events: RuntimeEvent[] = [];
    const session = runtime.createSession({
      subject: { user: "alice", groups: [] },
      system: "You schedule production.",
      tools,
      history: [],
    });
    for await (const event of session.send("Run it, edit it, ask me, look at it.")) events.push(event);

    expect(events.at(-1)).toMatchObject({ type: "turn_end", text: "I could do none of it.", final: true });
    expect(sent).toHaveLength(2);
    // Exactly these, in every request: Codex's two built-ins that configuration cannot remove, then ours.
    for (const request of sent)
      expect(request.tools).toEqual(["request_user_input", "view_image", "plan_read", "plan_draft"]);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(target)).toBe(false);
    // Core is asked (and refuses) every call the model makes, whatever its name: each is audited.
    expect(invoked.map((call) => call.name)).toEqual([...FORBIDDEN, "request_user_input", "view_image"]);
    // The configuration file's text never reached the model.
    expect(JSON.stringify(sent[1]!.input)).not.toContain("model_providers");
    // What the model reads: Codex's own refusals, and for its question an empty answer, declined here.
    const outputs = (sent[1]!.input as { type: string; call_id?: string; output?: unknown }[])
      .filter((item) => item.type === "function_call_output")
      .map((item) => [item.call_id, item.output]);
    expect(outputs).toEqual([
      ["shell_1", "unsupported call: shell"],
      ["exec_1", "unsupported call: exec_command"],
      ["patch_1", "unsupported call: apply_patch"],
      ["ask_1", JSON.stringify({ answers: {} })],
      ["view_1", expect.stringMatching(/view_image is not allowed/)],
    ]);
    expect(declined).toEqual([{ method: "item/tool/requestUserInput", turn: 0 }]);
  });
});
