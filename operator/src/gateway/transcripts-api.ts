/**
 * The transcripts API server (api/transcripts-api.ts): the gateway's second listener, HTTPS only,
 * reached through the API server's aggregation layer (APIService `v1alpha1.transcripts.gatehouse.dev`).
 * Every request must come from the front proxy (front-proxy.ts: client certificate of the requestheader
 * CA, allowed CN); the person it names is authorized by SubjectAccessReview (kube/access-review.ts):
 * `get` on agentsessiontranscripts/NAME reads the sessions whose subject they are, `get-any` any
 * session's. `get` is asked before the session is looked up, so a refusal does not tell whether it
 * exists (the API server asked it too, before proxying). Pages
 * come from Postgres `limit` events at a time, never the whole transcript. Every read is logged with
 * the user and the verb that allowed it.
 */
import type { TLSSocket } from "node:tls";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { StatusReason } from "../api/status/kubernetes.ts";
import {
  type AgentSessionTranscript,
  continueToken,
  GET_ANY_VERB,
  parseContinueToken,
  TRANSCRIPT_KIND,
  TRANSCRIPTS_GROUP,
  TRANSCRIPTS_GROUP_VERSION,
  TRANSCRIPTS_RESOURCE,
  TranscriptQuery,
  transcriptsGroup,
  transcriptsResourceList,
} from "../api/transcripts-api.ts";
import { closeWithin, drainOnClose } from "../http/shutdown.ts";
import type { Authorize } from "../kube/access-review.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import { isDatabaseUnavailable } from "../store/unavailable.ts";
import { NotFromFrontProxy, type ProxiedUser, proxiedUser, type RequestHeaderConfig } from "./front-proxy.ts";

/** The serving certificate and the front proxy's CA, PEM. */
export interface TranscriptsApiTls {
  cert: string;
  key: string;
  requestHeader: RequestHeaderConfig;
}

/** Options of {@link buildTranscriptsApi}. */
export interface TranscriptsApiOptions {
  caches: Pick<Caches, "sessions">;
  transcripts: Pick<TranscriptStore, "list">;
  authorize: Authorize;
  log: Logger;
}

