/**
 * Talking to the Gatehouse gateway: every request carries the pod's projected token as its bearer,
 * read from the file for each request (the kubelet refreshes it before it expires), and is retried
 * while the gateway says "not now" — 429 (the session's request limits, after its Retry-After), 502,
 * 503 (a new pod the gateway does not know yet, a replica stopping), 504 — or cannot be reached. A
 * repeated MCP request keeps its JSON-RPC id, so Gatehouse answers it as the same call: nothing runs
 * twice.
 */
import { readFileSync } from "node:fs";
import type { StoredAnswer } from "./convert.ts";

/** How long one request keeps being retried, in milliseconds (a gateway rollout takes tens of seconds). */
const RETRY_FOR_MS = 90_000;
const RETRYABLE = new Set([429, 502, 503, 504]);

/** The projected token in `file`, read now. Throws naming the file when it cannot be read. */
export function readToken(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    throw new Error(`cannot read the token file ${file}: ${(error as Error).message}`);
  }
}

/** `Retry-After` in milliseconds (delta-seconds only, as the gateway sends it); 0 when absent. */
function retryAfterMs(response: Response): number {
  const seconds = Number(response.headers.get("retry-after"));
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

/**
 * A `fetch` for the gateway: adds `Authorization: Bearer <token>` (read from `tokenFile` each time)
 * and retries as the file comment says, with backoff from 0.5 s to 5 s. `log` hears about each retry.
 */
export function gatewayFetch(tokenFile: string, log: (line: string) => void): typeof fetch {
  return async (input, init) => {
    const deadline = Date.now() + RETRY_FOR_MS;
    for (let attempt = 0; ; attempt++) {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${readToken(tokenFile)}`);
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await fetch(input, { ...init, headers });
        if (!RETRYABLE.has(response.status)) return response;
      } catch (error) {
        if (init?.signal?.aborted) throw error;
        failure = error;
      }
      const waitMs = Math.max(Math.min(500 * 2 ** attempt, 5_000), response ? retryAfterMs(response) : 0);
      if (Date.now() + waitMs > deadline) {
        if (response) return response;
        throw failure;
      }
      await response?.body?.cancel();
      log(`the gateway answered ${response?.status ?? String(failure)}; retrying in ${waitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  };
}

/** What the agent reads of `GET /v1/session`: its task and the model the proxy answers for. */
export interface SessionTask {
  name: string;
  instructions: string;
  messages: Array<{ text: string }>;
  model: { name: string };
  limits: { maxToolCalls: number };
  /** The final answers already stored, from the session's history. */
  answers: StoredAnswer[];
}

interface HistoryEvent {
  seq: number;
  kind: string;
  payload: Record<string, unknown>;
}

async function getJson<T>(gatewayFetch: typeof fetch, url: URL): Promise<T> {
  const response = await gatewayFetch(url);
  if (!response.ok)
    throw new Error(`GET ${url.pathname} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

/**
 * The session's task: `GET /v1/session`, then the rest of its history page by page
 * (`GET /v1/session/history?afterSeq=N`) for the answers already given. Throws with the gateway's
 * answer when it refuses.
 */
export async function readTask(gatewayUrl: string, gatewayFetch: typeof fetch): Promise<SessionTask> {
  const base = gatewayUrl.replace(/\/+$/, "");
  const view = await getJson<
    Omit<SessionTask, "answers"> & { history: HistoryEvent[]; historyComplete: boolean }
  >(gatewayFetch, new URL(`${base}/v1/session`));
  const history = [...view.history];
  for (let complete = view.historyComplete; !complete; ) {
    const afterSeq = history.at(-1)?.seq ?? 0;
    const page = await getJson<{ history: HistoryEvent[]; complete: boolean }>(
      gatewayFetch,
      new URL(`${base}/v1/session/history?afterSeq=${afterSeq}`),
    );
    history.push(...page.history);
    complete = page.complete || page.history.length === 0;
  }
  const answers = history
    .filter((event) => event.kind === "final_answer")
    .map((event) => ({ turn: Number(event.payload.turn), text: String(event.payload.text ?? "") }));
  return {
    name: view.name,
    instructions: view.instructions,
    messages: view.messages,
    model: view.model,
    limits: view.limits,
    answers,
  };
}

/**
 * Reports why the agent failed: `POST /v1/session/events` with `{kind: "error", turn, text}` (the
 * agent protocol's AgentEvent; `text` at most 64 KiB). The session's status message then says it.
 * Best effort: a failure to report is logged, the agent exits anyway.
 */
export async function postError(
  gatewayUrl: string,
  gatewayFetch: typeof fetch,
  turn: number,
  text: string,
  log: (line: string) => void,
): Promise<void> {
  try {
    const response = await gatewayFetch(new URL(`${gatewayUrl.replace(/\/+$/, "")}/v1/session/events`), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "error", turn, text: text.slice(0, 65_536) }),
    });
    if (!response.ok) log(`the error was not recorded: ${response.status} ${await response.text()}`);
  } catch (error) {
    log(`the error was not recorded: ${error instanceof Error ? error.message : String(error)}`);
  }
}
