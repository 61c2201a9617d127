/**
 * `serveProvider`: the HTTP side of a provider (DESIGN §5, contract in `contract.ts`), on fastify.
 *   GET  /v1/manifest            → the manifest given at start
 *   GET  /v1/health              → `health()` (default `{status: "ok"}`)
 *   POST /v1/invoke              → grant checked (`verifyGrant`), InvokeRequest parsed, arguments checked
 *                                  against the capability's inputSchema (ajv, draft 2020-12), dispatched to
 *                                  its handler once per idempotency key → Receipt (HTTP 200 for succeeded
 *                                  and failed; an unoffered capability is a `failed/not_found` receipt)
 *   GET  /v1/executions/:key     → grant checked, then ExecutionStatus from the remembered outcomes, else
 *                                  from `statusOf` (the business system's own record of the key)
 *   GET  /v1/targets/:kind/:id   → grant checked, then `targets[kind](id)`: the object's current version
 * Every non-2xx answer is a `ProtocolError`: 400 for a body that is not JSON or not an InvokeRequest
 * (with the offending fields), 401/403 for a missing or refused grant, 404 for an unknown route, 500 for a
 * provider bug. A handler throws `ProviderError` to answer `failed` with a kind; anything else it throws is
 * a provider bug → 500, nothing remembered, so Core's retry with the same key runs again.
 */
import type { ValidateFunction } from "ajv/dist/2020.js";
import Fastify, { LogController } from "fastify";
import type { Logger } from "pino";
import {
  type Evidence,
  type ExecutionStatus,
  type Health,
  InvokeRequest,
  type InvokeResponse,
  Manifest,
  type TargetVersion,
} from "./contract.ts";
import { ExecutionMemory, type WorkOutcome } from "./execution-memory.ts";
import { type GrantedCall, GrantRefusal, type GrantVerifier, grantFromHeader } from "./grant.ts";
import { httpLayerError, issuesOf, type ProtocolFailure, protocolFailure } from "./protocol-failure.ts";
import { ProviderError, retryableKinds } from "./provider-error.ts";
import { strictSchemaCompiler } from "./schema-compiler.ts";
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
  /**
   * Checks the grant of every invoke and status call before anything else happens (see `grant.ts`).
   * Without it the provider accepts any caller — only for tests — and `serveProvider` logs a warning
   * saying so. Production providers pass `grantVerifierFromEnvironment(process.env)`.
   */
  verifyGrant?: GrantVerifier;
  /**
   * What the business system itself knows of an idempotency key, asked when this process remembers
   * nothing for it (it restarted, or the business call's answer was lost): resolves to the outcome, or
   * undefined when the system has no record. Absent → only remembered outcomes are reported.
   */
  statusOf?: (idempotencyKey: string) => Promise<ExecutionStatus | undefined>;
  /**
   * Current versions of business objects, one reader per target kind the manifest declares
   * (`CapabilityOffer.target`); a reader resolves to the version or undefined when the object does not
   * exist. `serveProvider` throws at start when a declared kind has no reader.
   */
  targets?: Record<string, (id: string) => Promise<string | undefined>>;
}

/** A listening provider. `url` has no trailing slash. */
export interface ProviderServer {
  url: string;
  close(): Promise<void>;
}

