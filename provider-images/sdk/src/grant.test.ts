import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type InvokeRequest, type Manifest, ProtocolError, Receipt } from "./contract.ts";
import { GrantRefusal, grantFromHeader } from "./grant.ts";
import { type ProviderServer, serveProvider } from "./server.ts";
import { type TestGrants, testGrants } from "./test-grant-issuer.ts";

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
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      outputSchema: { type: "object" },
    },
  ],
};

let server: ProviderServer;
let grants: TestGrants;
let handled: number[];

async function start(verifyGrant: ServeVerifier) {
  handled = [];
  server = await serveProvider({
    manifest,
    handlers: {
      "demo.thing.write": async (request) => {
        handled.push(request.arguments.n as number);
        return { result: { written: request.arguments.n } };
      },
    },
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
    verifyGrant,
  });
}
type ServeVerifier = Parameters<typeof serveProvider>[0]["verifyGrant"];

beforeEach(async () => {
  grants = await testGrants("plant-a/demo");
  await start((grant, call) => grants.verify(grant, call));
});
afterEach(async () => {
  await server.close();
});

function request(key: string, n: number): InvokeRequest {
  return {
    executionId: `exec-${key}`,
    idempotencyKey: key,
    capability: "demo.thing.write",
    arguments: { n },
    subject: { user: "alice", groups: [] },
  };
}

async function post(body: string, authorization?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await fetch(`${server.url}/v1/invoke`, { method: "POST", headers, body });
  return { status: response.status, body: (await response.json()) as unknown };
}

async function invokeGranted(body: InvokeRequest, overrides?: Record<string, unknown>) {
  const grant = await grants.issue({ route: "invoke", body, request: body }, overrides);
  return post(JSON.stringify(body), `Bearer ${grant}`);
}

async function status(key: string, authorization?: string) {
  const headers: Record<string, string> = authorization ? { authorization } : {};
  const response = await fetch(`${server.url}/v1/executions/${key}`, { headers });
  return { status: response.status, body: (await response.json()) as unknown };
}

describe("the grant hook of serveProvider", () => {
  it("runs the handler for an invoke whose grant the verifier accepts", async () => {
    const answer = await invokeGranted(request("k1", 7));
    expect(answer.status).toBe(200);
    expect(Receipt.parse(answer.body)).toEqual({ status: "succeeded", result: { written: 7 } });
    expect(handled).toEqual([7]);
  });

  it("refuses an invoke without an Authorization header with 401 before looking at the body", async () => {
    const answer = await post('{"not": "even an invoke');
    expect(answer.status).toBe(401);
    expect(ProtocolError.parse(answer.body)).toMatchObject({ kind: "unauthenticated" });
    expect((answer.body as ProtocolError).message).toContain("Authorization: Bearer");
    expect(handled).toEqual([]);
  });

  it("refuses an invoke whose body differs from the one the grant was issued for, and runs nothing", async () => {
    const granted = request("k2", 1);
    const grant = await grants.issue({ route: "invoke", body: granted, request: granted });
    const answer = await post(JSON.stringify(request("k2", 2)), `Bearer ${grant}`);
    expect(answer.status).toBe(403);
    expect(ProtocolError.parse(answer.body)).toMatchObject({ kind: "forbidden" });
    expect((answer.body as ProtocolError).message).toContain("argsDigest");
    expect(handled).toEqual([]);
  });

  it("refuses a grant for another audience", async () => {
    const other = await testGrants("plant-b/demo");
    const body = request("k3", 1);
    const grant = await other.issue({ route: "invoke", body, request: body });
    const answer = await post(JSON.stringify(body), `Bearer ${grant}`);
    expect(answer.status).toBe(403);
    expect(handled).toEqual([]);
  });

  it("refuses a reused grant, and does not replay the remembered receipt to it", async () => {
    const body = request("k4", 4);
    const grant = await grants.issue({ route: "invoke", body, request: body });
    expect((await post(JSON.stringify(body), `Bearer ${grant}`)).status).toBe(200);
    const replay = await post(JSON.stringify(body), `Bearer ${grant}`);
    expect(replay.status).toBe(403);
    expect(replay.body).not.toHaveProperty("result");
    expect(handled).toEqual([4]);
  });

  it("answers 401 when the verifier refuses as unauthenticated, e.g. an expired grant", async () => {
    const body = request("k5", 1);
    const expired = await grants.issue({ route: "invoke", body, request: body }, { exp: 1 });
    const answer = await post(JSON.stringify(body), `Bearer ${expired}`);
    expect(answer.status).toBe(401);
    expect(ProtocolError.parse(answer.body)).toEqual({
      kind: "unauthenticated",
      message: "the grant expired",
    });
  });

  it("answers the status of a key only with a grant for that key", async () => {
    await invokeGranted(request("k6", 6));
    expect((await status("k6")).status).toBe(401);
    const forOther = await grants.issue({ route: "status", idempotencyKey: "k7" });
    expect((await status("k6", `Bearer ${forOther}`)).status).toBe(403);
    const forKey = await grants.issue({ route: "status", idempotencyKey: "k6" });
    expect(await status("k6", `Bearer ${forKey}`)).toMatchObject({
      status: 200,
      body: { status: "succeeded" },
    });
  });

  it("fails closed with 403 when the verifier throws something other than a GrantRefusal", async () => {
    await server.close();
    await start(async () => {
      throw new TypeError("JWKS fetch failed");
    });
    const body = request("k8", 1);
    const answer = await post(JSON.stringify(body), "Bearer abc.def.ghi");
    expect(answer.status).toBe(403);
    expect(ProtocolError.parse(answer.body).kind).toBe("forbidden");
    expect(handled).toEqual([]);
  });
});

describe("grantFromHeader", () => {
  it("takes the token of a bearer header", () => {
    expect(grantFromHeader("Bearer eyJ.abc-_.x9")).toBe("eyJ.abc-_.x9");
  });

  it.each([
    ["a missing header", undefined],
    ["an empty header", ""],
    ["another scheme", "Basic YWxpY2U6c2VjcmV0"],
    ["a bearer without a token", "Bearer "],
    ["two headers", ["Bearer a", "Bearer b"]],
  ])("refuses %s as unauthenticated", (_what, header) => {
    expect(() => grantFromHeader(header)).toThrow(GrantRefusal);
    try {
      grantFromHeader(header);
    } catch (error) {
      expect((error as GrantRefusal).kind).toBe("unauthenticated");
    }
  });
});