/** An answer as a `metav1.Status` (the API server passes it on to kubectl as its own). */
class StatusError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  constructor(code: number, reason: StatusReason, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

function statusBody(code: number, reason: StatusReason, message: string) {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

declare module "fastify" {
  interface FastifyRequest {
    proxiedUser: ProxiedUser;
  }
}

type TranscriptRequest = FastifyRequest<{
  Params: { namespace: string; name: string };
  Querystring: Record<string, string>;
}>;

const BASE = `/apis/${TRANSCRIPTS_GROUP_VERSION}`;

/**
 * Builds (not starts) the transcripts API on `tls`. `reload(tls)` swaps the certificate and the front
 * proxy's CA on the listening server (the API server rotates its requestheader CA; the chart's
 * serving certificate is renewed) without dropping connections.
 */
export function buildTranscriptsApi(initial: TranscriptsApiTls, options: TranscriptsApiOptions) {
  let requestHeader = initial.requestHeader;
  const secureContext = (tls: TranscriptsApiTls) => ({
    cert: tls.cert,
    key: tls.key,
    ca: tls.requestHeader.clientCa,
  });
  const app = Fastify({
    loggerInstance: options.log.child({ component: "transcripts-api" }),
    // Ask every client for a certificate, trusting only the front proxy's CA; a request without one
    // still gets an answer (401 naming the way in) rather than a failed handshake.
    https: { ...secureContext(initial), requestCert: true, rejectUnauthorized: false },
  });
  // The drain hooks need only what Node's HTTPS server shares with its HTTP server.
  const plain = app as unknown as Parameters<typeof drainOnClose>[0];
  drainOnClose(plain);

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof StatusError) {
      return reply.code(error.code).send(statusBody(error.code, error.reason, error.message));
    }
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, "transcripts API: the database does not answer");
      return reply
        .code(503)
        .send(
          statusBody(
            503,
            StatusReason.ServiceUnavailable,
            "the operator's database does not answer; retry shortly",
          ),
        );
    }
    request.log.error({ err: error }, "transcripts API request failed");
    return reply
      .code(500)
      .send(statusBody(500, StatusReason.InternalError, "the transcript could not be read; retry"));
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(
        statusBody(
          404,
          StatusReason.NotFound,
          `the server could not find the requested resource (${request.url})`,
        ),
      ),
  );

  app.decorateRequest("proxiedUser", undefined as unknown as ProxiedUser);
  app.addHook("onRequest", async (request: FastifyRequest) => {
    const socket = request.raw.socket as TLSSocket;
    try {
      request.proxiedUser = proxiedUser(
        { authorized: socket.authorized, peer: socket.getPeerCertificate() },
        request.raw.headersDistinct,
        requestHeader,
      );
    } catch (error) {
      if (error instanceof NotFromFrontProxy)
        throw new StatusError(401, StatusReason.Unauthorized, error.message);
      throw error;
    }
  });

  // Discovery, which the aggregator reads with its own identity (no authorization: discovery is public
  // to every authenticated user, as the API server's own).
  app.get("/apis", async () => ({ kind: "APIGroupList", apiVersion: "v1", groups: [transcriptsGroup()] }));
  app.get(`/apis/${TRANSCRIPTS_GROUP}`, async () => transcriptsGroup());
  app.get(BASE, async () => transcriptsResourceList());
  app.get(`${BASE}/namespaces/:namespace/${TRANSCRIPTS_RESOURCE}`, async () => {
    throw new StatusError(
      405,
      StatusReason.MethodNotAllowed,
      `${TRANSCRIPTS_RESOURCE} cannot be listed; get one by its AgentSession's name`,
    );
  });

  app.get(
    `${BASE}/namespaces/:namespace/${TRANSCRIPTS_RESOURCE}/:name`,
    async (request: TranscriptRequest, reply: FastifyReply): Promise<AgentSessionTranscript> => {
      const query = TranscriptQuery.safeParse(request.query);
      if (!query.success) {
        throw new StatusError(
          400,
          StatusReason.BadRequest,
          `invalid query: ${query.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
      }
      const { namespace, name } = request.params;
      const user = request.proxiedUser;
      const resource = { group: TRANSCRIPTS_GROUP, resource: TRANSCRIPTS_RESOURCE, namespace, name };
      const qualified = `${TRANSCRIPTS_RESOURCE}.${TRANSCRIPTS_GROUP} "${name}"`;
      // The API server asked this before proxying; asked again, so nothing but RBAC's answer lets anyone in.
      if (!(await options.authorize({ user, resource: { ...resource, verb: "get" } }))) {
        throw new StatusError(
          403,
          StatusReason.Forbidden,
          `${qualified} is forbidden: User "${user.username}" cannot get resource "${TRANSCRIPTS_RESOURCE}" in API group "${TRANSCRIPTS_GROUP}" in the namespace "${namespace}"`,
        );
      }
      const session = options.caches.sessions.get(name, namespace);
      if (!session) throw new StatusError(404, StatusReason.NotFound, `${qualified} not found`);
      let verb = "get";
      if (session.spec.subject.user !== user.username) {
        verb = GET_ANY_VERB;
        if (!(await options.authorize({ user, resource: { ...resource, verb } }))) {
          throw new StatusError(
            403,
            StatusReason.Forbidden,
            `${qualified} is forbidden: User "${user.username}" may read only the transcripts of sessions whose subject they are; reading another's needs the verb ${GET_ANY_VERB} (ClusterRole gatehouse-transcript-reader)`,
          );
        }
      }
      const uid = session.metadata.uid;
      let after = 0;
      if (query.data.continue !== undefined) {
        const token = parseContinueToken(query.data.continue);
        if (!token) throw new StatusError(400, StatusReason.BadRequest, "invalid continue token");
        if (token.uid !== uid) {
          throw new StatusError(
            410,
            StatusReason.Expired,
            `the continue token is for an earlier AgentSession ${namespace}/${name} (uid ${token.uid}); start again without it`,
          );
        }
        after = token.after;
      }
      // One more than the page: whether another page follows, without a count over the whole transcript.
      const events = await options.transcripts.list(uid, { afterSeq: after, limit: query.data.limit + 1 });
      const page = events.slice(0, query.data.limit);
      const last = page.at(-1)?.seq ?? after;
      request.log.info(
        { user: user.username, verb, namespace, name, after, events: page.length },
        "transcript read",
      );
      reply.header("cache-control", "no-store");
      return {
        apiVersion: TRANSCRIPTS_GROUP_VERSION,
        kind: TRANSCRIPT_KIND,
        metadata: {
          name,
          namespace,
          uid,
          ...(session.metadata.creationTimestamp
            ? { creationTimestamp: new Date(session.metadata.creationTimestamp).toISOString() }
            : {}),
        },
        events: page.map((e) => ({
          seq: e.seq,
          source: e.source,
          kind: e.kind,
          payload: e.payload,
          time: new Date(Math.floor(e.atMicros / 1000)).toISOString(),
        })),
        page: events.length > page.length ? { continue: continueToken(uid, last) } : {},
      };
    },
  );

  return {
    app,
    /** Closes as the gateway's agent listener does (http/shutdown.ts). */
    close: (drainMs: number) => closeWithin(plain, drainMs),
    /** Swaps the serving certificate and the front proxy's settings (see above). */
    reload(tls: TranscriptsApiTls): void {
      app.server.setSecureContext(secureContext(tls));
      requestHeader = tls.requestHeader;
    },
  };
}