/** Checks that manifest and handlers match and compiles each input schema (strict, `schema-compiler.ts`); throws on any mismatch. */
function compileValidators(manifest: Manifest, handlers: Record<string, CapabilityHandler>) {
  const ajv = strictSchemaCompiler();
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

/** Checks that every declared target names required string/integer arguments and has a version reader. */
function checkTargets(manifest: Manifest, targets: ServeProviderOptions["targets"]): void {
  for (const offer of manifest.capabilities) {
    const target = offer.target;
    if (!target) continue;
    if (!targets?.[target.kind]) {
      throw new Error(
        `capability ${offer.id} declares target kind ${target.kind} but no targets reader serves it`,
      );
    }
    const required = Array.isArray(offer.inputSchema.required)
      ? (offer.inputSchema.required as unknown[])
      : [];
    for (const argument of [target.idArgument, target.versionArgument]) {
      if (!required.includes(argument)) {
        throw new Error(
          `capability ${offer.id}: target argument ${argument} must be a required property of its inputSchema`,
        );
      }
    }
  }
}

/** Starts the provider's HTTP server and resolves once it listens. Throws on an invalid manifest. */
export async function serveProvider(options: ServeProviderOptions): Promise<ProviderServer> {
  const manifest = Manifest.parse(options.manifest);
  const { ajv, validators } = compileValidators(manifest, options.handlers);
  checkTargets(manifest, options.targets);
  const memory = options.memory ?? new ExecutionMemory();
  const handlerTimeoutMs = options.handlerTimeoutMs ?? 30_000;
  const logger = options.logger;
  if (!options.verifyGrant) {
    logger.warn("no grant verifier configured: invoke and status accept any caller (DESIGN §5 grants)");
  }
  /** Bearer grants taken from the header by the onRequest hook, per request. */
  const grants = new WeakMap<object, string>();
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

  /** The verifier's verdict on one call: undefined to go on, else the refusal to send. */
  async function refusalOf(grant: string, call: GrantedCall): Promise<ProtocolFailure | undefined> {
    try {
      await options.verifyGrant!(grant, call);
      return undefined;
    } catch (error) {
      if (error instanceof GrantRefusal) return protocolFailure(error.kind, error.message);
      logger.error({ err: error, route: call.route }, "grant verifier failed; refusing the call");
      return protocolFailure("forbidden", "the grant could not be verified; see the provider's log");
    }
  }

  /** The bearer grant of a request, or the 401 to send; always `""` when no verifier is configured. */
  function grantOf(headers: { authorization?: string | string[] | undefined }): string | ProtocolFailure {
    if (!options.verifyGrant) return "";
    try {
      return grantFromHeader(headers.authorization);
    } catch (error) {
      if (error instanceof GrantRefusal) return protocolFailure(error.kind, error.message);
      throw error;
    }
  }

  app.setErrorHandler((error, request, reply) => {
    const client = httpLayerError(error);
    if (client) return reply.code(client.statusCode).send(client.body);
    request.log.error({ err: error, url: request.url }, "provider request failed");
    const failure = protocolFailure("internal", "the provider failed; see its log");
    return reply.code(failure.statusCode).send(failure.body);
  });
  app.setNotFoundHandler((request, reply) => {
    const failure = protocolFailure(
      "not_found",
      `no route ${request.method} ${request.url}; a provider serves GET /v1/manifest, GET /v1/health, ` +
        "POST /v1/invoke, GET /v1/executions/{idempotencyKey} and GET /v1/targets/{kind}/{id}",
    );
    return reply.code(failure.statusCode).send(failure.body);
  });
  // The grant header is checked before the body is parsed, so an unauthenticated caller learns nothing.
  app.addHook("onRequest", async (request, reply) => {
    const route = request.routeOptions.url;
    if (route !== "/v1/invoke" && route !== "/v1/executions/:key" && route !== "/v1/targets/:kind/:id")
      return;
    const grant = grantOf(request.headers);
    if (typeof grant !== "string") return reply.code(grant.statusCode).send(grant.body);
    grants.set(request, grant);
  });

  app.get("/v1/manifest", async () => manifest);
  app.get("/v1/health", async () => (options.health ? options.health() : { status: "ok" }));

  app.post("/v1/invoke", async (httpRequest, reply) => {
    const parsed = InvokeRequest.safeParse(httpRequest.body);
    if (!parsed.success) {
      const failure = protocolFailure(
        "invalid_request",
        "the body is not an InvokeRequest {executionId, idempotencyKey, capability, arguments, subject, account?}",
        issuesOf(parsed.error),
      );
      return reply.code(failure.statusCode).send(failure.body);
    }
    const request = parsed.data;
    if (options.verifyGrant) {
      const call: GrantedCall = { route: "invoke", body: httpRequest.body, request };
      const refused = await refusalOf(grants.get(httpRequest) ?? "", call);
      if (refused) return reply.code(refused.statusCode).send(refused.body);
    }
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

  app.get("/v1/executions/:key", async (httpRequest, reply) => {
    const { key } = httpRequest.params as { key: string };
    if (key.length > 128) {
      const failure = protocolFailure("invalid_request", "an idempotency key has at most 128 characters", [
        { path: "idempotencyKey", message: `${key.length} characters` },
      ]);
      return reply.code(failure.statusCode).send(failure.body);
    }
    if (options.verifyGrant) {
      const refused = await refusalOf(grants.get(httpRequest) ?? "", {
        route: "status",
        idempotencyKey: key,
      });
      if (refused) return reply.code(refused.statusCode).send(refused.body);
    }
    const remembered = memory.status(key);
    if (remembered.status !== "not_found" || !options.statusOf) return remembered;
    const known: ExecutionStatus | undefined = await options.statusOf(key);
    return known ?? remembered;
  });

  app.get("/v1/targets/:kind/:id", async (httpRequest, reply) => {
    const { kind, id } = httpRequest.params as { kind: string; id: string };
    if (options.verifyGrant) {
      const refused = await refusalOf(grants.get(httpRequest) ?? "", { route: "target", kind, id });
      if (refused) return reply.code(refused.statusCode).send(refused.body);
    }
    const reader = options.targets?.[kind];
    const version = reader ? await reader(id) : undefined;
    if (version === undefined) {
      const failure = protocolFailure(
        "not_found",
        reader ? `there is no ${kind} ${id}` : `${manifest.provider} declares no target kind ${kind}`,
      );
      return reply.code(failure.statusCode).send(failure.body);
    }
    const answer: TargetVersion = { kind, id, version };
    return answer;
  });

  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const host = options.host === "0.0.0.0" ? "127.0.0.1" : options.host;
  return { url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, close: () => app.close() };
}

/**
 * Closes `server` on SIGTERM or SIGINT, letting in-flight requests finish, logs `<name> stopping` with
 * the signal, and exits 0: how a provider process ends when its pod is deleted.
 */
export function closeOnSignals(server: ProviderServer, logger: Logger, name: string): void {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info({ signal }, `${name} stopping`);
      void server.close().then(() => process.exit(0));
    });
  }
}

export { type GrantedCall, GrantRefusal, type GrantVerifier, grantFromHeader } from "./grant.ts";
