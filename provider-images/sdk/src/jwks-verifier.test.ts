import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type InvokeRequest, type Manifest, ProtocolError } from "./contract.ts";
import { type GrantedCall, GrantRefusal, type GrantVerifier } from "./grant.ts";
import { grantVerifierFromEnvironment, jwksGrantVerifier } from "./jwks-verifier.ts";
import { canonicalDigest } from "./schema-digest.ts";
import { serveProvider } from "./server.ts";

const AUDIENCE = "plant-a/demo";

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "EdDSA", use: "sig" } };
}

/** A JWKS served over HTTP like the gateway's; `published` may change between requests. */
let jwksServer: Server;
let jwksUrl: string;
let published: SigningKey[];
let fetches: number;
let first: SigningKey;

beforeEach(async () => {
  first = await signingKey("key-1");
  published = [first];
  fetches = 0;
  jwksServer = createServer((_request, response) => {
    fetches += 1;
    response.setHeader("content-type", "application/jwk-set+json");
    response.end(JSON.stringify({ keys: published.map((k) => k.publicJwk) }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/v1/grants/jwks`;
});
afterEach(async () => {
  await new Promise((resolve) => jwksServer.close(resolve));
});

function request(key: string, n = 1): InvokeRequest {
  return {
    executionId: `exec-${key}`,
    idempotencyKey: key,
    capability: "demo.thing.write",
    arguments: { n },
    subject: { user: "alice", groups: [] },
  };
}

function invokeCall(body: InvokeRequest): Extract<GrantedCall, { route: "invoke" }> {
  return { route: "invoke", body: JSON.parse(JSON.stringify(body)), request: body };
}

let issued = 0;
/** Signs the grant the operator would sign for `call`; `claims` override or (undefined) remove claims. */
async function grantFor(
  call: GrantedCall,
  claims: Record<string, unknown> = {},
  key = first,
): Promise<string> {
  issued += 1;
  const now = Math.floor(Date.now() / 1000);
  const routeClaims =
    call.route === "invoke"
      ? {
          sub: call.request.subject.user,
          cap: call.request.capability,
          idempotencyKey: call.request.idempotencyKey,
          argsDigest: canonicalDigest(call.body),
        }
      : call.route === "status"
        ? { idempotencyKey: call.idempotencyKey }
        : { target: `${call.kind}/${call.id}` };
  const payload: Record<string, unknown> = {
    iss: "gatehouse",
    aud: AUDIENCE,
    jti: `grant-${issued}-${Math.random()}`,
    iat: now,
    exp: now + 60,
    ...routeClaims,
    ...claims,
  };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: "EdDSA", kid: key.kid }).sign(key.privateKey);
}

/** The refusal `verify` throws for `grant` on `call`, or undefined when it accepts. */
async function refusal(verify: GrantVerifier, grant: string, call: GrantedCall) {
  try {
    await verify(grant, call);
    return undefined;
  } catch (error) {
    if (!(error instanceof GrantRefusal)) throw error;
    return { kind: error.kind, message: error.message };
  }
}

function verifier(options: Partial<Parameters<typeof jwksGrantVerifier>[0]> = {}) {
  return jwksGrantVerifier({ jwksUrl, audience: AUDIENCE, jwksCooldownSeconds: 0, ...options });
}

describe("jwksGrantVerifier", () => {
  it("accepts an invoke whose grant the operator's key signed for exactly that body", async () => {
    const call = invokeCall(request("k1"));
    expect(await refusal(verifier(), await grantFor(call), call)).toBeUndefined();
  });

  it("accepts a status query and a target query with grants for them", async () => {
    const verify = verifier();
    const status: GrantedCall = { route: "status", idempotencyKey: "k1" };
    const target: GrantedCall = { route: "target", kind: "plan", id: "p-1" };
    expect(await refusal(verify, await grantFor(status), status)).toBeUndefined();
    expect(await refusal(verify, await grantFor(target), target)).toBeUndefined();
  });

  it("refuses a grant used a second time, as forbidden", async () => {
    const verify = verifier();
    const call = invokeCall(request("k2"));
    const grant = await grantFor(call);
    expect(await refusal(verify, grant, call)).toBeUndefined();
    expect(await refusal(verify, grant, call)).toEqual({
      kind: "forbidden",
      message: expect.stringContaining("already used"),
    });
  });

  it("refuses a body whose RFC 8785 digest differs from argsDigest, without burning the grant", async () => {
    const verify = verifier();
    const call = invokeCall(request("k3", 1));
    const grant = await grantFor(call);
    const tampered = { ...call, body: { ...(call.body as object), arguments: { n: 2 } } } as GrantedCall;
    expect(await refusal(verify, grant, tampered)).toEqual({
      kind: "forbidden",
      message: expect.stringContaining("differs from the grant's argsDigest"),
    });
    expect(await refusal(verify, grant, call)).toBeUndefined();
  });

  it("accepts the same body with its keys in another order (the digest is of canonical JSON)", async () => {
    const call = invokeCall(request("k4"));
    const grant = await grantFor(call);
    const reordered = Object.fromEntries(Object.entries(call.body as object).reverse());
    expect(await refusal(verifier(), grant, { ...call, body: reordered } as GrantedCall)).toBeUndefined();
  });

  it("refuses a grant for another ProviderInstance, naming both audiences", async () => {
    const call = invokeCall(request("k5"));
    expect(await refusal(verifier(), await grantFor(call, { aud: "plant-a/other" }), call)).toEqual({
      kind: "forbidden",
      message: 'the grant is for "plant-a/other", not for this provider (plant-a/demo)',
    });
  });

  it("refuses an expired grant as unauthenticated", async () => {
    const call = invokeCall(request("k6"));
    const now = Math.floor(Date.now() / 1000);
    const expired = await grantFor(call, { iat: now - 120, exp: now - 60 });
    expect(await refusal(verifier(), expired, call)).toMatchObject({ kind: "unauthenticated" });
  });

  it("refuses a grant that lives longer than 60 s, or lacks exp or iat", async () => {
    const verify = verifier();
    const call = invokeCall(request("k7"));
    const now = Math.floor(Date.now() / 1000);
    expect(await refusal(verify, await grantFor(call, { exp: now + 61 }), call)).toEqual({
      kind: "forbidden",
      message: "the grant lives 61 s (exp - iat), more than the 60 s a grant may",
    });
    expect(await refusal(verify, await grantFor(call, { exp: undefined }), call)).toMatchObject({
      kind: "forbidden",
      message: "the grant's exp claim is missing",
    });
    expect(await refusal(verify, await grantFor(call, { iat: undefined }), call)).toMatchObject({
      kind: "forbidden",
      message: "the grant's iat claim is missing",
    });
  });

  it("refuses a grant for another capability, idempotency key, subject or issuer", async () => {
    const verify = verifier();
    const call = invokeCall(request("k8"));
    for (const claims of [
      { cap: "demo.other.write" },
      { idempotencyKey: "k9" },
      { sub: "mallory" },
      { iss: "someone-else" },
    ]) {
      expect(await refusal(verify, await grantFor(call, claims), call)).toMatchObject({ kind: "forbidden" });
    }
  });

  it("refuses a status grant on an invoke and an invoke grant on a status query", async () => {
    const verify = verifier();
    const invoke = invokeCall(request("k10"));
    const status: GrantedCall = { route: "status", idempotencyKey: "k10" };
    expect(await refusal(verify, await grantFor(status), invoke)).toEqual({
      kind: "forbidden",
      message: "the grant is for the status route, not for this invoke call",
    });
    expect(await refusal(verify, await grantFor(invoke), status)).toEqual({
      kind: "forbidden",
      message: "the grant is for the invoke route, not for this status call",
    });
  });

  it("refuses a grant signed by a key the operator does not publish", async () => {
    const verify = verifier();
    const call = invokeCall(request("k11"));
    const stranger = await signingKey("key-1");
    expect(await refusal(verify, await grantFor(call, {}, stranger), call)).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining("signature does not verify"),
    });
    const unknownKid = await signingKey("key-x");
    expect(await refusal(verify, await grantFor(call, {}, unknownKid), call)).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining("is not in the operator's JWKS"),
    });
  });

  it("learns a rotated key from the JWKS when a grant names a kid it has not seen", async () => {
    const verify = verifier();
    const before = invokeCall(request("k12"));
    expect(await refusal(verify, await grantFor(before), before)).toBeUndefined();
    const second = await signingKey("key-2");
    published = [first, second];
    const after = invokeCall(request("k13"));
    expect(await refusal(verify, await grantFor(after, {}, second), after)).toBeUndefined();
    // The old key is still published: its grants stay valid.
    const old = invokeCall(request("k14"));
    expect(await refusal(verify, await grantFor(old), old)).toBeUndefined();
    expect(fetches).toBe(2);
  });

  it("refuses new grants rather than forget unexpired ones when its memory is full", async () => {
    const verify = verifier({ maxRememberedGrants: 1 });
    const one = invokeCall(request("k15"));
    const two = invokeCall(request("k16"));
    expect(await refusal(verify, await grantFor(one), one)).toBeUndefined();
    expect(await refusal(verify, await grantFor(two), two)).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining("too many unexpired grants"),
    });
  });

  it("refuses, fail closed, when the JWKS cannot be fetched", async () => {
    const verify = jwksGrantVerifier({ jwksUrl: "http://127.0.0.1:1/v1/grants/jwks", audience: AUDIENCE });
    const call = invokeCall(request("k17"));
    expect(await refusal(verify, await grantFor(call), call)).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining("could not be checked against the operator's JWKS"),
    });
  });

  it("answers 401 and 403 through serveProvider", async () => {
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
          inputSchema: { type: "object" },
          outputSchema: { type: "object" },
        },
      ],
    };
    const server = await serveProvider({
      manifest,
      handlers: { "demo.thing.write": async (r) => ({ result: r.arguments }) },
      host: "127.0.0.1",
      port: 0,
      logger: pino({ level: "silent" }),
      verifyGrant: verifier(),
    });
    try {
      const body = request("k18");
      const grant = await grantFor(invokeCall(body));
      const post = (authorization?: string) =>
        fetch(`${server.url}/v1/invoke`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
          body: JSON.stringify(body),
        });
      expect((await post()).status).toBe(401);
      expect((await post(`Bearer ${grant}`)).status).toBe(200);
      const replay = await post(`Bearer ${grant}`);
      expect(replay.status).toBe(403);
      expect(ProtocolError.parse(await replay.json()).kind).toBe("forbidden");
    } finally {
      await server.close();
    }
  });
});

describe("a Sidecar provider's jwksGrantVerifier (given its session)", () => {
  const SESSION = "0b7c-session-a";

  it("accepts a grant for its session's call, on every route", async () => {
    const verify = verifier({ session: SESSION });
    const call = invokeCall(request("s1"));
    const status: GrantedCall = { route: "status", idempotencyKey: "s1" };
    expect(await refusal(verify, await grantFor(call, { sid: SESSION }), call)).toBeUndefined();
    expect(await refusal(verify, await grantFor(status, { sid: SESSION }), status)).toBeUndefined();
  });

  it("refuses a grant for another session's call, and one naming no session", async () => {
    const verify = verifier({ session: SESSION });
    const call = invokeCall(request("s2"));
    expect(await refusal(verify, await grantFor(call, { sid: "0b7c-session-b" }), call)).toEqual({
      kind: "forbidden",
      message: `the grant is for session "0b7c-session-b", not for this sidecar's session ${SESSION}`,
    });
    expect(await refusal(verify, await grantFor(call), call)).toMatchObject({
      kind: "forbidden",
      message: expect.stringContaining("the grant is for session null"),
    });
    // A verifier not told its session — every sidecar's before GATEHOUSE_GRANT_SESSION — admits it.
    const other = invokeCall(request("s3"));
    expect(
      await refusal(verifier(), await grantFor(other, { sid: "0b7c-session-b" }), other),
    ).toBeUndefined();
    // Refused before its jti is remembered: the session's own grant still works once.
    const own = await grantFor(call, { sid: SESSION });
    expect(await refusal(verify, own, call)).toBeUndefined();
  });
});

