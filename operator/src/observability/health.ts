/**
 * The operator's health server (fastify), apart from the agent-facing gateway so probes and scrapes
 * never share a port with pods' traffic: `GET /healthz` (200 while the process serves — it never asks
 * the database, so an outage restarts nothing), `GET /readyz` (200 while every check holds: the caches
 * synced, the database answers, the gateway listens; else 503; JSON `{ready, leader, checks}` with each
 * check by name, e.g. `"database": false`) and `GET /metrics` (Prometheus text format from the operator's registry).
 * Kubernetes probe semantics: https://kubernetes.io/docs/reference/using-api/health-checks/
 */
import Fastify, { type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import { drainOnClose } from "../http/shutdown.ts";

/** A named readiness check: true when ready. */
export type ReadinessCheck = { name: string; ready: () => boolean };

/** What the health server reports on. */
export interface HealthDeps {
  registry: Registry;
  checks: ReadinessCheck[];
  /** Whether this replica runs the controllers (reported, not required for readiness). */
  isLeader: () => boolean;
}

/** Builds (not starts) the health server. */
export function buildHealthServer(deps: HealthDeps): FastifyInstance {
  const app = Fastify({ logger: false });
  // A scraper's keep-alive connection must not hold a stopping replica (http/shutdown.ts).
  drainOnClose(app);
  app.get("/healthz", async () => "ok");
  app.get("/readyz", async (_request, reply) => {
    const checks = Object.fromEntries(deps.checks.map((c) => [c.name, c.ready()]));
    const ready = Object.values(checks).every(Boolean);
    return reply.code(ready ? 200 : 503).send({ ready, leader: deps.isLeader(), checks });
  });
  app.get("/metrics", async (_request, reply) =>
    reply.header("content-type", deps.registry.contentType).send(await deps.registry.metrics()),
  );
  return app;
}
