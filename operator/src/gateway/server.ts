/**
 * The gateway: the agent-facing HTTP API (operator/src/api/agent-protocol.ts) on fastify.
 *   GET  /v1/session                 instructions, tools, the first page of stored history, limits
 *   GET  /v1/session/history         the stored history after a seq, one page
 *   POST /v1/session/events          the agent's own reports (stored with source agent; a declined
 *                                    engine request also in the audit chain)
 *   POST /v1/invoke                  Core.invoke (DESIGN §4)
 *   GET  /v1/approvals/{name}/wait   long-poll until the Approval is decided and executed
 *   POST /v1/model/chat/completions  the model proxy (model-proxy.ts): key added, usage metered, budget
 *   POST /mcp                        MCP (Streamable HTTP, mcp.ts): the session's tools to any MCP client
 *   GET  /v1/grants/jwks             the grant verification keys (unauthenticated, jwks-route.ts)
 *   GET  /healthz, /readyz
 * Every /v1 and /mcp request is authenticated by TokenReview, bound to the pod's session and admitted by the
 * session's request limits (session-limits.ts: over them, 429 with Retry-After). Each route has its own
 * body limit, what one session's agent writes to its transcript is bounded (GATEWAY_LIMITS), and no
 * route reads a whole transcript into memory. Tool calls and their results are written to the
 * transcript by the gateway, from Core's records: the history a resumed agent is replayed. Core counts
 * the session's limits in its own budget ledger, not from it.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import {
  AgentEvent,
  HISTORY_PAGE,
  type HistoryEntry,
  type HistoryPage,
  InvokeCall,
  type SessionView,
} from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import { endpointFor, type OperatorConfig } from "../config.ts";
import { GatehouseError } from "../core/errors.ts";
import type { CoreDeps } from "../core/ports.ts";
import { drainOnClose } from "../http/shutdown.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import { limitsOf } from "../kube/session-context.ts";
import type { SessionRecords } from "../store/session-records.ts";
import type { SessionEvent, TranscriptStore } from "../store/transcripts.ts";
import { auditedAgentEvent, modelView, storedAgentEvent } from "./agent-events.ts";
import { approvalWaitAnswer, signalOfResponse, waitForApproval } from "./approval-wait.ts";
import type { PodIdentity } from "./authenticate.ts";
import { sessionOfPod } from "./authenticate.ts";
import { errorReply } from "./error-reply.ts";
import { type JwksRouteOptions, jwksRoute } from "./jwks-route.ts";
import { mcpRoute } from "./mcp.ts";
import { type ModelProxyOptions, modelProxyRoute } from "./model-proxy.ts";
import { type SessionLimiter, sessionLimiter } from "./session-limits.ts";
import { sessionTools, subjectOf } from "./session-tools.ts";
import { admitIntake, callTool, type ToolCallDeps } from "./tool-calls.ts";

/** Body limits per route: an event holds ≤ 64 KiB of text; an invoke ≤ 1 MB of arguments. */
const EVENT_BODY_BYTES = 256 * 1024;
const INVOKE_BODY_BYTES = 2 * 1024 * 1024;

/**
 * What the gateway's server is given of the operator's configuration (built once by
 * programs/gateway.ts): the session ceilings, what one session may ask (its request rate and in-flight
 * cap, the model proxy's body limit, what its agent may write to its transcript) and the model
 * endpoints. Each one's meaning is in config.ts.
 */
export const GATEWAY_SETTINGS = [
  "sessionCeilings",
  "gatewayLimits",
  "modelEndpoints",
] as const satisfies readonly (keyof OperatorConfig)[];
export type GatewaySettings = Pick<OperatorConfig, (typeof GATEWAY_SETTINGS)[number]>;

export interface GatewayDeps {
  caches: Caches;
  core: CoreDeps;
  transcripts: TranscriptStore;
  review: (token: string) => Promise<PodIdentity>;
  log: Logger;
  /** The published grant verification keys (providers/grant-keys.ts). */
  jwks: JwksRouteOptions["jwks"];
  /** Session records from the transcript, read incrementally (the model proxy's token budget). */
  records: SessionRecords;
  /** The model proxy's keys and metrics (model-proxy.ts). */
  model: Pick<ModelProxyOptions, "keys" | "metrics">;
  settings: GatewaySettings;
}

const WaitQuery = z.object({ timeoutSeconds: z.coerce.number().int().min(1).max(60).default(30) });
declare module "fastify" {
  interface FastifyRequest {
    session: AgentSession;
  }
}

function nowMicros(): number {
  return Date.now() * 1000;
}

/** A stored event as the agent is replayed it. */
function historyEntryOf(event: SessionEvent): HistoryEntry {
  return { seq: event.seq, source: event.source, kind: event.kind, payload: event.payload };
}

/** One page of the session's history after `afterSeq`: one event more is read to know if it is the last. */
async function historyPage(
  transcripts: TranscriptStore,
  sessionUid: string,
  afterSeq: number,
  limit: number,
): Promise<HistoryPage> {
  const events = await transcripts.list(sessionUid, { afterSeq, limit: limit + 1 });
  return { history: events.slice(0, limit).map(historyEntryOf), complete: events.length <= limit };
}

