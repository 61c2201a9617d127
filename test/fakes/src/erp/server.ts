/**
 * The fake ERP over HTTP (fastify). Routes, all JSON; the acting user is the `X-ERP-User` header:
 *   GET /api/health                         → {status: "ok"} (no user)
 *   GET /api/materials/:id                  → Material     (any known user)
 *   GET /api/materials/:id/stock?plant=P    → StockLevel   (a user who may see plant P)
 *   PUT /_fake/stock/:id/:plant {unrestricted, qualityInspection, blocked} → 204 (test hook, no user)
 *   GET /_fake/reads                        → ErpRead[]    (test hook, no user)
 * Errors: `{error, message}` with 400 invalid_request, 401 unauthenticated, 403 forbidden, 404 not_found.
 */
import Fastify from "fastify";
import { z } from "zod";
import { listenAt } from "../listen.ts";
import { header, invalid } from "../request.ts";
import { type ErpRead, ErpState, type ErpUser } from "./erp-state.ts";

/** Options of `startFakeErp`. `port: 0` picks a free port. */
export interface FakeErpOptions {
  host: string;
  port: number;
  users?: Record<string, ErpUser>;
}

/** A running fake ERP. `url` has no trailing slash; `state` is the live system for tests to inspect. */
export interface FakeErp {
  url: string;
  state: ErpState;
  reads(): ErpRead[];
  close(): Promise<void>;
}

const Id = z.string().min(1).max(128);
const MaterialParams = z.object({ id: Id });
const StockQuery = z.object({ plant: Id });
const StockParams = z.object({ id: Id, plant: Id });
const Quantity = z.number().min(0);
const StockBody = z.strictObject({ unrestricted: Quantity, qualityInspection: Quantity, blocked: Quantity });

/** Starts the fake ERP on `host:port` and resolves once it listens. */
export async function startFakeErp(options: FakeErpOptions): Promise<FakeErp> {
  const state = new ErpState(options.users ? { users: options.users } : {});
  const app = Fastify({ logger: false });

  app.get("/api/health", async () => ({ status: "ok" }));

  app.get("/api/materials/:id", async (request, reply) => {
    const params = MaterialParams.parse(request.params);
    const answer = state.material(header(request.headers["x-erp-user"]), params.id);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.get("/api/materials/:id/stock", async (request, reply) => {
    const params = MaterialParams.parse(request.params);
    const query = StockQuery.safeParse(request.query);
    const answer = query.success
      ? state.stockLevel(header(request.headers["x-erp-user"]), params.id, query.data.plant)
      : invalid(query.error);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.put("/_fake/stock/:id/:plant", async (request, reply) => {
    const params = StockParams.parse(request.params);
    const body = StockBody.safeParse(request.body);
    const answer = body.success ? state.setStock(params.id, params.plant, body.data) : invalid(body.error);
    return reply.code(answer.statusCode).send(answer.body);
  });

  app.get("/_fake/reads", async () => state.reads);

  const url = await listenAt(app, options.host, options.port);
  return {
    url,
    state,
    reads: () => state.reads.map((read) => ({ ...read })),
    close: () => app.close(),
  };
}
