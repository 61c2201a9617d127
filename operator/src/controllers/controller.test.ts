import { createServer } from "node:net";
import { Writable } from "node:stream";
import { ApiException } from "@kubernetes/client-node";
import pg from "pg";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { Controller } from "./controller.ts";

/** A pino logger at debug level whose JSON lines land in `lines`. */
function capturingLogger(lines: Array<{ level: number; msg: string }>) {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return pino({ level: "debug" }, sink);
}

describe("a controller", () => {
  it("treats a create refused in a namespace being deleted as nothing to do, logged at debug level", async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const body = JSON.stringify({
      kind: "Status",
      status: "Failure",
      reason: "Forbidden",
      code: 403,
      message:
        'networkpolicies "gatehouse-agent" is forbidden: unable to create new content in namespace doomed because it is being terminated',
      details: {
        causes: [{ reason: "NamespaceTerminating", message: "namespace doomed is being terminated" }],
      },
    });
    let reconciled!: () => void;
    const called = new Promise<void>((resolve) => {
      reconciled = resolve;
    });
    const controller = new Controller(
      "agentsession",
      async () => {
        reconciled();
        throw new ApiException(403, "Forbidden", body, {});
      },
      capturingLogger(lines),
    );
    controller.start();
    controller.enqueue({ metadata: { namespace: "doomed", name: "s" } });
    await called;
    await controller.stop();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.map((l) => l.msg)).toContain("namespace is being deleted; nothing to do");
  });

  it("retries a reconcile that met an unreachable database, logging a warning that names it, not an error", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const pool = new pg.Pool({ connectionString: `postgres://x@127.0.0.1:${port}/x` });
    const refused = await pool.query("SELECT 1").catch((e: unknown) => e);
    await pool.end();
    const lines: Array<{ level: number; msg: string }> = [];
    let attempts = 0;
    let succeeded!: () => void;
    const done = new Promise<void>((resolve) => {
      succeeded = resolve;
    });
    const controller = new Controller(
      "approval",
      async () => {
        attempts++;
        if (attempts <= 3) throw refused;
        succeeded();
        return undefined;
      },
      capturingLogger(lines),
    );
    controller.start();
    controller.enqueue({ metadata: { namespace: "plant-a", name: "apr-1" } });
    await done;
    await controller.stop();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.msg === "database unavailable; retrying within 2 s")).toHaveLength(3);
  });
});
