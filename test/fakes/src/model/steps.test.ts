import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ScriptedModel, startScriptedModel } from "./server.ts";

/** Scripts written for these tests, one behaviour each. */
const scripts: Record<string, string> = {
  parallel: `
steps:
  - say: Reading both.
    call:
      - { tool: read, arguments: { week: 49 } }
      - { tool: read, arguments: { week: 50 } }
  - wait: previous
    say: "Done: {{last}}"
`,
  "wait-tool": `
steps:
  - call: [{ tool: read, id: r1 }]
  - call: [{ tool: draft, id: d1 }]
  - wait: { tools: [read, draft] }
    say: both in
`,
  branches: `
steps:
  - call: [{ tool: read, id: r1 }, { tool: draft, id: d1 }]
  - wait: previous
    choose:
      - when: { contains: { calls.d1: forbidden } }
        say: the draft was refused
      - when: { contains: { tools.read: missing }, matches: { calls.d1.status: draft } }
        say: drafted a plan that was missing
      - when: { matches: { tools.draft.version: 3 } }
        say: "drafted version {{calls.d1.version}}"
      - say: something else
`,
  usage: `
steps:
  - say: fixed counts
    usage: { promptTokens: 120, completionTokens: 30 }
`,
  estimate: `
steps:
  - say: An answer of forty characters, near enough.
`,
  "two-faults": `
steps:
  - say: third time lucky
    faults:
      - { kind: rate_limit, times: 1, retryAfterSeconds: 0 }
      - { kind: server_error, times: 1, status: 503 }
`,
  "bad-wait": `
steps:
  - say: never
    wait: { calls: [] }
`,
};

const tools: ChatCompletionTool[] = ["read", "draft"].map((name) => ({
  type: "function",
  function: { name, parameters: { type: "object" } },
}));
const start: ChatCompletionMessageParam[] = [{ role: "user", content: "Go." }];

function assistant(...calls: Array<[id: string, name: string]>): ChatCompletionMessageParam {
  return {
    role: "assistant",
    content: null,
    tool_calls: calls.map(([id, name]) => ({ id, type: "function", function: { name, arguments: "{}" } })),
  };
}
function tool(id: string, content: unknown): ChatCompletionMessageParam {
  return { role: "tool", tool_call_id: id, content: JSON.stringify(content) };
}

let dir: string;
let model: ScriptedModel;
let client: OpenAI;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "scripted-steps-"));
  for (const [name, text] of Object.entries(scripts)) await writeFile(path.join(dir, `${name}.yaml`), text);
  model = await startScriptedModel({ host: "127.0.0.1", port: 0, scriptsDir: dir });
  client = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  model.clearRequests();
  model.resetFaults();
});

describe("parallel tool calls", () => {
  it("sends every call of a step in one answer, with ids call_<step>_<index>", async () => {
    const completion = await client.chat.completions.create({
      model: "scripted/parallel",
      messages: start,
      tools,
    });
    const message = completion.choices[0]!.message;
    expect(message.content).toBe("Reading both.");
    expect(message.tool_calls).toEqual([
      { id: "call_0_0", type: "function", function: { name: "read", arguments: '{"week":49}' } },
      { id: "call_0_1", type: "function", function: { name: "read", arguments: '{"week":50}' } },
    ]);
  });

  it("streams parallel calls one after another by default", async () => {
    const stream = await client.chat.completions.create({
      model: "scripted/parallel",
      messages: start,
      tools,
      stream: true,
    });
    const indices: number[] = [];
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) indices.push(delta.index);
    }
    expect(indices).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });
});

