/**
 * The model proxy (DESIGN §5, §7; contract in api/agent-protocol.ts `MODEL_PROXY_PATH`):
 *   POST /v1/model/chat/completions   OpenAI Chat Completions
 *   POST /v1/model/responses          OpenAI Responses
 * registered inside the gateway's authenticated /v1 scope, so `request.session` is the pod's session.
 * Both wire APIs take the one path below; what differs between them (the request fields read, what is
 * changed or refused, where usage is in an answer) is in model-wires.ts.
 *
 *   endpoint = the session's spec.model.endpointRef, else the default      ; none → 503
 *   body not of the wire's shape, a credential field, a tool the endpoint would run itself, a
 *     background response                                                   → 400
 *   model must be spec.model.name (and one of endpoint.models when listed) ; else 400
 *   session ended or cancelled → 409
 *   metered usage ≥ tokenBudget → record budget_exceeded once; 400 budget_exceeded (final)
 *   key = the endpoint's keySecretRef Secret (cached briefly) ; absent → no Authorization header
 *   send upstream (a Chat Completions stream asks for its usage); relay status, headers and bytes as
 *     they come (no buffering), metering usage from them; keep reading to the end even when the pod
 *     hangs up, so an aborted stream is metered too
 *   2xx → transcript event `usage` (source core): what status.usage and the budget count — appended
 *     before the answer ends, so a request sent after it sees this one's tokens
 * Requests running at the same time each see the usage of those finished before them: the budget can be
 * overrun by what concurrent requests of one session spend, never by a sequence of requests.
 *
 * What goes upstream is an allowlist: the endpoint's key and the few headers the proxy sets itself —
 * no header of the pod's request is forwarded (its token, `x-api-key`, cookies, `openai-organization`
 * and the like stay in the gateway), and a body with a top-level credential field (`api_key`,
 * `extra_headers`, …, KEY_LIKE_FIELDS) is refused, since some endpoints honour those over the header.
 * An upstream error answer is read (at most UPSTREAM_ERROR_BYTES), the endpoint's key and anything
 * shaped like a credential redacted, and only then returned and logged: endpoints echo keys in errors.
 * Errors of the proxy itself answer OpenAI's error shape (ModelProxyError), so an OpenAI client shows
 * their message; a session over its request limits gets 429 with `Retry-After`, which OpenAI clients
 * honour.
 *
 * This module holds the route; the credential checks and redaction are in model-credentials.ts, the
 * relaying of an answer in model-relay.ts.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { type Dispatcher, request as undiciRequest } from "undici";
import { BUDGET_EXCEEDED, MODEL_PROXY_PATH, type ModelProxyError } from "../api/agent-protocol.ts";
import type { AgentSession } from "../api/kinds.ts";
import type { ModelEndpoint } from "../config-environment.ts";
import { isGatehouseError } from "../core/errors.ts";
import { type SessionCeilings, tokenBudgetRefusal, tokensUsed } from "../core/limits.ts";
import type { ModelKeys } from "../kube/model-keys.ts";
import { limitsOf, sessionContextOf } from "../kube/session-context.ts";
import type { ModelProxyMetrics, ModelRequestOutcome } from "../observability/metrics.ts";
import type { SessionRecords } from "../store/session-records.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import { errorAnswerOf, keyLikeFields, redactCredentials, truncateUtf8 } from "./model-credentials.ts";
import { relay, relayedHeaders } from "./model-relay.ts";
import { jsonUsageMeter, type MeteredUsage, sseUsageMeter } from "./model-usage.ts";
import { MODEL_WIRES, type ModelWire, type UpstreamModelRequest, upstreamUrl } from "./model-wires.ts";
import { isSessionRateLimited } from "./session-limits.ts";

/** What the model proxy needs. */
export interface ModelProxyOptions {
  /** The endpoint of a session's `spec.model.endpointRef` (undefined: the default), as config.ts resolves it. */
  endpointFor(endpointRef: string | undefined): ModelEndpoint | undefined;
  keys: ModelKeys;
  records: SessionRecords;
  transcripts: TranscriptStore;
  ceilings: SessionCeilings;
  metrics?: ModelProxyMetrics;
  /** Longest wait for the endpoint's answer headers, and between two of its body bytes (default 300 000 ms). */
  upstreamTimeoutMs?: number;
  /** The undici dispatcher for upstream calls (default: undici's global one). */
  dispatcher?: Dispatcher;
  /** Largest request body accepted, in bytes: long conversations are large (config GATEWAY_LIMITS). */
  maxRequestBytes: number;
}
const DEFAULT_UPSTREAM_TIMEOUT_MS = 300_000;

