/**
 * The fake APS over HTTP (fastify). Routes, all JSON; the acting user is the `X-APS-User` header:
 *   GET  /api/plans/:id[?version=N]        → PlanVersion            (right plan.read)
 *   POST /api/plans/:id/drafts {shiftDays, baseVersion?}  → 201 PlanVersion (right plan.draft; Idempotency-Key honoured)
 *   POST /api/plans/:id/publish {version}  → 200 publication        (right plan.publish; Idempotency-Key required)
 *   GET  /_fake/publishes                  → PublishEvent[]         (test hook, no user)
 * Errors: `{error, message}` with 400 invalid_request, 401 unauthenticated, 403 forbidden, 404 not_found,
 * 409 stale_version, 422 idempotency_key_reused.
 */
import Fastify from "fastify";
import { z } from "zod";
import { listenAt } from "../listen.ts";
import { header, invalid } from "../request.ts";
import { type ApsRight, ApsState, type PublishEvent } from "./aps-state.ts";

/** Options of `startFakeAps`. `port: 0` picks a free port. */
export interface FakeApsOptions {
  host: string;
  port: number;
  users?: Record<string, ApsRight[]>;
}

/** A running fake APS. `url` has no trailing slash; `state` is the live system for tests to inspect. */
export interface FakeAps {
  url: string;
  state: ApsState;
  publishes(): PublishEvent[];
  close(): Promise<void>;
}

const PlanParams = z.object({ id: z.string().min(1).max(128) });
const ReadQuery = z.object({ version: z.coerce.number().int().min(1).optional() });
const DraftBody = z.strictObject({
  shiftDays: z.number().int().min(-366).max(366),
  baseVersion: z.number().int().min(1).optional(),
});
const PublishBody = z.strictObject({ version: z.number().int().min(1) });

/** Starts the fake APS on `host:port` and resolves once it listens. */
export async function startFakeAps(options: FakeApsOptions): Promise<FakeAps> {
  const state = new ApsState(options.users ? { users: options.users } : {});
  const app = Fastify({ logger: false });

  app.get("/api/plans/:id", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const query = ReadQuery.safeParse(request.query);
    const answer = query.success
      ? state.read(header(request.headers["x-aps-user"]), params.id, query.data.version)
      : invalid(query.error);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.post("/api/plans/:id/drafts", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const body = DraftBody.safeParse(request.body);
    const answer = body.success
      ? state.createDraft(
          header(request.headers["x-aps-user"]),
          params.id,
          body.data,
          header(request.headers["idempotency-key"]),
        )
      : invalid(body.error);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.post("/api/plans/:id/publish", async (request, reply) => {
    const params = PlanParams.parse(request.params);
    const body = PublishBody.safeParse(request.body);
    const answer = body.success
      ? state.publish(
          header(request.headers["x-aps-user"]),
          params.id,
          body.data.version,
          header(request.headers["idempotency-key"]),
        )
      : invalid(body.error);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.get("/_fake/publishes", async () => state.publishes);

  const url = await listenAt(app, options.host, options.port);
  return {
    url,
    state,
    publishes: () => state.publishes.map((event) => ({ ...event })),
    close: () => app.close(),
  };
}
