/**
 * `serveProvider`: the HTTP side of a provider (DESIGN §5, contract in `contract.ts`), on fastify.
 *   GET  /v1/manifest            → the manifest given at start
 *   GET  /v1/health              → `health()` (default `{status: "ok"}`)
 *   POST /v1/invoke              → InvokeRequest parsed, arguments checked against the capability's
 *                                  inputSchema (ajv, draft 2020-12), dispatched to its handler once per
 *                                  idempotency key → InvokeResponse (HTTP 200 for succeeded and failed)
 *   GET  /v1/executions/:key     → ExecutionStatus from the remembered outcomes
 * A handler throws `ProviderError` to answer `failed` with a kind; anything else it throws is a provider
 * bug → HTTP 500 `{kind: "internal"}`, nothing remembered, so Core's retry with the same key runs again.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import Fastify, { LogController } from "fastify";
import type { Logger } from "pino";
import { type Evidence, type Health, InvokeRequest, type InvokeResponse, Manifest } from "./contract.ts";
import { ExecutionMemory, type WorkOutcome } from "./execution-memory.ts";
import { ProviderError, retryableKinds } from "./provider-error.ts";
import { canonicalDigest } from "./schema-digest.ts";

/** What a handler gets besides the request: a logger bound to the execution and the handler deadline. */
export interface InvokeContext {
  logger: Logger;
  signal: AbortSignal;
}

/** A handler's success: the result (must match the capability's outputSchema) and optional evidence. */
export interface HandlerResult {
  result: unknown;
  evidence?: Evidence;
}

/** Serves one capability. Throw `ProviderError(kind, message)` for a business failure. */
export type CapabilityHandler = (request: InvokeRequest, context: InvokeContext) => Promise<HandlerResult>;

/** Options of `serveProvider`. `port: 0` picks a free port. */
export interface ServeProviderOptions {
  manifest: Manifest;
  /** One handler per capability id of the manifest, no more, no less. */
  handlers: Record<string, CapabilityHandler>;
  host: string;
  port: number;
  logger: Logger;
  health?: () => Promise<Health>;
  /** Deadline of one handler call in milliseconds (default 30 000); past it the answer is `failed/timeout`. */
  handlerTimeoutMs?: number;
  memory?: ExecutionMemory;
}

/** A listening provider. `url` has no trailing slash. */
export interface ProviderServer {
  url: string;
  close(): Promise<void>;
}

/** Checks that manifest and handlers match and compiles each input schema; throws on any mismatch. */
function compileValidators(manifest: Manifest, handlers: Record<string, CapabilityHandler>) {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  const validators = new Map<string, ValidateFunction>();
  for (const offer of manifest.capabilities) {
    if (!handlers[offer.id]) throw new Error(`capability ${offer.id} is offered but has no handler`);
    validators.set(offer.id, ajv.compile(offer.inputSchema));
  }
  for (const id of Object.keys(handlers)) {
    if (!validators.has(id)) throw new Error(`handler ${id} serves no capability of the manifest`);
  }
  return { ajv, validators };
}

/** Starts the provider's HTTP server and resolves once it listens. Throws on an invalid manifest. */
export async function serveProvider(options: ServeProviderOptions): Promise<ProviderServer> {
  const manifest = Manifest.parse(options.manifest);
  const { ajv, validators } = compileValidators(manifest, options.handlers);
  const memory = options.memory ?? new ExecutionMemory();
  const handlerTimeoutMs = options.handlerTimeoutMs ?? 30_000;
  const logger = options.logger;
  // Per-request lines come from the invoke route itself (with executionId, outcome and duration).
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
  });

  /** Validates and runs one invoke; the outcome is final unless its kind invites a retry. */
  async function execute(request: InvokeRequest): Promise<WorkOutcome> {
    const validate = validators.get(request.capability)!;
    if (!validate(request.arguments)) {
      const message = `arguments do not match the input schema: ${ajv.errorsText(validate.errors)}`;
      return { response: { status: "failed", errorKind: "invalid_arguments", message }, final: true };
    }
    const signal = AbortSignal.timeout(handlerTimeoutMs);
    const context = {
      logger: logger.child({ executionId: request.executionId, capability: request.capability }),
      signal,
    };
    try {
      const { result, evidence } = await options.handlers[request.capability]!(request, context);
      const response: InvokeResponse = { status: "succeeded", result };
      if (evidence) response.evidence = evidence;
      return { response, final: true };
    } catch (error) {
      if (error instanceof ProviderError) {
        return {
          response: { status: "failed", errorKind: error.kind, message: error.message },
          final: !retryableKinds.has(error.kind),
        };
      }
      if (signal.aborted) {
        const message = `handler exceeded ${handlerTimeoutMs} ms; the outcome is unknown`;
        return { response: { status: "failed", errorKind: "timeout", message }, final: false };
      }
      throw error;
    }
  }

  app.setErrorHandler((error, request, reply) => {
    request.log.error({ err: error, url: request.url }, "provider request failed");
    return reply.code(500).send({ kind: "internal", message: "the provider failed; see its log" });
  });

  app.get("/v1/manifest", async () => manifest);
  app.get("/v1/health", async () => (options.health ? options.health() : { status: "ok" }));

  app.post("/v1/invoke", async (httpRequest, reply) => {
    // grants issue: verify the grant JWT here (EdDSA signature via the operator's JWKS, aud = this
    // ProviderInstance, exp ≤ 60 s, jti not reused, argsDigest = RFC 8785 digest of the body) before dispatch.
    const parsed = InvokeRequest.safeParse(httpRequest.body);
    if (!parsed.success) {
      return reply.code(400).send({ kind: "invalid_arguments", message: parsed.error.message });
    }
    const request = parsed.data;
    if (!validators.has(request.capability)) {
      const response: InvokeResponse = {
        status: "failed",
        errorKind: "not_found",
        message: `capability ${request.capability} is not offered by ${manifest.provider}`,
      };
      return response;
    }
    const started = performance.now();
    const fingerprint = canonicalDigest({
      capability: request.capability,
      arguments: request.arguments,
      subject: request.subject,
      account: request.account ?? null,
    });
    const response = await memory.run(request.idempotencyKey, fingerprint, () => execute(request));
    logger.info(
      {
        executionId: request.executionId,
        capability: request.capability,
        idempotencyKey: request.idempotencyKey,
        requestDigest: fingerprint,
        status: response.status,
        errorKind: response.errorKind,
        durationMs: Math.round(performance.now() - started),
      },
      "invoke answered",
    );
    return response;
  });

  app.get("/v1/executions/:key", async (httpRequest) => {
    // grants issue: the status endpoint requires a grant too.
    const { key } = httpRequest.params as { key: string };
    return memory.status(key);
  });

  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const host = options.host === "0.0.0.0" ? "127.0.0.1" : options.host;
  return { url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, close: () => app.close() };
}
