// The kit run against a small SDK provider that verifies real EdDSA grants, so the grant checks of the
// kit run too (the aps and erp providers run it without grants until the grants issue).
import { pino } from "pino";
import type { Manifest } from "../contract.ts";
import { ProviderError } from "../provider-error.ts";
import { serveProvider } from "../server.ts";
import { testGrants } from "../test-grant-issuer.ts";
import { describeProviderContract } from "./describe-provider-contract.ts";

const manifest: Manifest = {
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

const grants = await testGrants("plant-a/counter");

describeProviderContract({
  name: "a demo provider that verifies grants",
  start: async () => {
    const counters = new Map<string, number[]>([["widgets", [0]]]);
    const server = await serveProvider({
      manifest,
      handlers: {
        "demo.counter.read": async (request) => {
          const history = counters.get(request.arguments.name as string);
          if (!history) throw new ProviderError("not_found", `no counter ${request.arguments.name}`);
          return { result: { value: history.at(-1), history } };
        },
        "demo.counter.bump-by": async (request) => {
          const history = counters.get(request.arguments.name as string);
          if (!history) throw new ProviderError("not_found", `no counter ${request.arguments.name}`);
          history.push(history.at(-1)! + (request.arguments.by as number));
          return { result: { value: history.at(-1) } };
        },
      },
      host: "127.0.0.1",
      port: 0,
      logger: pino({ level: "silent" }),
      verifyGrant: grants.verify,
    });
    return { url: server.url, stop: () => server.close() };
  },
  examples: {
    "demo.counter.read": { arguments: { name: "widgets" } },
    "demo.counter.bump-by": { arguments: { name: "widgets", by: 2 } },
  },
  grant: (call) => grants.issue(call),
});
