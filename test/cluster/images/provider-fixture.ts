/**
 * The `gatehouse/provider-fixture:dev` image: a provider on the real SDK server whose manifest comes
 * from its environment, so tests can make a provider declare what they need (a weaker effect after an
 * update, a schema a model cannot use, a write behind a Sidecar). Every capability answers by echoing
 * its arguments. Environment (a ProviderInstance passes `spec.config` as variables):
 *
 *   FIXTURE_CAPABILITIES  JSON list of {id, effect, inputSchema?, outputSchema?} (required)
 *   FIXTURE_VERSION       manifest version (default 1.0.0)
 *   PORT, HOST            where to listen (default 8080 on 0.0.0.0)
 *   GATEHOUSE_JWKS_URL, GATEHOUSE_GRANT_AUDIENCE  grant verification (required; the operator sets them)
 */
import { grantVerifierFromEnvironment, type Manifest } from "@gatehouse/provider-sdk";
import { type CapabilityHandler, closeOnSignals, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { z } from "zod";

const Offer = z.object({
  id: z.string(),
  effect: z.enum(["read", "draft", "write"]),
  inputSchema: z.record(z.string(), z.unknown()).default({ type: "object", additionalProperties: true }),
  outputSchema: z.record(z.string(), z.unknown()).default({ type: "object" }),
});

const logger = pino({ base: { provider: "fixture" } });
const offers = z.array(Offer).parse(JSON.parse(process.env.FIXTURE_CAPABILITIES ?? "[]"));
const manifest: Manifest = {
  provider: "fixture",
  version: process.env.FIXTURE_VERSION ?? "1.0.0",
  requiresIdentity: false,
  capabilities: offers.map((o) => ({
    id: o.id,
    description: `Fixture capability ${o.id}.`,
    effect: o.effect,
    mode: "sync",
    idempotency: o.effect === "write" ? "key" : "none",
    inputSchema: o.inputSchema,
    outputSchema: o.outputSchema,
  })),
};
const echo: CapabilityHandler = async (request) => ({ result: request.arguments });
const server = await serveProvider({
  manifest,
  handlers: Object.fromEntries(offers.map((o) => [o.id, echo])),
  host: process.env.HOST ?? "0.0.0.0",
  port: Number(process.env.PORT ?? "8080"),
  logger,
  verifyGrant: grantVerifierFromEnvironment(process.env),
});
logger.info({ url: server.url, capabilities: offers.map((o) => o.id) }, "fixture provider listening");
closeOnSignals(server, logger, "fixture provider");
