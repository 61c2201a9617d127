/**
 * The `gatehouse/provider-counter:dev` image: the counting write provider of the Core tests.
 * A provider on the real SDK server in front of a tiny in-process business system that keeps plans
 * (id → version) and a ledger of effects, so a test can prove "at most one effect per action" by
 * reading the ledger. Each capability declares one behaviour:
 *
 *   ok         commits an effect (idempotent by key when `idempotency: key`: a repeated key commits
 *              nothing and answers the first receipt); with `target`, the `version` argument must be
 *              the plan's current version (else `conflict`) and a commit moves it on by one;
 *   forbidden  refuses as the business system would (`forbidden`), commits nothing;
 *   drop       commits the effect, then loses the answer (`unknown_outcome`, as when the business
 *              system's response never arrived) — every time, also for a repeated key; the system's
 *              record by key (`statusOf`) still knows the outcome when `idempotency: key`.
 * `delayMs` holds each call that long after committing, before answering.
 *
 * Grants are verified as in every provider (`GATEHOUSE_JWKS_URL`, `GATEHOUSE_GRANT_AUDIENCE`, set by the
 * operator). Environment (a ProviderInstance passes `spec.config` as variables):
 *   COUNTER_CAPABILITIES  JSON list of {id, effect, idempotency?, behaviour?, target?, delayMs?} (required)
 *   COUNTER_REQUIRES_IDENTITY  `true`: the manifest requires identity (Core sends the bound account,
 *                         which each effect records; a call without one is refused `forbidden`)
 *   PORT, HOST            where the provider listens (default 8080 on 0.0.0.0)
 *   OBSERVER_PORT         the test-only ledger endpoint (default 8081):
 *                           GET  /effects           every committed effect, in order
 *                           GET  /calls             every invoke the handlers saw, in order
 *                           GET  /plans/:id         {id, version}
 *                           POST /plans/:id/bump    moves the plan to the next version (another writer)
 */
