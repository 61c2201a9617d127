/**
 * A small SDK provider for the kit's own tests: counters you can read and bump. Its grant verification
 * is whatever the test passes, so one fixture serves as the well-behaved provider (the production
 * verifier) and as the deliberately broken ones.
 */
import { pino } from "pino";
import type { Manifest } from "../contract.ts";
import type { GrantVerifier } from "../grant.ts";
import { ProviderError } from "../provider-error.ts";
import { serveProvider } from "../server.ts";
import type { ContractExample, RunningProvider } from "./contract-session.ts";

export const counterManifest: Manifest = {
  provider: "counter",
  version: "1.0.0",
  requiresIdentity: false,
  capabilities: [
    {
      id: "demo.counter.read",
      description: "Read a counter and its history.",
      effect: "read",
      mode: "sync",
      idempotency: "natural",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string" } },
        required: ["name"],
        additionalProperties: false,
      },
      outputSchema: {
        type: "object",
        properties: { value: { type: "integer" }, history: { type: "array", items: { type: "integer" } } },
        required: ["value", "history"],
      },
    },
    {
      id: "demo.counter.bump-by",
      description: "Add to a counter.",
      effect: "write",
      mode: "sync",
      idempotency: "key",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string" }, by: { type: "integer", minimum: 1 } },
        required: ["name", "by"],
        additionalProperties: false,
      },
      outputSchema: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] },
    },
  ],
};

/** Valid examples of both capabilities. */
export const counterExamples: Record<string, ContractExample> = {
  "demo.counter.read": { arguments: { name: "widgets" } },
  "demo.counter.bump-by": { arguments: { name: "widgets", by: 2 } },
};

/** Starts the counter provider on loopback with `verifyGrant` (none: it accepts any caller). */
export async function startCounterProvider(verifyGrant: GrantVerifier | undefined): Promise<RunningProvider> {
  const counters = new Map<string, number[]>([["widgets", [0]]]);
  const historyOf = (name: unknown) => {
    const history = counters.get(String(name));
    if (!history) throw new ProviderError("not_found", `no counter ${String(name)}`);
    return history;
  };
  const server = await serveProvider({
    manifest: counterManifest,
    handlers: {
      "demo.counter.read": async (request) => {
        const history = historyOf(request.arguments.name);
        return { result: { value: history.at(-1), history } };
      },
      "demo.counter.bump-by": async (request) => {
        const history = historyOf(request.arguments.name);
        history.push(history.at(-1)! + (request.arguments.by as number));
        return { result: { value: history.at(-1) } };
      },
    },
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
    ...(verifyGrant ? { verifyGrant } : {}),
  });
  return { url: server.url, stop: () => server.close() };
}