const HistoryQuery = z.object({
  afterSeq: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(HISTORY_PAGE).default(HISTORY_PAGE),
});

/** Builds (not starts) the gateway. */
export function buildGateway(deps: GatewayDeps) {
  const app = Fastify({
    loggerInstance: deps.log.child({ component: "gateway" }),
    bodyLimit: INVOKE_BODY_BYTES,
  });
  const drain = drainOnClose(app);
  const { sessionCeilings: ceilings, gatewayLimits } = deps.settings;
  const limiter: SessionLimiter = sessionLimiter(gatewayLimits);

  const toolCalls: ToolCallDeps = {
    core: deps.core,
    transcripts: deps.transcripts,
    records: deps.records,
    ceilings,
    intake: gatewayLimits,
  };

  app.setErrorHandler((error, request, reply) => {
    const answer = errorReply(error);
    if (answer.log) request.log[answer.log]({ err: error }, "gateway request failed");
    if (answer.code === 429) request.log.info({ message: answer.body.message }, "session request limited");
    return reply
      .code(answer.code)
      .headers(answer.headers ?? {})
      .send(answer.body);
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async () => ({ status: "ok" }));
  app.register(jwksRoute, { jwks: deps.jwks });

  app.register(async (v1) => {
    v1.decorateRequest("session", undefined as unknown as AgentSession);
    v1.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
      const header = request.headers.authorization ?? "";
      const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
      if (!token)
        throw new GatehouseError("forbidden", "A bearer token (the pod's projected token) is required.");
      const identity = await deps.review(token);
      request.session = await sessionOfPod(deps.caches, identity);
      // The slot is held until the answer is done or the pod hangs up (a hijacked stream included).
      reply.raw.once("close", limiter.admit(request.session.metadata.uid));
    });
    v1.register(modelProxyRoute, {
      ...deps.model,
      endpointFor: (endpointRef) => endpointFor(deps.settings, endpointRef),
      maxRequestBytes: gatewayLimits.modelRequestBytes,
      records: deps.records,
      transcripts: deps.transcripts,
      ceilings,
    });

    v1.register(mcpRoute, { caches: deps.caches, toolCalls, stopping: () => drain.draining });

    v1.get("/v1/session", async (request): Promise<SessionView> => {
      const session = request.session;
      const tools = sessionTools(deps.caches, session).map((tool) => tool.spec);
      const first = await historyPage(deps.transcripts, session.metadata.uid, 0, HISTORY_PAGE);
      const limits = limitsOf(session, ceilings);
      return {
        namespace: session.metadata.namespace,
        name: session.metadata.name,
        uid: session.metadata.uid,
        subject: subjectOf(session),
        instructions: session.spec.instructions ?? "",
        messages: session.spec.messages,
        model: modelView(session.spec.model.name, endpointFor(deps.settings, session.spec.model.endpointRef)),
        tools,
        history: first.history,
        historyComplete: first.complete,
        limits: {
          maxTurns: limits.maxTurns,
          maxToolCalls: limits.maxToolCalls,
          holdPodForSeconds: limits.holdPodForSeconds,
        },
      };
    });

    v1.get("/v1/session/history", async (request): Promise<HistoryPage> => {
      const { afterSeq, limit } = HistoryQuery.parse(request.query);
      return historyPage(deps.transcripts, request.session.metadata.uid, afterSeq, limit);
    });

    v1.post("/v1/session/events", { bodyLimit: EVENT_BODY_BYTES }, async (request) => {
      const event = AgentEvent.parse(request.body);
      const { payload, dedupeKey } = storedAgentEvent(event);
      await admitIntake(toolCalls, request.session, Buffer.byteLength(JSON.stringify(payload)));
      await deps.transcripts.append({
        ...(dedupeKey ? { dedupeKey } : {}),
        sessionUid: request.session.metadata.uid,
        source: "agent",
        kind: event.kind,
        payload,
        atMicros: nowMicros(),
      });
      // An engine's request for a person that the agent declined is also the chain's (DESIGN §6).
      const audited = auditedAgentEvent(event, request.session, nowMicros());
      if (audited) await deps.core.audit.append(audited);
      return { accepted: true };
    });

    v1.post("/v1/invoke", { bodyLimit: INVOKE_BODY_BYTES }, async (request) => {
      return callTool(toolCalls, request.session, InvokeCall.parse(request.body));
    });

    v1.get(
      "/v1/approvals/:name/wait",
      async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
        const { timeoutSeconds } = WaitQuery.parse(request.query);
        const approval = await waitForApproval(deps.caches, {
          name: request.params.name,
          session: request.session,
          timeoutMs: timeoutSeconds * 1000,
          signal: signalOfResponse(reply.raw),
          // A replica that is stopping answers at once (not done), so the agent asks a live one.
          stopping: () => drain.draining,
        });
        return reply.send(await approvalWaitAnswer(deps.core, deps.transcripts, approval, nowMicros()));
      },
    );
  });
  return app;
}