import { createServer } from "node:http";
import type { ExecutionStatus, InvokeResponse, Manifest } from "@gatehouse/provider-sdk";
import { grantVerifierFromEnvironment, ProviderError } from "@gatehouse/provider-sdk";
import { type CapabilityHandler, closeOnSignals, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { z } from "zod";

const Offer = z.object({
  id: z.string(),
  effect: z.enum(["read", "draft", "write"]),
  idempotency: z.enum(["none", "key"]).default("key"),
  behaviour: z.enum(["ok", "forbidden", "drop"]).default("ok"),
  /** Declares target kind `plan` read from arguments `planId` and `version`. */
  target: z.boolean().default(false),
  delayMs: z.number().int().min(0).default(0),
});
type Offer = z.infer<typeof Offer>;

interface Effect {
  capability: string;
  idempotencyKey: string;
  executionId: string;
  arguments: Record<string, unknown>;
  account: string | null;
  atMs: number;
}

const logger = pino({ base: { provider: "counter" } });
const offers = z.array(Offer).parse(JSON.parse(process.env.COUNTER_CAPABILITIES ?? "[]"));
const requiresIdentity = process.env.COUNTER_REQUIRES_IDENTITY === "true";
const plans = new Map<string, number>();
const effects: Effect[] = [];
const calls: Array<{ capability: string; idempotencyKey: string; executionId: string }> = [];
/** The business system's own record by idempotency key (what `statusOf` reports). */
const byKey = new Map<string, InvokeResponse>();

function inputSchemaOf(offer: Offer): Record<string, unknown> {
  if (!offer.target) return { type: "object", additionalProperties: true };
  return {
    type: "object",
    properties: { planId: { type: "string", minLength: 1 }, version: { type: "integer", minimum: 1 } },
    required: ["planId", "version"],
    additionalProperties: true,
  };
}

const manifest: Manifest = {
  provider: "counter",
  version: "1.0.0",
  requiresIdentity,
  capabilities: offers.map((o) => ({
    id: o.id,
    description: `Counting capability ${o.id} (${o.behaviour}).`,
    effect: o.effect,
    mode: "sync",
    idempotency: o.idempotency,
    inputSchema: inputSchemaOf(o),
    outputSchema: { type: "object" },
    ...(o.target ? { target: { kind: "plan", idArgument: "planId", versionArgument: "version" } } : {}),
  })),
};

function versionOf(planId: string): number {
  return plans.get(planId) ?? 1;
}

function handlerFor(offer: Offer): CapabilityHandler {
  return async (request) => {
    calls.push({
      capability: request.capability,
      idempotencyKey: request.idempotencyKey,
      executionId: request.executionId,
    });
    if (requiresIdentity && request.account === undefined) {
      throw new ProviderError("forbidden", `no business account was sent for ${request.subject.user}`);
    }
    if (offer.behaviour === "forbidden") {
      throw new ProviderError("forbidden", `${request.subject.user} may not ${offer.id} in this system`);
    }
    const known = offer.idempotency === "key" ? byKey.get(request.idempotencyKey) : undefined;
    let result: Record<string, unknown>;
    if (known) {
      result = known.result as Record<string, unknown>;
    } else {
      const args = request.arguments;
      if (offer.target) {
        const planId = String(args.planId);
        if (args.version !== versionOf(planId)) {
          throw new ProviderError(
            "conflict",
            `plan ${planId} is at version ${versionOf(planId)}, not ${String(args.version)}`,
          );
        }
        plans.set(planId, versionOf(planId) + 1);
      }
      effects.push({
        capability: request.capability,
        idempotencyKey: request.idempotencyKey,
        executionId: request.executionId,
        arguments: args,
        account: request.account ?? null,
        atMs: Date.now(),
      });
      result = {
        effect: effects.length,
        ...(offer.target ? { version: versionOf(String(args.planId)) } : {}),
      };
      if (offer.idempotency === "key") byKey.set(request.idempotencyKey, { status: "succeeded", result });
    }
    if (offer.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, offer.delayMs));
    if (offer.behaviour === "drop") {
      throw new ProviderError("unknown_outcome", "the business system's answer was lost after it committed");
    }
    return { result, evidence: { system: "counter", reference: `effect-${String(result.effect)}` } };
  };
}

async function statusOf(idempotencyKey: string): Promise<ExecutionStatus | undefined> {
  const response = byKey.get(idempotencyKey);
  return response ? { idempotencyKey, status: "succeeded", response } : undefined;
}

const server = await serveProvider({
  manifest,
  handlers: Object.fromEntries(offers.map((o) => [o.id, handlerFor(o)])),
  host: process.env.HOST ?? "0.0.0.0",
  port: Number(process.env.PORT ?? "8080"),
  logger,
  verifyGrant: grantVerifierFromEnvironment(process.env),
  statusOf,
  targets: { plan: async (id) => String(versionOf(id)) },
});

const observer = createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://observer");
  const send = (status: number, body: unknown) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  };
  const plan = /^\/plans\/([^/]+)(\/bump)?$/.exec(url.pathname);
  if (request.method === "GET" && url.pathname === "/effects") return send(200, effects);
  if (request.method === "GET" && url.pathname === "/calls") return send(200, calls);
  if (plan && request.method === "GET" && !plan[2]) {
    return send(200, { id: plan[1], version: versionOf(plan[1]!) });
  }
  if (plan && request.method === "POST" && plan[2]) {
    plans.set(plan[1]!, versionOf(plan[1]!) + 1);
    return send(200, { id: plan[1], version: versionOf(plan[1]!) });
  }
  return send(404, { message: `no route ${request.method} ${url.pathname}` });
});
observer.listen(Number(process.env.OBSERVER_PORT ?? "8081"), process.env.HOST ?? "0.0.0.0");

logger.info({ url: server.url, capabilities: offers.map((o) => o.id) }, "counter provider listening");
closeOnSignals(server, logger, "counter provider");
process.once("SIGTERM", () => observer.close());
