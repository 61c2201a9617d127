/**
 * `transcript SESSION`: a session's transcript, which lives in Postgres (DESIGN §2), read through the
 * API server from the transcripts API (api/transcripts-api.ts), as `kubectl get --raw` would: the API
 * server authenticates the caller with their kubeconfig credential, whatever its kind, and the gateway
 * behind it authorizes them by SubjectAccessReview. No gateway URL, no port-forward, no token handed on.
 */
import { request } from "node:https";
import {
  AgentSessionTranscript,
  MAX_TRANSCRIPT_PAGE,
  Status,
  type TranscriptEvent,
  transcriptPath,
} from "../../api/transcripts-api.ts";
import type { Connection } from "./connection.ts";
import type { Output } from "./output.ts";
import { oneLine } from "./terminal-text.ts";
import { EXIT, UsageError } from "./usage.ts";

/** Characters of a long payload text shown in the text form (-o json shows everything). */
const SHOWN = 400;

/** Options of {@link printTranscript}. */
export interface TranscriptOptions {
  session: string;
  output: "text" | "json";
  /** Events asked per request (default and most: {@link MAX_TRANSCRIPT_PAGE}). */
  pageSize?: number;
}

/** GET `path` from the kubeconfig's API server as its user: status and parsed JSON body. */
async function getFromApiServer(
  connection: Connection,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const server = connection.config.getCurrentCluster()?.server;
  if (!server) throw new UsageError("the kubeconfig's context names no cluster server");
  const url = new URL(path, server);
  const options: Parameters<typeof request>[1] = { method: "GET", headers: { accept: "application/json" } };
  // CA, client certificate, bearer token (static, file, exec or auth provider): as kubectl sends them.
  await connection.config.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const call = request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON (a proxy's page): shown as text.
        }
        resolve({ status: response.statusCode ?? 0, body });
      });
      response.on("error", reject);
    });
    call.on("error", (error) =>
      reject(new Error(`cannot reach the API server at ${server}: ${error.message}`)),
    );
    call.end();
  });
}

/** Every event of the session, page after page. Errors: the API server's answer, as an Error. */
export async function fetchTranscript(
  connection: Connection,
  session: string,
  pageSize: number = MAX_TRANSCRIPT_PAGE,
): Promise<AgentSessionTranscript> {
  const events: TranscriptEvent[] = [];
  let token: string | undefined;
  for (;;) {
    const query = new URLSearchParams({ limit: String(pageSize), ...(token ? { continue: token } : {}) });
    const { status, body } = await getFromApiServer(
      connection,
      `${transcriptPath(connection.namespace, session)}?${query}`,
    );
    if (status !== 200) {
      const failure = Status.safeParse(body);
      throw new Error(
        `the API server answered ${status}: ${failure.success ? failure.data.message : JSON.stringify(body)}`,
      );
    }
    const page = AgentSessionTranscript.parse(body);
    events.push(...page.events);
    token = page.page.continue;
    if (!token) return { ...page, events, page: {} };
  }
}

function clip(text: string): string {
  return text.length > SHOWN
    ? `${text.slice(0, SHOWN)}… (${text.length} characters; -o json shows all)`
    : text;
}

/**
 * One line per event: seq, time, who wrote it, its kind and what it says — model text made harmless
 * for the terminal (terminal-text.ts) and on one line.
 */
export function transcriptLines(events: TranscriptEvent[]): string[] {
  return events.map((event) => {
    const p = event.payload;
    const text = (key: string) => (typeof p[key] === "string" ? (p[key] as string) : "");
    let detail: string;
    switch (event.kind) {
      case "tool_call":
        detail = `${text("tool")} ${clip(text("arguments"))} (call ${text("callId")})`;
        break;
      case "tool_result":
        detail = `${text("status")} (call ${text("callId")}): ${clip(text("content"))}`;
        break;
      case "approval_outcome":
        detail = `${text("approval")} ${text("phase")}: ${clip(text("content"))}`;
        break;
      case "usage":
        detail = `${text("model")}: ${String(p.inputTokens)} tokens in, ${String(p.outputTokens)} out`;
        break;
      case "compaction": {
        // What the model saw from here on; the transcript itself keeps every turn.
        const c = (typeof p.compaction === "object" && p.compaction !== null ? p.compaction : {}) as Record<
          string,
          unknown
        >;
        detail = `context compacted (${String(c.reason)}): ${String(c.summarizedTurns)} turns summarized, ${String(c.keptTurns)} kept; about ${String(c.tokensBefore)} → ${String(c.tokensAfter)} of ${String(c.window)} tokens`;
        break;
      }
      default:
        detail = clip(text("text") || text("content") || JSON.stringify(p));
    }
    return `${String(event.seq).padStart(4)}  ${oneLine(event.time)}  ${oneLine(event.source).padEnd(5)}  ${oneLine(event.kind).padEnd(16)}  ${oneLine(detail)}`;
  });
}

/** Prints the transcript; returns the exit code (1 when the API server or the gateway refuses or fails). */
export async function printTranscript(
  connection: Connection,
  options: TranscriptOptions,
  output: Output,
): Promise<number> {
  try {
    const transcript = await fetchTranscript(connection, options.session, options.pageSize);
    if (options.output === "json") output.out(JSON.stringify(transcript, null, 2));
    else {
      const { namespace, name, uid } = transcript.metadata;
      output.out(`AgentSession ${namespace}/${name} (uid ${uid}): ${transcript.events.length} events`);
      for (const line of transcriptLines(transcript.events)) output.out(line);
    }
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    output.err(
      `kubectl-gatehouse: cannot read the transcript of ${connection.namespace}/${options.session}: ${(error as Error).message}`,
    );
    return EXIT.refused;
  }
}
