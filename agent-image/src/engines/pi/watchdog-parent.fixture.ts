/**
 * A stand-in agent process for the watchdog test: starts Pi through a PiHost in `argv[2]` (no model is
 * asked), prints Pi's pid, and waits to be killed.
 */
import { pino } from "pino";
import { PiHost } from "./host.ts";
import { sessionFileText } from "./session-file.ts";

const host = new PiHost({
  dir: process.argv[2]!,
  model: {
    baseUrl: "http://127.0.0.1:9/v1",
    auth: { apiKey: "k" },
    timeoutMs: 1000,
    maxRetries: 0,
    maxRetryDelayMs: 1000,
  },
  logger: pino({ level: "silent" }),
});
const sink = { event() {}, execute() {}, exited() {} };
await host.load(
  sessionFileText([], { provider: "gatehouse", model: "session-model", cwd: "/" }),
  { system: "", model: "none", tools: [], toolChoiceNone: false, callArguments: [] },
  sink,
  new AbortController().signal,
);
process.stdout.write(`${host.pid}\n`);
setInterval(() => {}, 60_000);
