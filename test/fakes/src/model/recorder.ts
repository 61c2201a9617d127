/**
 * The scripted model's record of every request it received (control paths `/_…` excepted), so tests
 * can assert exactly what a runtime sent: method, path, headers, the body as received, and the answer's
 * status and headers.
 */
import type { ChatRequest } from "./conversation.ts";
import type { ResponsesRequest } from "./responses-request.ts";

/** One request the model received. Entries come out as copies; `seq` counts from 1 per server. */
export interface RecordedRequest {
  seq: number;
  /** When it arrived, ISO 8601 with milliseconds. */
  time: string;
  method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string;
  /** Request headers, lower-case names, repeated values joined by ", "; hop-by-hop headers left out. */
  headers: Record<string, string>;
  /** The Authorization header, to check that a proxy added the key (test fixture only). */
  authorization: string | undefined;
  /** The JSON body exactly as parsed from the wire (undefined when none or not JSON). */
  body: unknown;
  /** The Chat Completions request, when the body was one (typed view of `body`). */
  chat: ChatRequest | undefined;
  /** The Responses request, when the body was one (typed view of `body`). */
  responses: ResponsesRequest | undefined;
  /** For either wire: the model asked for, the step the conversation is at, whether streamed. */
  model: string | undefined;
  step: number | undefined;
  stream: boolean;
  /** The HTTP status answered, and the answer's headers (e.g. `retry-after` of an injected 429). */
  status: number;
  responseHeaders: Record<string, string>;
}

const leftOut = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length"]);

/** Headers as recorded: lower-case names, lists joined, hop-by-hop and length headers left out. */
export function recordedHeaders(
  headers: Record<string, string | string[] | number | undefined>,
): Record<string, string> {
  const recorded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || leftOut.has(name.toLowerCase())) continue;
    recorded[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  return recorded;
}

/** The requests of one server, in arrival order. */
export interface Recorder {
  /** Starts an entry for an arriving request; the server fills in body, chat fields and answer. */
  start(
    method: string,
    path: string,
    headers: Record<string, string | string[] | undefined>,
  ): RecordedRequest;
  /** Copies of the entries with `seq` greater than `since` (all when 0). */
  list(since?: number): RecordedRequest[];
  /** Forgets every entry; `seq` keeps counting. */
  clear(): void;
}

/** A new, empty recorder. */
export function createRecorder(): Recorder {
  let entries: RecordedRequest[] = [];
  let seq = 0;
  return {
    start(method, path, headers) {
      seq += 1;
      const authorization = headers.authorization;
      const entry: RecordedRequest = {
        seq,
        time: new Date().toISOString(),
        method,
        path,
        headers: recordedHeaders(headers),
        authorization: Array.isArray(authorization) ? authorization[0] : authorization,
        body: undefined,
        chat: undefined,
        responses: undefined,
        model: undefined,
        step: undefined,
        stream: false,
        status: 0,
        responseHeaders: {},
      };
      entries.push(entry);
      return entry;
    },
    list: (since = 0) => structuredClone(entries.filter((entry) => entry.seq > since)),
    clear() {
      entries = [];
    },
  };
}
