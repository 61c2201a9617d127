import { createServer } from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { GatehouseError } from "../core/errors.ts";
import { isDatabaseUnavailable } from "./unavailable.ts";

/** A port on 127.0.0.1 nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  return await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function serverError(code: string, message = "server error"): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, "error");
  error.code = code;
  return error;
}

describe("isDatabaseUnavailable", () => {
  it("is true for the error a pool gives when nothing listens on the server's port", async () => {
    const pool = new pg.Pool({ connectionString: `postgres://x@127.0.0.1:${await closedPort()}/x` });
    const error = await pool.query("SELECT 1").catch((e: unknown) => e);
    await pool.end();
    expect((error as { code?: string }).code).toBe("ECONNREFUSED");
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it("is true for the server's shutdown, connection-exception and timeout codes", () => {
    for (const code of ["57P01", "57P02", "57P03", "53300", "08006", "08001", "08P01", "57014", "25P03"]) {
      expect(isDatabaseUnavailable(serverError(code)), code).toBe(true);
    }
  });

  it("is true for pg's and pg-pool's messages of a lost or timed-out connection", () => {
    expect(isDatabaseUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isDatabaseUnavailable(new Error("timeout exceeded when trying to connect"))).toBe(true);
    expect(isDatabaseUnavailable(new Error("Query read timeout"))).toBe(true);
  });

  it("is true through a GatehouseError's cause and an AggregateError's errors", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED ::1:5432"), {
      code: "ECONNREFUSED",
      syscall: "connect",
    });
    expect(isDatabaseUnavailable(new GatehouseError("unavailable", "x", { cause: refused }))).toBe(true);
    expect(isDatabaseUnavailable(new AggregateError([refused], "all addresses refused"))).toBe(true);
  });

  it("is false for what retrying cannot fix: a constraint, a permission, a syntax error", () => {
    for (const code of ["23505", "42501", "42601", "P0001", "40001"]) {
      expect(isDatabaseUnavailable(serverError(code)), code).toBe(false);
    }
  });

  it("is false for the API server being unreachable (fetch failed wraps the same socket error)", async () => {
    const error = await fetch(`http://127.0.0.1:${await closedPort()}/api`).catch((e: unknown) => e);
    expect((error as Error).message).toBe("fetch failed");
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it("is false for non-errors", () => {
    for (const value of [undefined, null, "ECONNREFUSED", 57, { code: "ECONNREFUSED" }]) {
      expect(isDatabaseUnavailable(value)).toBe(false);
    }
  });
});
