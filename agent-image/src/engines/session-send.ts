/**
 * A session's `send` and `abort` around an engine's run, the same for every engine: one `send` at a
 * time (another gets a `conflict` error), the run stopped by `abort` or by the caller's signal, and a
 * run that throws ends with the error event `errorEvent` makes of it.
 */
import type { Logger } from "pino";
import type { RuntimeEvent, RuntimeSession } from "../runtime.ts";

export type ErrorEvent = Extract<RuntimeEvent, { type: "error" }>;

export interface SessionSendOptions {
  /** The engine's run of one `send`; `signal` is aborted by `abort` or the caller's signal. */
  run(text: string | undefined, signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  /** The event a run that threw ends with (`signal` is the run's). */
  errorEvent(error: unknown, signal: AbortSignal): ErrorEvent;
  logger: Logger;
}

export function sessionSend(options: SessionSendOptions): RuntimeSession {
  const controller = new AbortController();
  let running = false;

  async function* send(
    text: string | undefined,
    sendOptions: { signal?: AbortSignal } = {},
  ): AsyncGenerator<RuntimeEvent> {
    if (running) {
      yield { type: "error", kind: "conflict", message: "send is already running on this session" };
      return;
    }
    running = true;
    const signal = sendOptions.signal
      ? AbortSignal.any([controller.signal, sendOptions.signal])
      : controller.signal;
    try {
      yield* options.run(text, signal);
    } catch (error) {
      const event = options.errorEvent(error, signal);
      // The message only: error objects can carry response headers and request details.
      options.logger.warn({ kind: event.kind, message: event.message }, "run stopped");
      yield event;
    } finally {
      running = false;
    }
  }

  return { send, abort: () => controller.abort(new Error("aborted by the runtime's caller")) };
}
