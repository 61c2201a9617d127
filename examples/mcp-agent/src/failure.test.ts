/**
 * How the agent ends with an error: the exit code for the model proxy's answers (a real HTTP server
 * answering the openai SDK), and the `error` event it posts to the gateway.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_FINAL, exitCodeOf } from "./agent.ts";
import { postError } from "./gateway.ts";

let server: Server;
let url = "";
let answer: (request: IncomingMessage, response: ServerResponse) => void = () => {};
const received: Array<{ method?: string; url?: string; authorization?: string; body: string }> = [];

beforeAll(async () => {
  server = createServer(async (request, response) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    received.push({
      method: request.method,
      url: request.url,
      authorization: request.headers.authorization,
      body,
    });
    answer(request, response);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
});

async function modelErrorOf(status: number): Promise<unknown> {
  answer = (_request, response) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { message: `refused with ${status}`, code: "x" } }));
  };
  const model = new OpenAI({ baseURL: `${url}/v1/model`, apiKey: "token", maxRetries: 0 });
  return model.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("exitCodeOf", () => {
  it.each([400, 403, 404, 413, 422])(
    "is final (2) for the model proxy's %i: a new pod is refused again",
    async (status) => {
      expect(exitCodeOf(await modelErrorOf(status))).toBe(EXIT_FINAL);
    },
  );

  it.each([408, 429, 500, 502, 503])(
    "is 1 for the model proxy's %i: a new pod may succeed",
    async (status) => {
      expect(exitCodeOf(await modelErrorOf(status))).toBe(1);
    },
  );

  it("is 1 for a model that cannot be reached and for any other error", async () => {
    const model = new OpenAI({ baseURL: "http://127.0.0.1:1/v1", apiKey: "token", maxRetries: 0 });
    const unreachable = await model.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .catch((error: unknown) => error);
    expect(exitCodeOf(unreachable)).toBe(1);
    expect(exitCodeOf(new Error("the MCP server offers no gatehouse_final_answer tool"))).toBe(1);
  });
});

describe("postError", () => {
  it("posts {kind: error, turn, text} to the session's events with the gateway fetch", async () => {
    received.length = 0;
    answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end('{"accepted":true}');
    };
    const lines: string[] = [];
    const withToken: typeof fetch = (input, init) =>
      fetch(input, { ...init, headers: { ...init?.headers, authorization: "Bearer pod-token" } });
    await postError(`${url}/`, withToken, 3, "400 refused with 400", (line) => lines.push(line));
    expect(received).toEqual([
      {
        method: "POST",
        url: "/v1/session/events",
        authorization: "Bearer pod-token",
        body: JSON.stringify({ kind: "error", turn: 3, text: "400 refused with 400" }),
      },
    ]);
    expect(lines).toEqual([]);
  });

  it("logs, and does not throw, when the gateway does not record it", async () => {
    answer = (_request, response) => {
      response.writeHead(409, { "content-type": "application/json" });
      response.end('{"kind":"conflict","message":"too many events"}');
    };
    const lines: string[] = [];
    await postError(url, fetch, 0, "failed", (line) => lines.push(line));
    expect(lines).toEqual([
      'the error was not recorded: 409 {"kind":"conflict","message":"too many events"}',
    ]);
  });
});
