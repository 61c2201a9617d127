/**
 * The gateway: the agent-facing HTTP API (operator/src/api/agent-protocol.ts) on fastify.
 *   GET  /v1/session                 instructions, tools, stored history, limits
 *   POST /v1/session/events          the agent's own reports (stored with source agent)
 *   POST /v1/invoke                  Core.invoke (DESIGN §4)
 *   GET  /v1/approvals/{name}/wait   long-poll until the Approval is decided and executed
 *   POST /v1/model/chat/completions  the model proxy (model-proxy.ts): key added, usage metered, budget
 *   GET  /v1/grants/jwks             the grant verification keys (unauthenticated, jwks-route.ts)
 *   GET  /healthz, /readyz
 * Every /v1 request is authenticated by TokenReview and bound to the pod's session. Tool calls and
 * their results are written to the transcript by the gateway, from Core's records: the history a
 * resumed agent is replayed. Core counts the session's limits in its own budget ledger, not from it.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import { AgentEvent, type ApprovalWait, InvokeCall, type SessionView } from "../api/agent-protocol.ts";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { type JsonObject, sha256Hex } from "../core/canonical.ts";
import { GatehouseError } from "../core/errors.ts";
import { invoke } from "../core/invoke.ts";
import type { SessionCeilings } from "../core/limits.ts";
import type { CoreDeps } from "../core/ports.ts";
import { offeredCapabilities } from "../core/visibility.ts";
import { answerOfApproval, isSettled, recordApprovalOutcome } from "../kube/approval-outcome.ts";
import type { Caches } from "../kube/caches.ts";
import { resolveCapability, visibleCapabilities } from "../kube/catalog.ts";
import { limitsOf, sessionContextOf } from "../kube/session-context.ts";
import type { SessionRecords } from "../store/session-records.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import type { PodIdentity } from "./authenticate.ts";
import { sessionOfPod } from "./authenticate.ts";
import { errorReply } from "./error-reply.ts";
import { type JwksRouteOptions, jwksRoute } from "./jwks-route.ts";
import { type ModelProxyOptions, modelProxyRoute } from "./model-proxy.ts";
import { drainOnClose } from "./shutdown.ts";

export interface GatewayDeps {
  caches: Caches;
  core: CoreDeps;
  transcripts: TranscriptStore;
  review: (token: string) => Promise<PodIdentity>;
  log: Logger;
  /** The published grant verification keys (kube/grant-keys.ts). */
  jwks: JwksRouteOptions["jwks"];
  /** The operator's ceilings on session limits. */
  ceilings: SessionCeilings;
  /** Session records from the transcript, read incrementally (the model proxy's token budget). */
  records: SessionRecords;
  /** The model proxy's endpoints, keys and metrics (model-proxy.ts). */
  model: Pick<ModelProxyOptions, "endpointFor" | "keys" | "metrics">;
}

/** How long an approval wait lets the informer catch up with an Approval created a moment ago. */
const APPROVAL_ARRIVAL_MS = 5_000;

const WaitQuery = z.object({ timeoutSeconds: z.coerce.number().int().min(1).max(60).default(30) });
declare module "fastify" {
  interface FastifyRequest {
    session: AgentSession;
  }
}

function nowMicros(): number {
  return Date.now() * 1000;
}