describe("grantVerifierFromEnvironment", () => {
  it("builds a verifier from GATEHOUSE_JWKS_URL and GATEHOUSE_GRANT_AUDIENCE", async () => {
    const verify = grantVerifierFromEnvironment({
      GATEHOUSE_JWKS_URL: jwksUrl,
      GATEHOUSE_GRANT_AUDIENCE: AUDIENCE,
    });
    const call = invokeCall(request("k19"));
    expect(await refusal(verify, await grantFor(call), call)).toBeUndefined();
  });

  it("binds a sidecar to the session GATEHOUSE_GRANT_SESSION names", async () => {
    const verify = grantVerifierFromEnvironment({
      GATEHOUSE_JWKS_URL: jwksUrl,
      GATEHOUSE_GRANT_AUDIENCE: AUDIENCE,
      GATEHOUSE_GRANT_SESSION: "0b7c-session-a",
    });
    const call = invokeCall(request("k20"));
    expect((await refusal(verify, await grantFor(call, { sid: "0b7c-session-b" }), call))?.kind).toBe(
      "forbidden",
    );
    expect(await refusal(verify, await grantFor(call, { sid: "0b7c-session-a" }), call)).toBeUndefined();
  });

  it("throws naming each missing variable", () => {
    expect(() => grantVerifierFromEnvironment({})).toThrow(
      /^GATEHOUSE_JWKS_URL is required: the operator sets it[^\n]*\nGATEHOUSE_GRANT_AUDIENCE is required: /,
    );
    expect(() => grantVerifierFromEnvironment({ GATEHOUSE_JWKS_URL: jwksUrl })).toThrow(
      /^GATEHOUSE_GRANT_AUDIENCE is required: the operator sets it on every provider container/,
    );
  });

  it("throws naming a variable that is set but wrong", () => {
    expect(() =>
      grantVerifierFromEnvironment({ GATEHOUSE_JWKS_URL: "not a url", GATEHOUSE_GRANT_AUDIENCE: AUDIENCE }),
    ).toThrow(/^GATEHOUSE_JWKS_URL is invalid \(must be the operator's JWKS URL/);
  });
});
