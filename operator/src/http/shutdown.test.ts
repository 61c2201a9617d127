import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { closeWithin, type Draining, drainOnClose } from "./shutdown.ts";

let app: FastifyInstance | undefined;
afterEach(async () => {
  app?.server.closeAllConnections();
  await app?.close();
  app = undefined;
});

/** A server with `drainOnClose`, routes added by `routes`; its base URL. */
async function serve(routes: (app: FastifyInstance, drain: Draining) => void): Promise<string> {
  app = Fastify();
  const drain = drainOnClose(app);
  routes(app, drain);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

/** Resolves "closed" when `closing` settles first, "still open" after `ms`. */
function within(closing: Promise<unknown>, ms: number): Promise<string> {
  return Promise.race([
    closing.then(() => "closed"),
    new Promise<string>((resolve) => setTimeout(() => resolve("still open"), ms)),
  ]);
}

describe("a gateway that is shutting down", () => {
  it("answers a request in flight with Connection: close and closes without waiting out the keep-alive", async () => {
    const url = await serve((server) =>
      server.get("/slow", async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { ok: true };
      }),
    );
    const answer = fetch(`${url}/slow`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = closeWithin(app as FastifyInstance, 60_000);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.headers.get("connection")).toBe("close");
    expect(await response.json()).toEqual({ ok: true });
    // Fastify keeps an idle keep-alive connection 72 s; the drain must not.
    expect(await within(closing, 3_000)).toBe("closed");
    expect(await closing).toEqual({ cut: 0, requests: [] });
  });

  it("ends a long-poll at once, so the client asks another replica", async () => {
    const url = await serve((server, drain) =>
      server.get("/wait", async () => {
        while (!drain.draining) await new Promise((resolve) => setTimeout(resolve, 20));
        return { done: false };
      }),
    );
    const answer = fetch(`${url}/wait`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = closeWithin(app as FastifyInstance, 60_000);
    expect(await (await answer).json()).toEqual({ done: false });
    expect(await within(closing, 3_000)).toBe("closed");
  });

  it("cuts a connection whose answer never ends once the drain bound has passed", async () => {
    const url = await serve((server) =>
      server.get("/stream", async (_request, reply) => {
        reply.hijack();
        reply.raw.writeHead(200, { "content-type": "text/event-stream" });
        reply.raw.write("data: 1\n\n");
        return reply;
      }),
    );
    const response = await fetch(`${url}/stream`);
    const reader = response.body?.getReader();
    await reader?.read();
    const { cut, requests } = await closeWithin(app as FastifyInstance, 200);
    expect(cut).toBe(1);
    expect(requests).toEqual([expect.stringMatching(/^GET \/stream \(/)]);
    await expect(reader?.read()).rejects.toThrow();
  });
});
