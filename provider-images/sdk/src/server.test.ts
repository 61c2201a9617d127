import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ExecutionStatus, type InvokeRequest, InvokeResponse, type Manifest } from "./contract.ts";
import { ProviderError } from "./provider-error.ts";
import { schemaDigest } from "./schema-digest.ts";
import { type CapabilityHandler, type ProviderServer, serveProvider } from "./server.ts";

const manifest: Manifest = {
  provider: "demo",
  version: "1.0.0",
  requiresIdentity: false,
  capabilities: [
    {
      id: "demo.thing.write",
      description: "writes a thing",
      effect: "write",
      mode: "sync",
      idempotency: "key",
      inputSchema: {
        type: "object",
        properties: { n: { type: "integer" } },
        required: ["n"],
        additionalProperties: false,
      },
      outputSchema: { type: "object" },
    },
  ],
};

let server: ProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(handler: CapabilityHandler) {
  server = await serveProvider({
    manifest,
    handlers: { "demo.thing.write": handler },
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
  });
  return server;
}

function request(key: string, n: number): InvokeRequest {
  return {
    executionId: `exec-${key}`,
    idempotencyKey: key,
    capability: "demo.thing.write",
    arguments: { n },
    subject: { user: "alice", groups: [] },
  };
}

async function invoke(url: string, body: InvokeRequest) {
  const response = await fetch(`${url}/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: response.status === 200 ? InvokeResponse.parse(await response.json()) : undefined,
  };
}

describe("serveProvider", () => {
  it("runs concurrent invokes with one key once and gives both the same receipt", async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { url } = await serve(async (req) => {
      calls += 1;
      await gate;
      return { result: { written: req.arguments.n } };
    });
    const first = invoke(url, request("k", 1));
    const second = invoke(url, request("k", 1));
    await expect
      .poll(async () => ExecutionStatus.parse(await (await fetch(`${url}/v1/executions/k`)).json()).status)
      .toBe("in_progress");
    release();
    expect(await first).toEqual(await second);
    expect(calls).toBe(1);
  });

  it("answers conflict when a key is reused for different arguments", async () => {
    const { url } = await serve(async () => ({ result: {} }));
    await invoke(url, request("k", 1));
    expect((await invoke(url, request("k", 2))).body).toMatchObject({
      status: "failed",
      errorKind: "conflict",
    });
  });

  it("remembers a business refusal but not a retryable failure", async () => {
    let calls = 0;
    const { url } = await serve(async (req) => {
      calls += 1;
      throw new ProviderError(req.arguments.n === 1 ? "forbidden" : "unavailable", "no");
    });
    await invoke(url, request("refused", 1));
    await invoke(url, request("refused", 1));
    await invoke(url, request("flaky", 2));
    await invoke(url, request("flaky", 2));
    expect(calls).toBe(3);
  });

  it("answers 500 for a handler bug and runs the key again on retry", async () => {
    let calls = 0;
    const { url } = await serve(async () => {
      calls += 1;
      if (calls === 1) throw new TypeError("bug");
      return { result: { ok: true } };
    });
    expect((await invoke(url, request("k", 1))).status).toBe(500);
    expect((await invoke(url, request("k", 1))).body).toMatchObject({ status: "succeeded" });
  });

  it("refuses to start when a capability has no handler", async () => {
    await expect(
      serveProvider({
        manifest,
        handlers: {},
        host: "127.0.0.1",
        port: 0,
        logger: pino({ level: "silent" }),
      }),
    ).rejects.toThrow(/no handler/);
  });
});

describe("schemaDigest", () => {
  it("does not depend on key order and ignores the description", () => {
    const offer = manifest.capabilities[0]!;
    const reordered = {
      ...offer,
      description: "another text",
      inputSchema: {
        additionalProperties: false,
        required: ["n"],
        properties: { n: { type: "integer" } },
        type: "object",
      },
    };
    expect(schemaDigest(reordered)).toBe(schemaDigest(offer));
    expect(schemaDigest(offer)).toMatch(/^[0-9a-f]{64}$/);
  });
});
