/**
 * Client of the gateway's agent API (`@gatehouse/operator/agent-protocol`, DESIGN §5). The bearer token
 * is the pod's projected ServiceAccount token, re-read from its file on every request because the node
 * refreshes it at 80% of its lifetime. Answers are parsed with the protocol's zod schemas; failures are
 * `GatewayError`s carrying the gateway's error kind. Connection failures and 502/503/504 are retried with
 * backoff for up to `retryForMs` (an operator failover takes tens of seconds), and a 429 (the session
 * over its request limits) after the `Retry-After` the gateway names: the gateway derives each
 * execution's identity from (turn, position, arguments), so repeating an invoke cannot execute twice.
 * The session's history is read page by page (`GET /v1/session/history`), so the gateway never holds a
 * whole transcript.
 */
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type AgentEvent,
  ApiError,
  ApprovalWait,
  HistoryPage,
  InvokeAnswer,
  type InvokeCall,
  SessionView,
} from "@gatehouse/operator/agent-protocol";
import { z } from "zod";

/** `GET /v1/session` as this runtime reads it: the contract's SessionView. */
export const AgentSessionView = SessionView;
export type AgentSessionView = z.infer<typeof AgentSessionView>;

/** The pod's bearer token: the projected token file's content, read anew on every call. */
export async function readBearerToken(tokenFile: string): Promise<string> {
  try {
    return (await readFile(tokenFile, "utf8")).trim();
  } catch (error) {
    throw new GatewayError("internal", `cannot read the token file ${tokenFile}`, { cause: error });
  }
}

/** A failed gateway call: `kind` from the gateway's ApiError (or `unavailable` / `internal` locally). */
export class GatewayError extends Error {
  readonly kind: string;
  readonly status: number | undefined;
  /** The gateway's `Retry-After`, in milliseconds, when it named one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: string,
    message: string,
    options?: { status?: number; retryAfterMs?: number; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "GatewayError";
    this.kind = kind;
    this.status = options?.status;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMsOf(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Options of `createGatewayClient`. */
export interface GatewayClientOptions {
  /** e.g. `http://10.88.0.1:8443` (env GATEHOUSE_GATEWAY_URL); no trailing path. */
  baseUrl: string;
  /** Path of the projected token file, already prefixed by LOCAL_NODE_ROOT when set. */
  tokenFile: string;
  /**
   * How long one request keeps being retried after a retryable failure (gateway unreachable, 502/503/504),
   * in milliseconds (default 90 000: longer than an operator leader failover — a 15 s Lease plus the new
   * leader's resync — so a pod created just before its leader died waits until the new one records it).
   */
  retryForMs?: number;
  /** First backoff in milliseconds, doubled per attempt with jitter (default 250), at most 5 000. */
  backoffMs?: number;
}

/** The agent API. Every method takes the run's abort signal. */
export interface GatewayClient {
  getSession(signal?: AbortSignal): Promise<AgentSessionView>;
  postEvent(event: AgentEvent, signal?: AbortSignal): Promise<void>;
  invoke(call: InvokeCall, signal?: AbortSignal): Promise<InvokeAnswer>;
  /** Long-polls an Approval for at most `timeoutSeconds` (≤ 60). */
  waitApproval(name: string, timeoutSeconds: number, signal?: AbortSignal): Promise<ApprovalWait>;
}

const Accepted = z.object({ accepted: z.literal(true) });
const retryableStatus = new Set([429, 502, 503, 504]);

/** A gateway client over the global fetch. */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const root = options.baseUrl.replace(/\/+$/, "");
  const retryForMs = options.retryForMs ?? 90_000;
  const backoffMs = options.backoffMs ?? 250;
  const maxBackoffMs = 5_000;

  const token = () => readBearerToken(options.tokenFile);

  async function once<T>(
    method: string,
    path: string,
    body: unknown,
    schema: z.ZodType<T>,
    signal?: AbortSignal,
  ) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${await token()}`,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(`${root}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new GatewayError("unavailable", `gateway unreachable for ${method} ${path}`, { cause: error });
    }
    const payload: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      const parsed = ApiError.safeParse(payload);
      const kind = parsed.success
        ? parsed.data.kind
        : retryableStatus.has(response.status)
          ? "unavailable"
          : "internal";
      const message = parsed.success ? parsed.data.message : `HTTP ${response.status}`;
      const retryAfterMs = retryAfterMsOf(response.headers.get("retry-after"));
      throw new GatewayError(kind, `gateway refused ${method} ${path}: ${message}`, {
        status: response.status,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    }
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      throw new GatewayError("internal", `gateway answered ${method} ${path} with an unexpected body`, {
        cause: parsed.error,
      });
    }
    return parsed.data;
  }

  async function request<T>(
    method: string,
    path: string,
    body: unknown,
    schema: z.ZodType<T>,
    signal?: AbortSignal,
  ) {
    const deadline = Date.now() + retryForMs;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await once(method, path, body, schema, signal);
      } catch (error) {
        const retryable =
          error instanceof GatewayError &&
          (error.status === undefined ? error.kind === "unavailable" : retryableStatus.has(error.status));
        const backoff = Math.min(maxBackoffMs, backoffMs * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5);
        // The gateway's Retry-After is the earliest a repeat can be admitted: waiting less only repeats the 429.
        const delayMs = Math.max(backoff, error instanceof GatewayError ? (error.retryAfterMs ?? 0) : 0);
        if (!retryable || Date.now() + delayMs > deadline || signal?.aborted) throw error;
        await sleep(delayMs, undefined, signal ? { signal } : {});
      }
    }
  }

  /** The session with its whole history, read on page by page after the view's first. */
  async function getSession(signal?: AbortSignal): Promise<AgentSessionView> {
    const view = await request("GET", "/v1/session", undefined, AgentSessionView, signal);
    const history = [...view.history];
    let complete = view.historyComplete;
    while (!complete) {
      const afterSeq = history.at(-1)?.seq ?? 0;
      const page = await request(
        "GET",
        `/v1/session/history?afterSeq=${afterSeq}`,
        undefined,
        HistoryPage,
        signal,
      );
      if (!page.complete && page.history.length === 0) {
        throw new GatewayError("internal", `gateway answered an empty history page after seq ${afterSeq}`);
      }
      history.push(...page.history);
      complete = page.complete;
    }
    return { ...view, history, historyComplete: true };
  }

  return {
    getSession,
    postEvent: async (event, signal) => {
      await request("POST", "/v1/session/events", event, Accepted, signal);
    },
    invoke: (call, signal) => request("POST", "/v1/invoke", call, InvokeAnswer, signal),
    waitApproval: (name, timeoutSeconds, signal) =>
      request(
        "GET",
        `/v1/approvals/${encodeURIComponent(name)}/wait?timeoutSeconds=${Math.min(60, Math.max(1, timeoutSeconds))}`,
        undefined,
        ApprovalWait,
        signal,
      ),
  };
}
