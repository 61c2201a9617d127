import { createServer } from "node:net";

/**
 * Asks the kernel for a free TCP port on `host` (default 127.0.0.1) and releases it. Another process
 * may take it before it is used; callers that bind it soon after are fine in practice.
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
