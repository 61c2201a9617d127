import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StatusRelay } from "./status-relay.ts";

/** A model endpoint speaking HTTP: what it was asked, and its answers by path. */
let upstream: http.Server;
let seen: { url: string | undefined; headers: http.IncomingHttpHeaders }[];
let relay: StatusRelay;
let relayUrl: string;
/** Ends the held SSE answer. */
let release: () => void;

beforeEach(async () => {
  seen = [];
  upstream = http.createServer((request, response) => {
    seen.push({ url: request.url, headers: request.headers });
    if (request.url === "/v1/responses") {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write("data: first\n\n");
      // The rest waits for the test: a buffering relay would never deliver the first event.
      release = () => response.end("data: last\n\n");
    } else if (request.url === "/v1/refused") {
      response
        .writeHead(400, { "content-type": "application/json" })
        .end('{"error":{"type":"invalid_request_error"}}');
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const { port } = upstream.address() as AddressInfo;
  relay = new StatusRelay(`http://127.0.0.1:${port}/v1`);
  relayUrl = await relay.start();
});

afterEach(async () => {
  await relay.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

/** A raw request to the relay with `target` as its request-target, as an attacker could send it. */
function raw(target: string): Promise<number> {
  const { port } = new URL(relayUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port, path: target, method: "POST" }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("error", reject);
    request.end("{}");
  });
}

describe("the loopback relay between Codex and the model endpoint", () => {
  it("listens on loopback under the endpoint's base path", () => {
    expect(relayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it("streams an SSE answer through as it comes, with the client's headers", async () => {
    const response = await fetch(`${relayUrl}/responses`, {
      method: "POST",
      headers: { authorization: "Bearer pod-token", "thread-id": "thread-1" },
      body: "{}",
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: first\n\n");
    release();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe("data: last\n\n");
    expect(seen[0]?.headers.authorization).toBe("Bearer pod-token");
    expect(relay.refusedSince(0, "thread-1")).toBeUndefined();
  });

  it("notes a refusal's status for the thread that asked, after the turn's mark", async () => {
    const mark = relay.mark;
    const response = await fetch(`${relayUrl}/refused`, {
      method: "POST",
      headers: { "thread-id": "thread-1" },
      body: "{}",
    });
    expect(response.status).toBe(400);
    await response.text();
    expect(relay.refusedSince(mark, "thread-1")?.status).toBe(400);
    expect(relay.refusedSince(mark, "thread-2")).toBeUndefined();
    expect(relay.refusedSince(relay.mark, "thread-1")).toBeUndefined();
  });

  it.each([
    ["another host, absolute-form", "http://example.com/v1/responses"],
    ["a path outside the base path", "/admin"],
    ["a sibling of the base path", "/v1beta/responses"],
    ["dot segments out of the base path", "/v1/../admin"],
    ["encoded dot segments", "/v1/%2e%2e/admin"],
    ["an encoded slash", "/v1%2f..%2fadmin"],
    ["a scheme-relative target", "//example.com/v1/responses"],
  ])("refuses %s without forwarding it", async (_name, target) => {
    expect(await raw(target)).toBe(403);
    expect(seen).toEqual([]);
  });
});
