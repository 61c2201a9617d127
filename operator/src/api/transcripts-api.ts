/**
 * The transcripts API (DESIGN §2: "the transcript lives in Postgres, never in etcd"), an aggregated API
 * the gateway serves behind the API server, as metrics-server serves `metrics.k8s.io`:
 *
 *   GET /apis/transcripts.gatehouse.dev/v1alpha1/namespaces/{ns}/agentsessiontranscripts/{name}
 *       ?limit=N&continue=TOKEN → AgentSessionTranscript (one page of the session's events)
 *
 * Its own group: an APIService for `gatehouse.dev/v1alpha1` would take the CRDs' group over. The API
 * server authenticates the person, authorizes `get` on the resource as for any other, and proxies
 * with its front-proxy client certificate; the gateway authorizes again with SubjectAccessReviews.
 * Verbs on `agentsessiontranscripts`:
 *   get      reach the API, and read the transcripts of sessions whose subject is the caller (persona
 *            `gatehouse-session-user`; not in the built-in `view`)
 *   get-any  read any session's transcript in the namespace (with `get`: ClusterRole
 *            `gatehouse-transcript-reader`, bound explicitly, e.g. to approvers)
 * Errors are `metav1.Status` objects, as the API server's own.
 */
import { z } from "zod";

export const TRANSCRIPTS_GROUP = "transcripts.gatehouse.dev";
export const TRANSCRIPTS_VERSION = "v1alpha1";
export const TRANSCRIPTS_GROUP_VERSION = `${TRANSCRIPTS_GROUP}/${TRANSCRIPTS_VERSION}`;
export const TRANSCRIPTS_RESOURCE = "agentsessiontranscripts";
export const TRANSCRIPT_KIND = "AgentSessionTranscript";
/** The custom verb that reads any session's transcript, not only one's own. */
export const GET_ANY_VERB = "get-any";
/** The APIService's name (`<version>.<group>`). */
export const TRANSCRIPTS_API_SERVICE = `${TRANSCRIPTS_VERSION}.${TRANSCRIPTS_GROUP}`;
/** Events per page: the default and the most a request may ask for. */
export const MAX_TRANSCRIPT_PAGE = 1000;

/** The path of a session's transcript under the API server. */
export function transcriptPath(namespace: string, name: string): string {
  return `/apis/${TRANSCRIPTS_GROUP_VERSION}/namespaces/${encodeURIComponent(namespace)}/${TRANSCRIPTS_RESOURCE}/${encodeURIComponent(name)}`;
}

/** The query: at most `limit` events (1–{@link MAX_TRANSCRIPT_PAGE}), from where `continue` left off. */
export const TranscriptQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_TRANSCRIPT_PAGE).default(MAX_TRANSCRIPT_PAGE),
  continue: z.string().max(512).optional(),
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

/**
 * A page of a session's transcript, in seq order. `page.continue` is set while events may follow: pass
 * it back to read the next page; its absence means the end.
 */
export const AgentSessionTranscript = z.object({
  apiVersion: z.literal(TRANSCRIPTS_GROUP_VERSION),
  kind: z.literal(TRANSCRIPT_KIND),
  metadata: z.object({
    name: z.string(),
    namespace: z.string(),
    /** The AgentSession's uid: the transcript is that session's, not a later one's of the same name. */
    uid: z.string(),
    creationTimestamp: z.string().optional(),
  }),
  events: z.array(TranscriptEvent),
  page: z.object({ continue: z.string().optional() }),
});
export type AgentSessionTranscript = z.infer<typeof AgentSessionTranscript>;

/** A `metav1.Status` failure, as the API server answers and the aggregated API too. */
export const Status = z.object({
  kind: z.literal("Status"),
  message: z.string().default(""),
  reason: z.string().optional(),
  code: z.number().int().optional(),
});
export type Status = z.infer<typeof Status>;

const ContinueToken = z.object({ uid: z.string().min(1), after: z.number().int().min(0) });

/**
 * The opaque `continue` token: the session's uid and the last seq served. Not a secret and not signed:
 * a caller who edits it only skips events of a transcript they may read anyway.
 */
export function continueToken(uid: string, after: number): string {
  return Buffer.from(JSON.stringify({ uid, after })).toString("base64url");
}

/** The token's session uid and last seq; undefined when `token` is not one {@link continueToken} made. */
export function parseContinueToken(token: string): { uid: string; after: number } | undefined {
  try {
    const parsed = ContinueToken.safeParse(JSON.parse(Buffer.from(token, "base64url").toString("utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Discovery: the group's one resource (APIResourceList at `/apis/{group}/{version}`). */
export function transcriptsResourceList(): Record<string, unknown> {
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: TRANSCRIPTS_GROUP_VERSION,
    resources: [
      {
        name: TRANSCRIPTS_RESOURCE,
        singularName: "agentsessiontranscript",
        namespaced: true,
        kind: TRANSCRIPT_KIND,
        verbs: ["get"],
      },
    ],
  };
}

/** Discovery: the group (APIGroup at `/apis/{group}`). */
export function transcriptsGroup(): Record<string, unknown> {
  const version = { groupVersion: TRANSCRIPTS_GROUP_VERSION, version: TRANSCRIPTS_VERSION };
  return {
    kind: "APIGroup",
    apiVersion: "v1",
    name: TRANSCRIPTS_GROUP,
    versions: [version],
    preferredVersion: version,
  };
}
