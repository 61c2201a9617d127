/**
 * The store's readiness watch (store/readiness.ts) against real Postgres, reached through a TCP relay
 * this test owns, so the outage is the relay's — the machine's server is never stopped: the watch
 * answers false within a period of the relay closing its port and cutting its connections (as a
 * stopping server does), and true again within a period of it listening again.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, it } from "vitest";
import { createPool, LOCAL_SERVER_URL } from "../../operator/src/store/connection.ts";
import { type DatabaseWatch, watchDatabase } from "../../operator/src/store/readiness.ts";

const PERIOD_MS = 200;

/** A relay from a port of 127.0.0.1 to the local Postgres, which can be stopped and started on that port. */
function relay() {
  const target = new URL(LOCAL_SERVER_URL);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  return {
    get port() {
      return port;
    },
    async start() {
      server = createServer((client) => {
        const upstream = createConnection(Number(target.port), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("error", () => s.destroy());
          s.on("close", () => sockets.delete(s));
        }
        client.pipe(upstream).pipe(client);
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
      await new Promise<void>((resolve) => server?.listen(port, "127.0.0.1", resolve));
      const address = server.address();
      port = typeof address === "object" && address ? address.port : 0;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    },
  };
}

/** Polls `check` every 20 ms; throws after `timeoutMs`. */
async function until(what: string, timeoutMs: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the database readiness watch", () => {
  const server = relay();
  let pool: ReturnType<typeof createPool>;
  let watch: DatabaseWatch;

  beforeAll(async () => {
    await server.start();
    const url = new URL(LOCAL_SERVER_URL);
    url.port = String(server.port);
    pool = createPool(url.toString(), { max: 2 });
    watch = watchDatabase(pool, { intervalMs: PERIOD_MS, timeoutMs: PERIOD_MS });
  });

  afterAll(async () => {
    await watch?.stop();
    await pool?.end();
    await server.stop();
  });

  it("is available once the server answered its first probe", async () => {
    await until("the first answer", 5_000, () => watch.available());
  });

  it("is unavailable within a few periods of the server going away, and available again as soon after it returns", async () => {
    await until("the first answer", 5_000, () => watch.available());
    // Keep a connection idle in the pool, as a server's stop closes those first.
    await pool.query("SELECT 1");
    await server.stop();
    await until("unavailable", 5 * PERIOD_MS, () => !watch.available());
    await server.start();
    await until("available again", 5 * PERIOD_MS, () => watch.available());
  });
});
