import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeWithin, type Draining, drainOnClose } from "./shutdown.ts";

let app: FastifyInstance | undefined;
afterEach(async () => {
  app?.server.closeAllConnections();
  await app?.close();
  app = undefined;
});

/** A self-signed certificate for 127.0.0.1, made by openssl, for the HTTPS cases. */
let tls: { key: string; cert: string };
let tlsDir: string;
beforeAll(() => {
  tlsDir = mkdtempSync(join(tmpdir(), "shutdown-test-"));
  const [key, cert] = [join(tlsDir, "tls.key"), join(tlsDir, "tls.crt")];
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stdio: "ignore" },
  );
  tls = { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
});
afterAll(() => rmSync(tlsDir, { recursive: true, force: true }));

/** A server with `drainOnClose` (HTTPS with `https`), routes added by `routes`; its base URL. */
async function serve(
  routes: (app: FastifyInstance, drain: Draining) => void,
  https?: { key: string; cert: string },
): Promise<string> {
  app = (https ? Fastify({ https }) : Fastify()) as FastifyInstance;
  const drain = drainOnClose(app);
  routes(app, drain);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return `${https ? "https" : "http"}://127.0.0.1:${(app.server.address() as { port: number }).port}`;
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

  it("closes a connection that never sent a request at once, as a pooling client leaves one", async () => {
    const url = await serve((server) => server.get("/", async () => ({ ok: true })));
    const silent = connect(Number(new URL(url).port), "127.0.0.1");
    await once(silent, "connect");
    // One that has answered and one that has not: both go, without waiting out the bound.
    expect((await fetch(url)).status).toBe(200);
    const ended = once(silent, "close");
    const closing = closeWithin(app as FastifyInstance, 60_000);
    expect(await within(closing, 3_000)).toBe("closed");
    expect(await closing).toEqual({ cut: 0, requests: [] });
    await ended;
  });

  it("leaves a connection whose request is being answered until its answer ends", async () => {
    let finish = () => {};
    const url = await serve((server) =>
      server.get("/slow", async () => {
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        return { ok: true };
      }),
    );
    const answer = fetch(`${url}/slow`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = closeWithin(app as FastifyInstance, 60_000);
    // Several reaps pass while the answer is pending; the connection is not one they take.
    await new Promise((resolve) => setTimeout(resolve, 700));
    finish();
    const response = await answer;
    expect(await response.json()).toEqual({ ok: true });
    expect(await closing).toEqual({ cut: 0, requests: [] });
  });

  it("closes a TLS connection that never sent a request at once, as the API server's aggregator leaves one", async () => {
    const url = await serve(() => {}, tls);
    const silent = connectTls({ host: "127.0.0.1", port: Number(new URL(url).port), ca: tls.cert });
    await once(silent, "secureConnect");
    const ended = once(silent, "close");
    const closing = closeWithin(app as FastifyInstance, 60_000);
    expect(await within(closing, 3_000)).toBe("closed");
    expect(await closing).toEqual({ cut: 0, requests: [] });
    await ended;
  });

  it("cuts a TLS handshake that never finishes at the bound, so the close ends", async () => {
    const url = await serve(() => {}, tls);
    const stalled = connect(Number(new URL(url).port), "127.0.0.1");
    await once(stalled, "connect");
    const ended = once(stalled, "close");
    const { cut } = await closeWithin(app as FastifyInstance, 300);
    expect(cut).toBe(1);
    await ended;
  });
});
