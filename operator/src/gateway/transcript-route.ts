/**
 * `GET /v1/namespaces/{namespace}/agentsessions/{name}/transcript` (api/transcript-read.ts): a
 * person reads a session's transcript from Postgres with their own Kubernetes credential — allowed
 * exactly when RBAC lets them `get` that AgentSession (person-access.ts: SelfSubjectReview and
 * SelfSubjectAccessReview made with their token). Registered on the root app,
 * outside the /v1 plugin whose hook admits only agent pods. Every read is logged with the user.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type TranscriptPage, TranscriptQuery } from "../api/transcript-read.ts";
import { GatehouseError } from "../core/errors.ts";
import type { Caches } from "../kube/caches.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import type { PersonAccess } from "./person-access.ts";

/** Options of {@link transcriptRoute}. */
export interface TranscriptRouteOptions {
  caches: Pick<Caches, "sessions">;
  transcripts: Pick<TranscriptStore, "list">;
  people: PersonAccess;
}

type Request = FastifyRequest<{ Params: { namespace: string; name: string } }>;

/** A fastify plugin serving the person-facing transcript read. */
export async function transcriptRoute(app: FastifyInstance, options: TranscriptRouteOptions): Promise<void> {
  app.get(
    "/v1/namespaces/:namespace/agentsessions/:name/transcript",
    async (request: Request): Promise<TranscriptPage> => {
      const query = TranscriptQuery.parse(request.query);
      const header = request.headers.authorization ?? "";
      const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
      if (!token) {
        throw new GatehouseError(
          "forbidden",
          "A bearer token (your Kubernetes credential, as in your kubeconfig) is required.",
        );
      }
      const { namespace, name } = request.params;
      const { person, mayGet } = await options.people.review(token, namespace, name);
      // Asked before looking the session up, so a refusal does not tell whether the session exists.
      if (!mayGet) {
        throw new GatehouseError(
          "forbidden",
          `${person.username} may not get agentsessions/${name} in namespace ${namespace}, so may not read its transcript.`,
        );
      }
      const session = options.caches.sessions.get(name, namespace);
      if (!session) {
        throw new GatehouseError("not_found", `AgentSession ${namespace}/${name} does not exist.`);
      }
      const events = await options.transcripts.list(session.metadata.uid, query);
      request.log.info(
        { user: person.username, namespace, name, afterSeq: query.afterSeq, events: events.length },
        "transcript read",
      );
      return {
        namespace,
        name,
        uid: session.metadata.uid,
        events: events.map((e) => ({
          seq: e.seq,
          source: e.source,
          kind: e.kind,
          payload: e.payload,
          time: new Date(Math.floor(e.atMicros / 1000)).toISOString(),
        })),
      };
    },
  );
}