/** Builds (not starts) the gateway. */
export function buildGateway(deps: GatewayDeps) {
  const app = Fastify({
    loggerInstance: deps.log.child({ component: "gateway" }),
    bodyLimit: 2 * 1024 * 1024,
  });
  const drain = drainOnClose(app);

  app.setErrorHandler((error, request, reply) => {
    const answer = errorReply(error);
    if (answer.log) request.log[answer.log]({ err: error }, "gateway request failed");
    return reply.code(answer.code).send(answer.body);
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async () => ({ status: "ok" }));
  app.register(jwksRoute, { jwks: deps.jwks });

  app.register(async (v1) => {
    v1.decorateRequest("session", undefined as unknown as AgentSession);
    v1.addHook("onRequest", async (request: FastifyRequest) => {
      const header = request.headers.authorization ?? "";
      const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
      if (!token)
        throw new GatehouseError("forbidden", "A bearer token (the pod's projected token) is required.");
      const identity = await deps.review(token);
      request.session = await sessionOfPod(deps.caches, identity);
    });
    v1.register(modelProxyRoute, {
      ...deps.model,
      records: deps.records,
      transcripts: deps.transcripts,
      ceilings: deps.ceilings,
    });

    v1.get("/v1/session", async (request): Promise<SessionView> => {
      const session = request.session;
      const subject = { user: session.spec.subject.user, groups: session.spec.subject.groups ?? [] };
      const candidates = visibleCapabilities(
        deps.caches,
        session.metadata.namespace,
        session.spec.capabilities,
      ).map((capability) => resolveCapability(deps.caches, capability));
      const tools = offeredCapabilities(candidates, subject).map((c) => ({
        name: c.toolName,
        description: deps.caches.capabilities.get(c.name, c.namespace)?.status?.description ?? c.id,
        parameters: c.inputSchema,
      }));
      const history = await deps.transcripts.list(session.metadata.uid, { limit: 100_000 });
      const limits = limitsOf(session, deps.ceilings);
      return {
        namespace: session.metadata.namespace,
        name: session.metadata.name,
        uid: session.metadata.uid,
        subject,
        instructions: session.spec.instructions ?? "",
        messages: session.spec.messages,
        model: { name: session.spec.model.name },
        tools,
        history: history.map((e) => ({ seq: e.seq, source: e.source, kind: e.kind, payload: e.payload })),
        limits: {
          maxTurns: limits.maxTurns,
          maxToolCalls: limits.maxToolCalls,
          holdPodForSeconds: limits.holdPodForSeconds,
        },
      };
    });

    v1.post("/v1/session/events", async (request) => {
      const event = AgentEvent.parse(request.body);
      const payload: JsonObject = { turn: event.turn };
      if (event.text !== undefined) payload.text = event.text;
      if (event.usage) Object.assign(payload, event.usage);
      await deps.transcripts.append({
        sessionUid: request.session.metadata.uid,
        source: "agent",
        kind: event.kind,
        payload,
        atMicros: nowMicros(),
      });
      return { accepted: true };
    });

    v1.post("/v1/invoke", async (request) => {
      const call = InvokeCall.parse(request.body);
      const session = request.session;
      const context = sessionContextOf(session, deps.ceilings);
      const { answer } = await invoke(deps.core, context, call);
      const capability = await deps.core.catalog.resolve(session.metadata.namespace, call.tool);
      // A repeated request (same turn, position, tool and arguments) adds nothing to the history: the
      // agent is replayed one call and one result however often it asked.
      const callKey = `${call.turn}:${call.position}:${sha256Hex(`${call.tool}\u0000${call.arguments}`)}`;
      await deps.transcripts.append({
        dedupeKey: `tool_call:${callKey}`,
        sessionUid: session.metadata.uid,
        source: "agent",
        kind: "tool_call",
        payload: {
          turn: call.turn,
          position: call.position,
          callId: call.callId,
          tool: call.tool,
          arguments: call.arguments,
        },
        atMicros: nowMicros(),
      });
      await deps.transcripts.append({
        dedupeKey: `tool_result:${callKey}`,
        sessionUid: session.metadata.uid,
        source: "core",
        kind: "tool_result",
        payload: {
          turn: call.turn,
          callId: call.callId,
          status: answer.status,
          content: answer.content,
          ...(answer.executionId ? { executionId: answer.executionId } : {}),
          ...(answer.approval ? { approval: answer.approval.name } : {}),
          ...(capability ? { effect: String(capability.effect) } : {}),
        },
        atMicros: nowMicros(),
      });
      return answer;
    });

    v1.get(
      "/v1/approvals/:name/wait",
      async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
        const { timeoutSeconds } = WaitQuery.parse(request.query);
        const session = request.session;
        const read = (): Approval | undefined => {
          const approval = deps.caches.approvals.get(request.params.name, session.metadata.namespace);
          return approval?.spec.sessionRef.uid === session.metadata.uid ? approval : undefined;
        };
        // The agent asks right after its invoke created the Approval — on this replica or another — and
        // the informer may not have delivered it yet: the cache gets a bounded moment to catch up.
        let approval = read();
        const arrival = Date.now() + APPROVAL_ARRIVAL_MS;
        while (!approval && Date.now() < arrival && !request.raw.destroyed) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          approval = read();
        }
        if (!approval)
          throw new GatehouseError(
            "not_found",
            `Approval ${request.params.name} does not belong to this session.`,
          );
        const deadline = Date.now() + timeoutSeconds * 1000;
        // A replica that is stopping answers at once (not done), so the agent asks a live one.
        while (
          approval &&
          !isSettled(approval) &&
          Date.now() < deadline &&
          !request.raw.destroyed &&
          !drain.draining
        ) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          approval = read();
        }
        if (!approval) throw new GatehouseError("not_found", `Approval ${request.params.name} is gone.`);
        const phase = approval.status?.phase ?? "Pending";
        const body: ApprovalWait = { name: approval.metadata.name, phase, done: isSettled(approval) };
        if (body.done) {
          body.answer = await answerOfApproval(deps.core, approval);
          await recordApprovalOutcome(deps.core, deps.transcripts, approval, nowMicros());
        }
        return reply.send(body);
      },
    );
  });
  return app;
}
