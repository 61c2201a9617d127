/**
 * The person-facing transcript read (DESIGN §2: "the transcript lives in Postgres, never in etcd"),
 * defined once: the gateway serves it (`gateway/transcript-route.ts`) and `kubectl gatehouse
 * transcript` calls it.
 *
 *   GET /v1/namespaces/{namespace}/agentsessions/{name}/transcript?afterSeq=N&limit=M → TranscriptPage
 *
 * Bearer token: the caller's own Kubernetes credential (the kubeconfig user's token). The gateway asks
 * the API server, with that token, who it is (SelfSubjectReview) and whether it may `get` the
 * AgentSession (SelfSubjectAccessReview): whoever may read the session may read its transcript.
 * Errors: non-2xx with `{kind, message}` — 403 forbidden (no valid token, or not allowed), 404
 * not_found (no such session), 400 invalid_arguments (bad query).
 */
import { z } from "zod";

/** The path of a session's transcript. */
export function transcriptPath(namespace: string, name: string): string {
  return `/v1/namespaces/${encodeURIComponent(namespace)}/agentsessions/${encodeURIComponent(name)}/transcript`;
}

/** The query: events after `afterSeq` (default 0), at most `limit` (1–1000, default 1000). */
export const TranscriptQuery = z.object({
  afterSeq: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(1000),
});
export type TranscriptQuery = z.infer<typeof TranscriptQuery>;

/** One transcript event as stored (`store/transcripts.ts`), with its time as RFC 3339. */
export const TranscriptEvent = z.object({
  seq: z.number().int().min(1),
  source: z.enum(["agent", "core"]),
  kind: z.string(),
  payload: z.record(z.string(), z.unknown()),
  time: z.string(),
});
export type TranscriptEvent = z.infer<typeof TranscriptEvent>;

/** A page of a session's transcript, in seq order; fewer than `limit` events means the end. */
export const TranscriptPage = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  events: z.array(TranscriptEvent),
});
export type TranscriptPage = z.infer<typeof TranscriptPage>;

/** An error answer of the route. */
export const TranscriptError = z.object({ kind: z.string(), message: z.string() });
