import { createServer } from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { GatehouseError } from "../core/errors.ts";
import { errorReply } from "./error-reply.ts";
import { SessionRateLimited } from "./session-limits.ts";

/** A port on 127.0.0.1 nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  return await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

describe("errorReply", () => {
  it("answers a request that met an unreachable database 503 unavailable, which the agent retries", async () => {
    const pool = new pg.Pool({ connectionString: `postgres://x@127.0.0.1:${await closedPort()}/x` });
    const error = await pool.query("SELECT 1").catch((e: unknown) => e);
    await pool.end();
    expect(errorReply(error)).toMatchObject({ code: 503, body: { kind: "unavailable" }, log: "warn" });
  });

  it("answers a typed error by its kind and a refused body 400, logging neither", () => {
    expect(errorReply(new GatehouseError("forbidden", "no"))).toEqual({
      code: 403,
      body: { kind: "forbidden", message: "no" },
    });
    const refused = z.object({ a: z.string() }).safeParse({}).error;
    expect(errorReply(refused)).toMatchObject({ code: 400, body: { kind: "invalid_arguments" } });
  });

  it("answers anything else 500 without its details, logged as an error", () => {
    expect(errorReply(new Error("secret detail"))).toEqual({
      code: 500,
      body: { kind: "internal", message: "internal error" },
      log: "error",
    });
  });

  it("answers fastify's refusal of a body too large 413, naming the limit, not 500", () => {
    const tooLarge = Object.assign(new Error("Request body is too large"), { statusCode: 413 });
    expect(errorReply(tooLarge)).toEqual({
      code: 413,
      body: { kind: "invalid_arguments", message: "Request body is too large" },
    });
  });

  it("answers a session over its limits 429 with Retry-After", () => {
    expect(errorReply(new SessionRateLimited("too many", 3))).toEqual({
      code: 429,
      body: { kind: "unavailable", message: "too many" },
      headers: { "retry-after": "3" },
    });
  });
});
