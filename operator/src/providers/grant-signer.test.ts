import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { canonicalDigest, type InvokeRequest, jwksGrantVerifier } from "@gatehouse/provider-sdk";
import { decodeJwt, decodeProtectedHeader, importJWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jwksOf, newGrantKey, type SigningKey, type StoredGrantKey } from "./grant-keys.ts";
import { grantSigner } from "./grant-signer.ts";

const PROVIDER = { namespace: "plant-a", name: "aps" };
const request: InvokeRequest = {
  executionId: "0123456789abcdef0123456789abcdef01234567",
  idempotencyKey: "gh1.0123456789abcdef0123456789abcdef01234567",
  capability: "aps.schedule.publish",
  arguments: { planId: "p-1", version: 3, note: "Ünïcode and 1e21" },
  subject: { user: "alice", groups: ["planners"] },
};

let key: StoredGrantKey;
let server: Server;
let jwksUrl: string;

beforeAll(async () => {
  key = await newGrantKey(new Date());
  server = createServer((_request, response) => response.end(JSON.stringify(jwksOf([key]))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function signer(ttlSeconds?: number) {
  return grantSigner({
    signingKey: async () => ({
      kid: key.kid,
      privateKey: (await importJWK(key.privateJwk, "EdDSA")) as SigningKey["privateKey"],
    }),
    ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
  });
}

describe("grantSigner", () => {
  it("signs an invoke grant the SDK's verifier accepts for exactly the body it serialized", async () => {
    const { body, grant } = await signer().signInvoke(PROVIDER, request);
    const verify = jwksGrantVerifier({ jwksUrl, audience: "plant-a/aps" });
    const parsed = JSON.parse(body) as InvokeRequest;
    await expect(verify(grant, { route: "invoke", body: parsed, request: parsed })).resolves.toBeUndefined();
  });

  it("puts the claims of DESIGN §5 in the grant, with argsDigest the RFC 8785 digest of the body", async () => {
    const { body, grant } = await signer(30).signInvoke(PROVIDER, request);
    expect(decodeProtectedHeader(grant)).toEqual({ alg: "EdDSA", kid: key.kid });
    const claims = decodeJwt(grant);
    expect(claims).toMatchObject({
      iss: "gatehouse",
      aud: "plant-a/aps",
      sub: "alice",
      cap: "aps.schedule.publish",
      idempotencyKey: request.idempotencyKey,
      argsDigest: canonicalDigest(JSON.parse(body)),
    });
    expect(claims.exp! - claims.iat!).toBe(30);
    expect(claims.jti).toMatch(new RegExp(`^${request.executionId}\\.[A-Za-z0-9_-]{16}$`));
  });

  it("names the call's session (sid) in every grant: its sidecar admits it, another session's refuses it", async () => {
    const { body, grant } = await signer().signInvoke(PROVIDER, request, "uid-a");
    expect(decodeJwt(grant).sid).toBe("uid-a");
    expect(decodeJwt(await signer().signStatus(PROVIDER, "k", "uid-a")).sid).toBe("uid-a");
    expect(decodeJwt(await signer().signTarget(PROVIDER, "plan", "p-1", "uid-a")).sid).toBe("uid-a");
    const parsed = JSON.parse(body) as InvokeRequest;
    const call = { route: "invoke", body: parsed, request: parsed } as const;
    const sidecarOf = (session: string) => jwksGrantVerifier({ jwksUrl, audience: "plant-a/aps", session });
    await expect(sidecarOf("uid-b")(grant, call)).rejects.toThrow(/not for this sidecar's session uid-b/);
    await expect(sidecarOf("uid-a")(grant, call)).resolves.toBeUndefined();
  });

  it("gives every call of the same execution its own jti, so a retry is not a replay", async () => {
    const first = decodeJwt((await signer().signInvoke(PROVIDER, request)).grant);
    const retry = decodeJwt((await signer().signInvoke(PROVIDER, request)).grant);
    expect(retry.idempotencyKey).toBe(first.idempotencyKey);
    expect(retry.jti).not.toBe(first.jti);
  });

  it("signs status and target grants without a body digest or subject", async () => {
    const verify = jwksGrantVerifier({ jwksUrl, audience: "plant-a/aps" });
    const status = await signer().signStatus(PROVIDER, request.idempotencyKey);
    const target = await signer().signTarget(PROVIDER, "plan", "p-1");
    expect(decodeJwt(status)).not.toHaveProperty("argsDigest");
    expect(decodeJwt(status)).not.toHaveProperty("sub");
    expect(decodeJwt(target)).toMatchObject({ target: "plan/p-1" });
    await expect(
      verify(status, { route: "status", idempotencyKey: request.idempotencyKey }),
    ).resolves.toBeUndefined();
    await expect(verify(target, { route: "target", kind: "plan", id: "p-1" })).resolves.toBeUndefined();
  });

  it("refuses a lifetime above 60 s", () => {
    expect(() => signer(61)).toThrow(/1 to 60 s, not 61/);
  });
});