/** HTTP status and OpenAI error type of each Gatehouse error kind, for the proxy's own refusals. */
const OPENAI_ERROR: Record<string, { status: number; type: string }> = {
  forbidden: { status: 403, type: "permission_error" },
  invalid_arguments: { status: 400, type: "invalid_request_error" },
  not_found: { status: 404, type: "not_found_error" },
  conflict: { status: 409, type: "invalid_request_error" },
  unavailable: { status: 503, type: "server_error" },
  timeout: { status: 504, type: "server_error" },
};

/** An OpenAI-style error body. */
export function modelProxyError(message: string, type: string, code: string | null): ModelProxyError {
  return { error: { message, type, param: null, code } };
}

/** Why `model` may not be asked for by `session` at `endpoint`, or undefined when it may. */
export function modelRefusal(
  session: AgentSession,
  endpoint: ModelEndpoint,
  model: string,
): string | undefined {
  if (model !== session.spec.model.name) {
    return `This session may use model ${session.spec.model.name} (spec.model.name), not ${model}.`;
  }
  if (endpoint.models.length > 0 && !endpoint.models.includes(model)) {
    return `Model endpoint ${endpoint.name} does not offer model ${model}; it offers ${endpoint.models.join(", ")}.`;
  }
  return undefined;
}

function nowMicros(): number {
  return Date.now() * 1000;
}

