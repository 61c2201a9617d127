/**
 * The fake APS over HTTP (fastify). Routes, all JSON; the acting user is the `X-APS-User` header:
 *   GET  /api/plans/:id[?version=N]        → PlanVersion            (right plan.read)
 *   GET  /api/plans/:id/versions           → PlanVersions           (right plan.read)
 *   POST /api/plans/:id/drafts {shiftDays, baseVersion?}  → 201 PlanVersion (right plan.draft; Idempotency-Key honoured)
 *   POST /api/plans/:id/publish {version}  → 200 publication        (right plan.publish; Idempotency-Key required)
 *   GET  /api/operations/:key              → OperationRecord        (right operation.read): the status query
 *   GET  /_fake/publishes                  → PublishEvent[]         (test hook, no user)
 *   POST /_fake/drop {operation, count?}   → {pending}              (test hook: drop the next `count` answers; 0 disarms)
 * Errors: `{error, message}` with 400 invalid_request, 401 unauthenticated, 403 forbidden, 404 not_found,
 * 409 conflict (a stale version), 422 idempotency_key_reused.
 *
 * The drop switch (for the Unknown-outcome path, DESIGN §4 step 8): the next `count` requests of an
 * operation are carried out — committed and persisted — and then their TCP connection is destroyed
 * instead of answered, so the caller sees the connection fail and cannot tell what happened.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import { z } from "zod";
import { listenAt } from "../listen.ts";
import { header, invalid } from "../request.ts";
import { type ApsAnswer, type ApsRight, ApsState, type PublishEvent } from "./aps-state.ts";

/** Options of `startFakeAps`. `port: 0` picks a free port. */
export interface FakeApsOptions {
  host: string;
  port: number;
  users?: Record<string, ApsRight[]>;
  /** JSON file that keeps the state across restarts (loaded when it exists); default: memory only. */
  stateFile?: string;
}

/** Requests whose answers the drop switch can lose. */
export type DroppableOperation = "read" | "versions" | "draft" | "publish" | "operation";
export const DroppableOperation = z.enum(["read", "versions", "draft", "publish", "operation"]);

/** A running fake APS. `url` has no trailing slash; `state` is the live system for tests to inspect. */
export interface FakeAps {
  url: string;
  state: ApsState;
  publishes(): PublishEvent[];
  /**
   * Carry out the next `count` (default 1) requests of `operation`, then destroy their connection
   * unanswered; sets the number pending, so `count: 0` disarms it.
   */
  dropResponses(operation: DroppableOperation, count?: number): void;
  close(): Promise<void>;
}

const PlanParams = z.object({ id: z.string().min(1).max(128) });
const KeyParams = z.object({ key: z.string().min(1).max(256) });
const ReadQuery = z.object({ version: z.coerce.number().int().min(1).optional() });
const DraftBody = z.strictObject({
  shiftDays: z.number().int().min(-366).max(366),
  baseVersion: z.number().int().min(1).optional(),
});
const PublishBody = z.strictObject({ version: z.number().int().min(1) });
const DropBody = z.strictObject({
  operation: DroppableOperation,
  count: z.number().int().min(0).max(1000).default(1),
});

/** Starts the fake APS on `host:port` and resolves once it listens. Throws on a malformed state file. */
export async function startFakeAps(options: FakeApsOptions): Promise<FakeAps> {
  const state = new ApsState({
    ...(options.users ? { users: options.users } : {}),
    ...(options.stateFile ? { stateFile: options.stateFile } : {}),
  });
  const pendingDrops = new Map<DroppableOperation, number>();
  const dropResponses = (operation: DroppableOperation, count = 1) => {
    pendingDrops.set(operation, count);
  };
  const app = Fastify({ logger: false });

  /** Sends `answer`, or — when a drop is pending for `operation` — destroys the connection instead. */
  function answer(
    operation: DroppableOperation,
    request: FastifyRequest,
    reply: FastifyReply,
    sent: ApsAnswer,
  ) {
    const pending = pendingDrops.get(operation) ?? 0;
    if (pending > 0) {
      pendingDrops.set(operation, pending - 1);
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    return reply.code(sent.statusCode).send(sent.body);
  }

  const user = (request: FastifyRequest) => header(request.headers["x-aps-user"]);

  app.get("/api/plans/:id", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const query = ReadQuery.safeParse(request.query);
    const sent = query.success
      ? state.read(user(request), params.id, query.data.version)
      : invalid(query.error);
    return answer("read", request, reply, sent);
  });

  app.get("/api/plans/:id/versions", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    return answer("versions", request, reply, state.versions(user(request), params.id));
  });

  app.post("/api/plans/:id/drafts", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const body = DraftBody.safeParse(request.body);
    const sent = body.success
      ? state.createDraft(user(request), params.id, body.data, header(request.headers["idempotency-key"]))
      : invalid(body.error);
    return answer("draft", request, reply, sent);
  });

  app.post("/api/plans/:id/publish", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const body = PublishBody.safeParse(request.body);
    const sent = body.success
      ? state.publish(user(request), params.id, body.data.version, header(request.headers["idempotency-key"]))
      : invalid(body.error);
    return answer("publish", request, reply, sent);
  });

  app.get("/api/operations/:key", async (request, reply) => {
    const params = KeyParams.parse(request.params);
    return answer("operation", request, reply, state.operation(user(request), params.key));
  });

  app.get("/_fake/publishes", async () => state.publishes);

  app.post("/_fake/drop", async (request, reply) => {
    const body = DropBody.safeParse(request.body);
    if (!body.success) {
      const refused = invalid(body.error);
      return reply.code(refused.statusCode).send(refused.body);
    }
    dropResponses(body.data.operation, body.data.count);
    return { operation: body.data.operation, pending: pendingDrops.get(body.data.operation) ?? 0 };
  });

  const url = await listenAt(app, options.host, options.port);
  return {
    url,
    state,
    publishes: () => state.publishes.map((event) => ({ ...event })),
    dropResponses,
    close: () => app.close(),
  };
}
