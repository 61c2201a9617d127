import { createServer } from "node:http";

/**
 * The `gatehouse/echo:dev` image: answers 200 with a small JSON document on any path, on port `$PORT`
 * (default 8080), all addresses. On SIGTERM it prints `received SIGTERM` and exits 0, so tests can see
 * graceful termination in its log.
 */
const port = Number(process.env.PORT ?? "8080");

const server = createServer((req, res) => {
  const body = JSON.stringify({
    ok: true,
    method: req.method,
    path: req.url,
    pod: process.env.HOSTNAME ?? "",
  });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
});

server.listen(port, "0.0.0.0", () => {
  console.log(`echo server listening on :${port}`);
});

process.on("SIGTERM", () => {
  console.log("received SIGTERM, shutting down");
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
