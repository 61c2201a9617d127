/**
 * Decides which request of a conversation meets a step's transport fault (429, 5xx): the first `times`
 * requests per fault, counted per conversation — the model, the step and the messages — so an SDK's
 * retry of the same request gets past the fault while a new conversation meets it again.
 */
import { createHash } from "node:crypto";
import type { TransportFault } from "./script.ts";

/** An HTTP error to answer instead of a completion. */
export interface InjectedError {
  status: number;
  headers: Record<string, string>;
  type: "rate_limit_error" | "server_error";
  message: string;
}

/** Counts served faults per conversation; one per server. */
export interface TransportFaults {
  /** The error this request gets, or undefined when its faults are used up. */
  next(conversation: unknown, step: number, faults: TransportFault[]): InjectedError | undefined;
  /** Forgets every count: each conversation meets its faults again. */
  reset(): void;
}

function injected(fault: TransportFault): InjectedError {
  if (fault.kind === "server_error") {
    return { status: fault.status, headers: {}, type: "server_error", message: "scripted server error" };
  }
  const headers: Record<string, string> = { "retry-after": String(fault.retryAfterSeconds) };
  if (fault.retryAfterMs !== undefined) headers["retry-after-ms"] = String(fault.retryAfterMs);
  return { status: 429, headers, type: "rate_limit_error", message: "scripted rate limit" };
}

/** A new counter with nothing served. */
export function createTransportFaults(): TransportFaults {
  const served = new Map<string, number>();
  return {
    next(conversation, step, faults) {
      const digest = createHash("sha256").update(JSON.stringify(conversation)).digest("hex");
      for (const [index, fault] of faults.entries()) {
        const key = `${digest}#${step}#${index}`;
        const count = served.get(key) ?? 0;
        if (count < fault.times) {
          served.set(key, count + 1);
          return injected(fault);
        }
      }
      return undefined;
    },
    reset() {
      served.clear();
    },
  };
}