describe("waits", () => {
  it("plays a step waiting for the previous calls once each has its tool message", async () => {
    const messages = [...start, assistant(["a", "read"], ["b", "read"]), tool("a", 1), tool("b", 2)];
    const completion = await client.chat.completions.create({ model: "scripted/parallel", messages, tools });
    expect(completion.choices[0]!.message.content).toBe("Done: 2");
  });

  it("refuses with 400, naming it, a call of the previous answer left without a result", async () => {
    const messages = [...start, assistant(["a", "read"], ["b", "read"]), tool("b", 2)];
    const refused = client.chat.completions.create({ model: "scripted/parallel", messages, tools });
    await expect(refused).rejects.toThrow(OpenAI.BadRequestError);
    await expect(refused).rejects.toThrow(/did not have response messages: a$/);
  });

  it("waits for named tools across earlier answers", async () => {
    const messages = [
      ...start,
      assistant(["r1", "read"]),
      tool("r1", {}),
      assistant(["d1", "draft"]),
      tool("d1", {}),
    ];
    const completion = await client.chat.completions.create({ model: "scripted/wait-tool", messages, tools });
    expect(completion.choices[0]!.message.content).toBe("both in");
  });

  it("does not count a tool's result given before its latest call", async () => {
    const messages = [
      ...start,
      assistant(["r1", "read"]),
      tool("r1", {}),
      assistant(["d1", "draft"], ["r2", "read"]),
      tool("d1", {}),
    ];
    await expect(
      client.chat.completions.create({ model: "scripted/wait-tool", messages, tools }),
    ).rejects.toThrow(/did not have response messages: tool read$/);
  });

  it("refuses a script whose wait names nothing with 500 and no retry", async () => {
    const response = await fetch(`${model.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "scripted/bad-wait", messages: start }),
    });
    expect(response.status).toBe(500);
    expect(response.headers.get("x-should-retry")).toBe("false");
    expect(await response.text()).toContain("a wait names at least one call or tool");
  });
});

describe("branches on tool results", () => {
  async function answer(read: unknown, draft: unknown) {
    const messages = [
      ...start,
      assistant(["r1", "read"], ["d1", "draft"]),
      tool("r1", read),
      tool("d1", draft),
    ];
    const completion = await client.chat.completions.create({ model: "scripted/branches", messages, tools });
    return completion.choices[0]!.message.content;
  }

  it("takes the branch whose call's result contains the text", async () => {
    expect(await answer({ plan: "w49" }, "failed (forbidden): no right to draft")).toBe(
      "the draft was refused",
    );
  });

  it("takes a branch only when all its tests hold", async () => {
    expect(await answer({ error: "missing" }, { status: "draft", version: 3 })).toBe(
      "drafted a plan that was missing",
    );
  });

  it("matches a tool's result by value and fills the call's value in", async () => {
    expect(await answer({ plan: "w49" }, { status: "draft", version: 3 })).toBe("drafted version 3");
  });

  it("falls through to the alternative without a condition", async () => {
    expect(await answer({ plan: "w49" }, { status: "draft", version: 4 })).toBe("something else");
  });
});

describe("usage", () => {
  it("reports the counts a step fixes, non-streamed and streamed", async () => {
    const completion = await client.chat.completions.create({ model: "scripted/usage", messages: start });
    const stream = await client.chat.completions.create({
      model: "scripted/usage",
      messages: start,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const expected = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };
    expect(completion.usage).toEqual(expected);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expected });
  });

  it("estimates the same counts for the same request, about four characters a token", async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "x".repeat(400) }];
    const first = await client.chat.completions.create({ model: "scripted/estimate", messages });
    const second = await client.chat.completions.create({ model: "scripted/estimate", messages });
    expect(first.usage).toEqual({ prompt_tokens: 100, completion_tokens: 11, total_tokens: 111 });
    expect(second.usage).toEqual(first.usage);
  });

  it("puts usage null on every chunk and the usage on a last chunk without choices when asked", async () => {
    const stream = await client.chat.completions.create({
      model: "scripted/estimate",
      messages: start,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null && chunk.choices.length === 1)).toBe(
      true,
    );
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: expect.any(Number) } });
  });

  it("sends no usage at all in a stream that did not ask for it", async () => {
    const stream = await client.chat.completions.create({
      model: "scripted/estimate",
      messages: start,
      stream: true,
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((chunk) => "usage" in chunk)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
  });
});

describe("transport faults", () => {
  it("serves a step's faults in order, each once per conversation, then the answer", async () => {
    const retrying = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 2 });
    const completion = await retrying.chat.completions.create({
      model: "scripted/two-faults",
      messages: start,
    });
    expect(completion.choices[0]!.message.content).toBe("third time lucky");
    expect(model.requests().map((request) => request.status)).toEqual([429, 503, 200]);
    expect(model.requests()[0]!.responseHeaders["retry-after"]).toBe("0");
  });

  it("meets a new conversation with the faults again", async () => {
    await client.chat.completions.create({ model: "scripted/two-faults", messages: start }).catch(() => {});
    const other: ChatCompletionMessageParam[] = [{ role: "user", content: "Go again." }];
    await expect(
      client.chat.completions.create({ model: "scripted/two-faults", messages: other }),
    ).rejects.toThrow(OpenAI.RateLimitError);
  });

  it("meets the same conversation with the faults again after DELETE /_faults", async () => {
    const retrying = new OpenAI({ baseURL: model.url, apiKey: "unused", maxRetries: 2 });
    await retrying.chat.completions.create({ model: "scripted/two-faults", messages: start });
    expect((await fetch(`${model.origin}/_faults`, { method: "DELETE" })).status).toBe(204);
    await expect(
      client.chat.completions.create({ model: "scripted/two-faults", messages: start }),
    ).rejects.toThrow(OpenAI.RateLimitError);
  });
});
