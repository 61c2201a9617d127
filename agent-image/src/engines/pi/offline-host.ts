/**
 * For the Pi process tests and their fixture: a PiHost whose model endpoint is never asked, and the
 * empty session that starts its Pi — Pi's start is under test there, not a run.
 */
import { pino } from "pino";
import { PiHost, type PiHostOptions } from "./host.ts";
import { sessionFileText } from "./session-file.ts";

/** A PiHost in `dir` whose model endpoint is unreachable (the discard port). */
export function offlineHost(dir: string, options: Partial<PiHostOptions> = {}): PiHost {
  return new PiHost({
    dir,
    model: {
      baseUrl: "http://127.0.0.1:9/v1",
      auth: { apiKey: "k" },
      timeoutMs: 1000,
      maxRetries: 0,
      maxRetryDelayMs: 1000,
    },
    logger: pino({ level: "silent" }),
    ...options,
  });
}

/** Starts `host`'s Pi with an empty session; no model is asked. */
export function loadEmptySession(host: PiHost): Promise<void> {
  const sink = { event() {}, execute() {}, exited() {} };
  return host.load(
    sessionFileText([], { provider: "gatehouse", model: "session-model", cwd: "/" }),
    { system: "", model: "none", tools: [], toolChoiceNone: false, callArguments: [] },
    sink,
    new AbortController().signal,
  );
}
