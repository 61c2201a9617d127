/**
 * Graceful shutdown of a fastify server, as a pod behind a Service needs it: requests in flight when
 * SIGTERM came are answered, then their connections close, and nothing holds the process past a bound.
 *
 * Why not just `app.close()`: Node closes the connections that are idle at that moment, but a
 * keep-alive connection busy then answers with `Connection: keep-alive` and stays open until the
 * server's keepAliveTimeout (fastify's default: 72 s) — a replica then takes over a minute to stop,
 * past a pod's default 30 s grace period. So, while draining, answers carry `Connection: close`, idle
 * connections are closed as they become idle, and after `drainMs` whatever is left is cut.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from "fastify";

/** A fastify server on Node's HTTP server, whatever its logger. */
type HttpFastify<L extends FastifyBaseLogger> = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse<IncomingMessage>,
  L
>;

/** How often a draining server closes the connections that have become idle, in milliseconds. */
const REAP_INTERVAL_MS = 200;

/** A server's drain state: whether it has begun to close, and which requests are still answering. */
export interface Draining {
  /** Read by long-polls, which end early so the client asks a live replica. */
  readonly draining: boolean;
  /** `METHOD url` of each request whose answer has not ended, for the log when they are cut. */
  inFlight(): string[];
}

const drains = new WeakMap<object, Draining>();

/**
 * Registers the hooks that make `app` drain when closed: from `preClose` on, every answer carries
 * `Connection: close`. Call before `listen`. Returns the flag long-polls read.
 */
export function drainOnClose<L extends FastifyBaseLogger>(app: HttpFastify<L>): Draining {
  const answering = new Set<string>();
  const state = { draining: false, inFlight: () => [...answering] };
  app.addHook("onRequest", async (request, reply) => {
    const id = `${request.method} ${request.url} (${request.id})`;
    answering.add(id);
    // The response's close: answered, hijacked and ended, or the connection gone.
    reply.raw.once("close", () => answering.delete(id));
  });
  app.addHook("preClose", async () => {
    state.draining = true;
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    if (state.draining) reply.header("connection", "close");
    return payload;
  });
  drains.set(app, state);
  return state;
}

/**
 * Closes `app` (no new connections; `drainOnClose`'s answers end theirs), closing connections as they
 * become idle, and after `drainMs` closing every connection still open. Resolves with how many
 * connections were cut at the bound, and the requests then still answering (when `app` drains with
 * `drainOnClose`). Errors: those of `app.close()`.
 */
export async function closeWithin<L extends FastifyBaseLogger>(
  app: HttpFastify<L>,
  drainMs: number,
): Promise<{ cut: number; requests: string[] }> {
  const server = app.server;
  let cut = 0;
  let requests: string[] = [];
  const reaper = setInterval(() => server.closeIdleConnections(), REAP_INTERVAL_MS);
  const bound = setTimeout(() => {
    server.getConnections((_error, count) => {
      cut = count;
      requests = drains.get(app)?.inFlight() ?? [];
      server.closeAllConnections();
    });
  }, drainMs);
  try {
    await app.close();
  } finally {
    clearInterval(reaper);
    clearTimeout(bound);
  }
  return { cut, requests };
}
