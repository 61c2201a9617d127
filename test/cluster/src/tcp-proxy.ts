/**
 * A TCP forwarder: listens on one address and pipes each accepted connection to a target chosen when
 * it arrives (kube-proxy's old userspace mode, which the local node's Service proxy and host-port
 * forwarders are built on). The first target that accepts the connection gets it; when none is offered
 * or none accepts, the client's connection is closed at once, as a Service without ready endpoints
 * refuses connections.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** Where one connection may go. */
export type TcpTarget = { host: string; port: number };

/** A running forwarder. */
export interface TcpProxy {
  /** The address it listens on. */
  host: string;
  /** Its port (the chosen one when it was asked to listen on port 0). */
  port: number;
  /** Stops listening and closes every open connection, both sides. */
  close(): Promise<void>;
}

/**
 * Listens on `host`:`port` (0 = a free port) and forwards each connection to the first of
 * `targets()` (called once per connection) that accepts it; the others are tried in order only when
 * an earlier one refuses or fails before connecting. Bytes are piped unchanged both ways; either side
 * closing closes the other. Throws the listen error (e.g. EADDRINUSE, EADDRNOTAVAIL).
 */
export async function startTcpProxy(
  host: string,
  port: number,
  targets: () => readonly TcpTarget[],
): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server: Server = createServer((client) => {
    track(client);
    client.on("error", () => client.destroy());
    client.pause();
    const candidates = [...targets()];
    const tryNext = (index: number): void => {
      const target = candidates[index];
      if (target === undefined || client.destroyed) {
        client.destroy();
        return;
      }
      const upstream = connect({ host: target.host, port: target.port });
      track(upstream);
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        client.once("close", () => upstream.destroy());
        upstream.once("close", () => client.destroy());
      });
      upstream.on("error", () => {
        if (connected) client.destroy();
        else tryNext(index + 1);
      });
    };
    tryNext(0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    host,
    port: typeof address === "object" && address ? address.port : port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
