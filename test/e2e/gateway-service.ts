/**
 * What a Kubernetes Service gives the operator's gateway in a real cluster, for the local node that has
 * no kube-proxy: one address (the bridge address and a port) whose TCP connections are forwarded to a
 * live replica's gateway, trying the next replica when one refuses. Agent pods use it as GATEWAY_URL,
 * so a killed replica does not strand the pods it created.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** A running forwarder; `backends` may change at any time. */
export interface GatewayService {
  port: number;
  /** Ports of the replicas' gateways on the same host, tried in order. */
  backends: number[];
  close(): Promise<void>;
}

/** Listens on `host`:`port` (0 = any free port) and forwards each connection to the first backend that answers. */
export async function startGatewayService(host: string, port: number): Promise<GatewayService> {
  const service: GatewayService = { port, backends: [], close: async () => {} };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    client.pause();
    const tryBackend = (index: number): void => {
      const backendPort = service.backends[index];
      if (backendPort === undefined) {
        client.destroy();
        return;
      }
      const upstream = connect({ host, port: backendPort });
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        sockets.add(upstream);
        upstream.once("close", () => sockets.delete(upstream));
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        upstream.on("error", () => client.destroy());
        client.once("close", () => upstream.destroy());
        upstream.once("close", () => client.destroy());
      });
      upstream.once("error", () => {
        if (!connected) tryBackend(index + 1);
      });
    };
    tryBackend(0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  service.port = typeof address === "object" && address ? address.port : port;
  service.close = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return service;
}
