/**
 * The engines the conformance suite runs: one entry per engine. Adding an engine is one entry here;
 * every case of `cases/` then runs against it — an in-process engine in `conformance.test.ts` (vitest
 * project `unit`), a subprocess engine in `conformance.subprocess.test.ts` (project `engines`, which
 * starts the real engine binaries and stays out of `make unit`).
 *
 * An entry starts its engine once per model endpoint (the scripted model, and an address where nothing
 * listens) and builds a runtime per case: the model plays the script `model` (`scripted/<name>`), and
 * every tool call goes to `tools`. It must keep retries short (the cases wait for them) but bounded: a
 * model endpoint that stays down must end the run.
 */
import OpenAI from "openai";
import { pino } from "pino";
import { createBuiltinRuntime } from "../engines/builtin/engine.ts";
import { startCodexForConformance } from "../engines/codex/conformance-entry.ts";
import { startPiForConformance } from "../engines/pi/conformance-entry.ts";
import type { AgentRuntime, ToolExecutor } from "../runtime.ts";

/** What a case hands an engine instance to build one runtime. */
export interface EngineSetup {
  /** The model name, `scripted/<script>`. */
  model: string;
  tools: ToolExecutor;
}

/** An engine started against one model endpoint: what its runtimes share (a process, a folder). */
export interface EngineInstance {
  create(setup: EngineSetup): AgentRuntime;
  close(): Promise<void>;
}

/** One engine under test. */
export interface EngineEntry {
  name: string;
  /** Where the engine runs: in the agent's process, or as a child process of it (a real binary). */
  runs: "in-process" | "subprocess";
  /** Starts the engine against the OpenAI-compatible base URL `modelUrl` (ends in `/v1`). */
  start(modelUrl: string): Promise<EngineInstance>;
  /**
   * Cases (by title) this engine is known to fail, with what is wrong: they run as `it.fails`, so the
   * suite notices when one starts passing. Empty is the goal.
   */
  knownFailures?: Record<string, string>;
}

const builtin: EngineEntry = {
  name: "builtin",
  runs: "in-process",
  start: async (modelUrl) => ({
    create: ({ model, tools }) =>
      createBuiltinRuntime({
        client: new OpenAI({ baseURL: modelUrl, apiKey: "unused", maxRetries: 0 }),
        model,
        tools,
        maxTurns: 20,
        maxToolCalls: 20,
        retry: { maxRetries: 2, baseDelayMs: 5, maxDelayMs: 20, maxRetryAfterMs: 60_000 },
        logger: pino({ level: "silent" }),
      }),
    close: async () => {},
  }),
};

/** Pi (`pi --mode rpc`) as a child process, one per model endpoint, shared by the cases. */
const pi: EngineEntry = { name: "pi", runs: "subprocess", start: startPiForConformance };

/** `codex app-server` as a child process, one per model endpoint, a thread per run. */
const codex: EngineEntry = {
  name: "codex",
  runs: "subprocess",
  start: startCodexForConformance,
};

/** Every engine the suite runs. */
export const engines: EngineEntry[] = [builtin, pi, codex];
