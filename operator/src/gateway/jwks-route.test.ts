import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { jwksOf, newGrantKey } from "../providers/grant-keys.ts";
import { jwksRoute } from "./jwks-route.ts";

describe("GET /v1/grants/jwks", () => {
  it("serves the current public keys as application/jwk-set+json with a short max-age", async () => {
    let keys = [await newGrantKey(new Date())];
    const app = Fastify();
    await app.register(jwksRoute, { jwks: () => jwksOf(keys) });
    const first = await app.inject({ method: "GET", url: "/v1/grants/jwks" });
    expect(first.statusCode).toBe(200);
    expect(first.headers["content-type"]).toBe("application/jwk-set+json");
    expect(first.headers["cache-control"]).toBe("public, max-age=30");
    expect(first.json()).toEqual(jwksOf(keys));
    keys = [...keys, await newGrantKey(new Date())];
    const second = await app.inject({ method: "GET", url: "/v1/grants/jwks" });
    expect((second.json() as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid)).toEqual(
      keys.map((k) => k.kid),
    );
    await app.close();
  });
});
