/**
 * Graceful shutdown of a fastify server, as a pod behind a Service needs it: requests in flight when
 * SIGTERM came are answered, then their connections close, and nothing holds the process past a bound.
 *
 * Why not just `app.close()`: Node closes the connections that are idle at that moment, but a
 * keep-alive connection busy then answers with `Connection: keep-alive` and stays open until the
 * server's keepAliveTimeout (fastify's default: 72 s) — a replica then takes over a minute to stop,
 * past a pod's default 30 s grace period. So, while draining, answers carry `Connection: close`, idle
 * connections are closed as they become idle, and after `drainMs` whatever is left is cut.
 *
 * Node counts a connection that has not sent a request yet as busy, not idle (so that a client that
 * connects and stays silent still meets the headers timeout), and `closeIdleConnections()` leaves it
 * open. Clients keep such connections: Go's transport, the API server's aggregator among them, pools
 * a connection it dialled for a request another connection took. So the drain closes those too; a
 * request sent on one at that moment meets a closed connection, as on any idle one closed.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Server as TlsServer } from "node:tls";
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

/** What `closeWithin` reads of a draining server beyond `Draining`. */
interface DrainState extends Draining {
  draining: boolean;
  /** Closes the connections that have not carried a request. */
  closeUnused(): void;
  /** Closes every connection still open, TLS handshakes not finished included. */
  closeAll(): void;
}

const drains = new WeakMap<object, DrainState>();

/**
 * Registers the hooks that make `app` drain when closed: from `preClose` on, every answer carries
 * `Connection: close`. Call before `listen`. Returns the flag long-polls read.
 */
export function drainOnClose<L extends FastifyBaseLogger>(app: HttpFastify<L>): Draining {
  const answering = new Set<string>();
  // Every accepted socket, and those the HTTP layer reads (after the TLS handshake, on HTTPS).
  const sockets = new Set<Socket>();
  const served = new Set<Socket>();
  const used = new WeakSet<Socket>();
  const track = (set: Set<Socket>) => (socket: Socket) => {
    set.add(socket);
    socket.once("close", () => set.delete(socket));
  };
  app.server.on("connection", track(sockets));
  if (app.server instanceof TlsServer) app.server.on("secureConnection", track(served));
  else app.server.on("connection", track(served));
  // The server's own event, at the request's headers: before any hook, so no request is missed.
  app.server.on("request", (request: IncomingMessage) => used.add(request.socket));
  const state: DrainState = {
    draining: false,
    inFlight: () => [...answering],
    closeUnused: () => {
      for (const socket of served) if (!used.has(socket)) socket.destroy();
    },
    closeAll: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
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
 * become idle or if they never carried a request (when `app` drains with `drainOnClose`), and after
 * `drainMs` closing every connection still open. Resolves with how many connections were cut at the
 * bound, and the requests then still answering. Errors: those of `app.close()`.
 */
export async function closeWithin<L extends FastifyBaseLogger>(
  app: HttpFastify<L>,
  drainMs: number,
): Promise<{ cut: number; requests: string[] }> {
  const server = app.server;
  let cut = 0;
  let requests: string[] = [];
  const drain = drains.get(app);
  const reap = () => {
    server.closeIdleConnections();
    drain?.closeUnused();
  };
  const reaper = setInterval(reap, REAP_INTERVAL_MS);
  const bound = setTimeout(() => {
    server.getConnections((_error, count) => {
      cut = count;
      requests = drain?.inFlight() ?? [];
      server.closeAllConnections();
      drain?.closeAll();
    });
  }, drainMs);
  try {
    const closing = app.close();
    // The first reap at once, not an interval later; later ones take what connects meanwhile.
    reap();
    await closing;
  } finally {
    clearInterval(reaper);
    clearTimeout(bound);
  }
  return { cut, requests };
}
