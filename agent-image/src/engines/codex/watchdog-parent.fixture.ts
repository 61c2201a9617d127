/**
 * A stand-in agent process for the watchdog test: starts Codex through a CodexHost in `argv[2]` (no
 * model is asked), prints Codex's pid, and waits to be killed.
 */
import { pino } from "pino";
import { CodexHost } from "./host.ts";

const host = new CodexHost({
  dir: process.argv[2]!,
  model: { baseUrl: "http://127.0.0.1:9/v1", auth: { apiKey: "k" }, timeoutMs: 1000, maxRetries: 0 },
  logger: pino({ level: "silent" }),
});
await host.warm();
process.stdout.write(`${host.pid}\n`);
setInterval(() => {}, 60_000);
