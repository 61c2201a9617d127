/**
 * `transcript SESSION`: a session's transcript, which lives in Postgres (DESIGN §2), read from the
 * gateway's person-facing route (api/transcript-read.ts) with the caller's own kubeconfig credential;
 * the gateway allows it exactly when RBAC lets the caller get the AgentSession.
 */
import type { RequestOptions } from "node:https";
import {
  TranscriptError,
  type TranscriptEvent,
  TranscriptPage,
  transcriptPath,
} from "../../api/transcript-read.ts";
import type { Connection } from "./connection.ts";
import type { Output } from "./output.ts";
import { EXIT, UsageError } from "./usage.ts";

/** Events asked per request (the route's maximum). */
const PAGE = 1000;
/** Characters of a long payload text shown in the text form (-o json shows everything). */
const SHOWN = 400;

/** Options of {@link printTranscript}. */
export interface TranscriptOptions {
  session: string;
  /** The gateway's base URL (`--gateway`, else $GATEHOUSE_GATEWAY_URL). */
  gateway: string | undefined;
  output: "text" | "json";
}

/** The kubeconfig user's bearer token (static, token file, exec or auth provider), as kubectl sends it. */
async function bearerOf(connection: Connection): Promise<string> {
  const options: RequestOptions = { headers: {} };
  await connection.config.applyToHTTPSOptions(options);
  const header = (options.headers as Record<string, string | undefined>).Authorization ?? "";
  if (!header.startsWith("Bearer ")) {
    throw new UsageError(
      "the kubeconfig user has no bearer token; the gateway authenticates people by token (client certificates cannot be forwarded)",
    );
  }
  return header.slice(7);
}

/** Every event of the session, page after page. Errors: the gateway's answer, as an Error. */
export async function fetchTranscript(
  connection: Connection,
  gateway: string,
  session: string,
): Promise<{ page: TranscriptPage; events: TranscriptEvent[] }> {
  const token = await bearerOf(connection);
  const events: TranscriptEvent[] = [];
  for (;;) {
    const url = new URL(transcriptPath(connection.namespace, session), gateway);
    url.searchParams.set("afterSeq", String(events.at(-1)?.seq ?? 0));
    url.searchParams.set("limit", String(PAGE));
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(
      (error: unknown) => {
        // undici says only "fetch failed"; the cause names the network error (ECONNREFUSED, …).
        const cause = (error as { cause?: { message?: string } }).cause?.message;
        throw new Error(`cannot reach the gateway at ${gateway}: ${cause ?? (error as Error).message}`);
      },
    );
    const body: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      const error = TranscriptError.safeParse(body);
      throw new Error(
        `the gateway answered ${response.status}: ${error.success ? error.data.message : JSON.stringify(body)}`,
      );
    }
    const page = TranscriptPage.parse(body);
    events.push(...page.events);
    if (page.events.length < PAGE) return { page: { ...page, events }, events };
  }
}

function clip(text: string): string {
  return text.length > SHOWN
    ? `${text.slice(0, SHOWN)}… (${text.length} characters; -o json shows all)`
    : text;
}

/** One line per event: seq, time, who wrote it, its kind and what it says. */
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
      default:
        detail = clip(text("text") || text("content") || JSON.stringify(p));
    }
    return `${String(event.seq).padStart(4)}  ${event.time}  ${event.source.padEnd(5)}  ${event.kind.padEnd(16)}  ${detail.replace(/\s+/g, " ")}`;
  });
}

/** Prints the transcript; returns the exit code (1 when the gateway refuses or fails). */
export async function printTranscript(
  connection: Connection,
  options: TranscriptOptions,
  output: Output,
): Promise<number> {
  if (!options.gateway) {
    throw new UsageError("no gateway URL: pass --gateway URL or set GATEHOUSE_GATEWAY_URL");
  }
  try {
    const { page, events } = await fetchTranscript(connection, options.gateway, options.session);
    if (options.output === "json") output.out(JSON.stringify(page, null, 2));
    else {
      output.out(`AgentSession ${page.namespace}/${page.name} (uid ${page.uid}): ${events.length} events`);
      for (const line of transcriptLines(events)) output.out(line);
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
