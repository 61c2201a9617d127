/**
 * Starts a fake system's fastify app on `host:port` (0 = a free port) and returns its base URL:
 * `http://host:port`, IPv6 hosts in brackets, and a wildcard host (0.0.0.0) shown as 127.0.0.1 so the
 * URL can be called. Rejects with fastify's error when it cannot listen.
 */
import type { FastifyInstance } from "fastify";

export async function listenAt(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const address = app.server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  const shown = host === "0.0.0.0" ? "127.0.0.1" : host;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${bound}`;
}