/** Registers `POST /v1/model/chat/completions` and `/v1/model/responses` (inside the authenticated /v1 scope). */
export const modelProxyRoute: FastifyPluginAsync<ModelProxyOptions> = async (app, options) => {
  const timeoutMs = options.upstreamTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  const metrics = options.metrics;

  // Every failure here — the token review of the /v1 scope included — answers OpenAI's error shape.
  app.setErrorHandler((error, request, reply) => {
    if (isSessionRateLimited(error)) {
      request.log.info({ message: error.message }, "session request limited");
      return reply
        .code(429)
        .header("retry-after", String(error.retryAfterSeconds))
        .send(modelProxyError(error.message, "rate_limit_error", "session_rate_limited"));
    }
    if (isGatehouseError(error)) {
      const mapped = OPENAI_ERROR[error.kind] ?? { status: 500, type: "server_error" };
      return reply.code(mapped.status).send(modelProxyError(error.message, mapped.type, error.kind));
    }
    const status = (error as { statusCode?: number }).statusCode;
    if (error instanceof Error && status !== undefined && status >= 400 && status < 500) {
      // fastify's own refusals: a body that is not JSON or too large.
      return reply.code(status).send(modelProxyError(error.message, "invalid_request_error", null));
    }
    request.log.error({ err: error }, "model proxy request failed");
    return reply.code(500).send(modelProxyError("internal error", "server_error", "internal"));
  });

  const proxy = (wire: ModelWire) =>
    async function proxied(request: FastifyRequest, reply: FastifyReply) {
      const started = Date.now();
      const session = request.session;
      const endpoint = options.endpointFor(session.spec.model.endpointRef);
      const endpointName = endpoint?.name ?? session.spec.model.endpointRef ?? "(default)";
      const log = request.log.child({
        namespace: session.metadata.namespace,
        name: session.metadata.name,
        endpoint: endpointName,
      });
      const refuse = (status: number, outcome: ModelRequestOutcome, body: ModelProxyError) => {
        metrics?.requested(endpointName, outcome, Date.now() - started);
        log.info({ status, code: body.error.code }, "model request refused");
        return reply.code(status).send(body);
      };
      if (!endpoint) {
        return refuse(
          503,
          "refused",
          modelProxyError(
            `No model endpoint ${endpointName} is configured in the operator.`,
            "server_error",
            "endpoint_not_found",
          ),
        );
      }
      const parsed = wire.parse(request.body);
      if ("refused" in parsed) {
        const { message, code } = parsed.refused;
        return refuse(400, "refused", modelProxyError(message, "invalid_request_error", code));
      }
      const upstream = parsed.request;
      const credentialFields = keyLikeFields(upstream.fields);
      if (credentialFields.length > 0) {
        return refuse(
          400,
          "refused",
          modelProxyError(
            `The request carries credential-like fields (${credentialFields.join(", ")}); the gateway adds the endpoint's key itself: remove them.`,
            "invalid_request_error",
            "credential_field",
          ),
        );
      }
      const refusedModel = modelRefusal(session, endpoint, upstream.model);
      if (refusedModel) {
        return refuse(
          400,
          "refused",
          modelProxyError(refusedModel, "invalid_request_error", "model_not_allowed"),
        );
      }
      const record = await options.records.recordOf(session.metadata.uid);
      const context = sessionContextOf(session, options.ceilings);
      if (!context.active) {
        return refuse(
          409,
          "refused",
          modelProxyError(
            "The session has ended or is cancelled; it sends no more model requests.",
            "invalid_request_error",
            "session_inactive",
          ),
        );
      }
      const { tokenBudget } = limitsOf(session, options.ceilings);
      const overBudget = tokenBudgetRefusal(tokenBudget, record.usage);
      if (overBudget) {
        if (record.budgetExceeded === undefined) {
          await options.transcripts.append({
            dedupeKey: "budget_exceeded",
            sessionUid: session.metadata.uid,
            source: "core",
            kind: "budget_exceeded",
            payload: {
              usedTokens: tokensUsed(record.usage),
              tokenBudget,
              message: overBudget,
            },
            atMicros: nowMicros(),
          });
        }
        reply.header("x-should-retry", "false");
        return refuse(
          BUDGET_EXCEEDED.status,
          "budget_exceeded",
          modelProxyError(overBudget, BUDGET_EXCEEDED.type, BUDGET_EXCEEDED.code),
        );
      }
      const key = endpoint.keySecretRef ? await options.keys.keyOf(endpoint.keySecretRef) : undefined;
      let answer: Dispatcher.ResponseData;
      try {
        answer = await undiciRequest(upstreamUrl(endpoint.baseURL, wire), {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: upstream.stream ? "text/event-stream" : "application/json",
            // Identity: the meter reads the bytes the pod gets, and they stay byte for byte the endpoint's.
            "accept-encoding": "identity",
            "user-agent": "gatehouse-model-proxy",
            ...(key ? { authorization: `Bearer ${key}` } : {}),
          },
          body: upstream.body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
        });
      } catch (error) {
        log.warn({ err: error }, "model endpoint unreachable");
        return refuse(
          502,
          "unreachable",
          modelProxyError(
            `Model endpoint ${endpoint.name} could not be reached: ${error instanceof Error ? error.message : String(error)}.`,
            "server_error",
            "endpoint_unreachable",
          ),
        );
      }
      const ok = answer.statusCode >= 200 && answer.statusCode < 300;
      if (!ok) {
        const { text, cut } = await errorAnswerOf(answer.body, key);
        const headers = Object.fromEntries(
          Object.entries(relayedHeaders(answer.headers)).map(([name, value]) => [
            name,
            Array.isArray(value)
              ? value.map((v) => redactCredentials(v, key ? [key] : []))
              : redactCredentials(value, key ? [key] : []),
          ]),
        );
        metrics?.requested(endpoint.name, "upstream_error", Date.now() - started);
        log.info(
          { status: answer.statusCode, model: upstream.model, body: truncateUtf8(text, 1024), cut },
          "model endpoint refused the request",
        );
        return reply.code(answer.statusCode).headers(headers).send(text);
      }
      const promptChars = upstream.body.length;
      // The answer's own framing decides how to read it: an endpoint may answer a stream request with JSON.
      const sse = String(answer.headers["content-type"] ?? "").includes("text/event-stream");
      const meter = sse
        ? sseUsageMeter(promptChars, wire.readEvent)
        : jsonUsageMeter(promptChars, wire.readBody);
      reply.hijack();
      reply.raw.writeHead(answer.statusCode, relayedHeaders(answer.headers));
      reply.raw.flushHeaders();
      const relayed = await relay(answer.body, reply.raw, meter);
      if (!relayed.complete) log.warn({ err: relayed.error }, "model endpoint broke off its answer");
      metrics?.requested(endpoint.name, "ok", Date.now() - started);
      // Recorded before the answer ends: the agent's next request already counts this one's tokens.
      await recordUsage(options, session, endpoint, upstream, meter.finish(), log);
      if (!reply.raw.destroyed) reply.raw.end();
      return reply;
    };
  for (const wire of MODEL_WIRES) {
    app.post(`${MODEL_PROXY_PATH}${wire.path}`, { bodyLimit: options.maxRequestBytes }, proxy(wire));
  }
};

/** Appends the `usage` event of one answered request; a failure is logged (the answer is already sent). */
async function recordUsage(
  options: ModelProxyOptions,
  session: AgentSession,
  endpoint: ModelEndpoint,
  upstream: UpstreamModelRequest,
  usage: MeteredUsage,
  log: FastifyReply["log"],
): Promise<void> {
  options.metrics?.metered(endpoint.name, usage);
  try {
    await options.transcripts.append({
      sessionUid: session.metadata.uid,
      source: "core",
      kind: "usage",
      payload: {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        model: upstream.model,
        endpoint: endpoint.name,
        stream: upstream.stream,
        estimated: usage.estimated,
      },
      atMicros: nowMicros(),
    });
    log.info(
      { model: upstream.model, stream: upstream.stream, ...usage },
      usage.estimated
        ? "model request metered (estimated: the endpoint reported no usage)"
        : "model request metered",
    );
  } catch (error) {
    log.error({ err: error, ...usage }, "could not record the model request's usage; status.usage misses it");
  }
}
