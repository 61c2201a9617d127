/**
 * Controller replicas on the real control plane (DESIGN §3): only the holder of Lease
 * `gatehouse-system/gatehouse-controller` reconciles; when it is killed the next replica takes over only
 * after the Lease lapsed; a replica killed in the middle of reconciles leaves neither duplicates nor
 * lost work; a replica that loses the Lease exits. Who did what is read from the API server's audit
 * log, where each replica's User-Agent names it. The tests run in order and share one environment.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LEADER_LEASE } from "../../operator/src/api/rbac.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { clusterInfo } from "./cluster-info.ts";
import { leaderIs } from "./core-replicas.ts";
import { type ComponentReplica, type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

interface AuditEvent {
  stage: string;
  verb: string;
  userAgent?: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
}

const auditLogPath = inject("cluster").auditLogPath;
const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/**
 * A request that changes cluster state. Reviews (SelfSubjectReview, TokenReview, SubjectAccessReview)
 * are `create`s that persist nothing: the admission guard asks who the controller is on every replica.
 */
function isWrite(e: AuditEvent): boolean {
  return WRITES.has(e.verb) && !(e.objectRef?.resource ?? "").endsWith("reviews");
}

/**
 * Completed requests of the audit log, in the order the API server received them; with `started`, also
 * those still open (a watch completes only when it ends, 5–10 min after it began).
 */
function auditEvents(started = false): AuditEvent[] {
  return readFileSync(auditLogPath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.stage === "ResponseComplete" || (started && e.stage === "ResponseStarted"))
    .sort((a, b) => a.requestReceivedTimestamp.localeCompare(b.requestReceivedTimestamp));
}

/** Requests sent by one replica (its User-Agent carries `(<name>_<random>)`). */
function by(replica: ComponentReplica, events: AuditEvent[]): AuditEvent[] {
  return events.filter((e) => e.userAgent?.includes(`(${replica.name}_`));
}

const isLeaseWrite = (e: AuditEvent) =>
  isWrite(e) && e.objectRef?.resource === "leases" && e.objectRef.name === LEADER_LEASE;

let env: Environment;
let standby: ComponentReplica;
let successor: ComponentReplica;
let capabilitySeq = 0;

/** Namespace of the probe Capabilities (never Ready, so not in the story's plant-a). */
const PROBES = `replicas-${Date.now().toString(36)}`;

/** Creates a Capability whose provider does not exist; any leader gives it Ready=False at once. */
async function createProbeCapability(): Promise<string> {
  const name = `probe-${Date.now().toString(36)}-${capabilitySeq++}`;
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "Capability",
      metadata: { name, namespace: PROBES },
      spec: { id: "probe.read", providerRef: { name: "no-such-provider" } },
    }),
  );
  return name;
}

async function reconciledCapability(name: string): Promise<void> {
  await eventually(`Capability ${name} to get a Ready condition`, 90_000, async () => {
    const capability = await env.kubectl.json<{ status?: { conditions?: Array<{ type: string }> } }>(
      "admin",
      ["get", "capability", name, "-n", PROBES],
    );
    return capability.status?.conditions?.some((c) => c.type === "Ready") ? true : undefined;
  });
}

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  await env.kubectl.ok("admin", ["create", "namespace", PROBES]);
}, 600_000);

afterAll(async () => {
  await env?.kubectl.run("admin", ["delete", "namespace", PROBES, "--wait=false"]);
  await env?.stop();
});

describe("controller replicas", () => {
  it("reconcile only on the holder of the Lease", async () => {
    standby = await env.startReplica("controller", "controller-1");
    // A replica is ready once its caches are synced, before it starts electing (programs/controller.ts):
    // the probe must wait for its first read of the Lease, or the leader may be done before it asks.
    await eventually("the standby to read the Lease", 60_000, async () =>
      by(standby, auditEvents()).some((e) => e.verb === "get" && e.objectRef?.resource === "leases")
        ? true
        : undefined,
    );
    const since = new Date().toISOString();
    const name = await createProbeCapability();
    await reconciledCapability(name);
    const events = auditEvents();
    const leaderWrites = by(env.controller, events).filter(
      (e) => isWrite(e) && e.requestReceivedTimestamp >= since,
    );
    expect(leaderWrites.some((e) => e.objectRef?.name === name && e.objectRef.subresource === "status")).toBe(
      true,
    );
    // Over its whole life so far the standby listed, watched and read the Lease, and wrote nothing.
    expect(by(standby, events).filter(isWrite)).toEqual([]);
  });

  it("hand over to the standby only after the killed leader's Lease lapsed", async () => {
    await env.controller.kill("SIGKILL");
    const name = await createProbeCapability();
    await reconciledCapability(name);
    const events = auditEvents();
    const lastRenewal = by(env.controller, events).filter(isLeaseWrite).at(-1);
    const takeover = by(standby, events).find(isLeaseWrite);
    const standbyWrites = by(standby, events).filter((e) => isWrite(e) && !isLeaseWrite(e));
    const firstReconcile = standbyWrites.find((e) => e.objectRef?.name === name);
    expect(lastRenewal && takeover && firstReconcile).toBeTruthy();
    // Order, not timing: the old holder's last renewal, then the takeover, then any reconcile.
    expect(lastRenewal!.requestReceivedTimestamp < takeover!.requestReceivedTimestamp).toBe(true);
    expect(standbyWrites.every((e) => e.requestReceivedTimestamp > takeover!.requestReceivedTimestamp)).toBe(
      true,
    );
    expect(takeover!.requestReceivedTimestamp < firstReconcile!.requestReceivedTimestamp).toBe(true);
    const lease = await env.kubectl.json<{ spec: { holderIdentity: string; leaseTransitions: number } }>(
      "admin",
      ["get", "lease", LEADER_LEASE, "-n", OPERATOR_NAMESPACE],
    );
    expect(lease.spec.holderIdentity.startsWith("controller-1_")).toBe(true);
    expect(lease.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
  });

  it("leave no duplicate pod and lose no session when the leader is killed in the middle of reconciles", async () => {
    // Two replicas, as the controller's Deployment runs them: the standby takes over.
    successor = await env.startReplica("controller", "controller-2");
    const names = ["one", "two", "three", "four"].map((n) => `restart-${n}-${Date.now().toString(36)}`);
    await env.kubectl.ok(
      "alice",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: names.map((name) => ({
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "AgentSession",
          metadata: { name, namespace: NAMESPACE },
          spec: {
            subject: { user: "alice" },
            model: { name: "scripted/answer" },
            messages: [{ text: "Does next week's plan need a change?" }],
          },
        })),
      }),
    );
    // Kill as soon as the first agent pod exists: the other sessions are mid-reconcile or queued.
    await eventually("a first agent pod", 60_000, async () => {
      const pods = await env.kubectl.json<{ items: Array<{ metadata: { name: string } }> }>("admin", [
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        "app.kubernetes.io/name=gatehouse-agent",
      ]);
      return pods.items.some((p) => names.some((n) => p.metadata.name.startsWith(n))) ? true : undefined;
    });
    await standby.kill("SIGKILL");

    const attempts = new Map<string, number>();
    for (const name of names) {
      const session = await eventually(`session ${name} to complete`, 180_000, async () => {
        const s = await env.kubectl.json<{ status?: { phase?: string; result?: string; attempt?: number } }>(
          "admin",
          ["get", "agentsession", name, "-n", NAMESPACE],
        );
        return s.status?.phase === "Completed" ? s : undefined;
      });
      expect(session.status?.result).toBeTruthy();
      attempts.set(name, session.status?.attempt ?? 1);
    }
    // Each pod name was created once (a retry after the failover takes the next attempt's name), and
    // there were exactly as many pods as the session counts attempts.
    const created = auditEvents()
      .filter(
        (e) =>
          e.verb === "create" &&
          e.objectRef?.resource === "pods" &&
          !e.objectRef.subresource && // not the scheduler's pods/binding
          e.responseStatus?.code === 201,
      )
      .map((e) => e.objectRef?.name ?? "");
    for (const name of names) {
      const pods = created.filter((pod) => pod.startsWith(`${name}-agent-`));
      expect(new Set(pods).size).toBe(pods.length);
      expect(pods.sort()).toEqual(
        Array.from({ length: attempts.get(name) ?? 1 }, (_, i) => `${name}-agent-${i + 1}`).sort(),
      );
    }
  });

  it("exit when another holder takes the Lease", async () => {
    const micro = new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
    await env.kubectl.ok("admin", [
      "patch",
      "lease",
      LEADER_LEASE,
      "-n",
      OPERATOR_NAMESPACE,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { holderIdentity: "intruder", renewTime: micro, leaseDurationSeconds: 3600 } }),
    ]);
    try {
      expect(await successor.exited).toMatch(/exited \(1\)/);
      expect(readFileSync(successor.logPath, "utf8")).toMatch(/could not renew the leader lease in time/);
    } finally {
      // Leave the Lease free for whoever runs next on this cluster, whatever happened here: an intruder's
      // hour-long Lease would keep every later environment's controller from leading.
      await env.kubectl.ok("admin", ["delete", "lease", LEADER_LEASE, "-n", OPERATOR_NAMESPACE]);
    }
  });
});

describe("a controller and a gateway serving listed namespaces only (WATCH_NAMESPACES)", () => {
  let controller: ComponentReplica;
  let gateway: ComponentReplica;
  beforeAll(async () => {
    controller = await env.startReplica("controller", "served-only", { WATCH_NAMESPACES: NAMESPACE });
    await leaderIs(env, controller);
    // The only gateway agent pods reach from now on: the environment's own watches every namespace.
    gateway = await env.startReplica("gateway", "served-only-gateway", { WATCH_NAMESPACES: NAMESPACE });
    await env.gateway.kill("SIGTERM");
  }, 300_000);
  afterAll(async () => {
    await gateway?.kill("SIGTERM");
    // The last controller of this file: the sessions go while it runs (their finalizers), so the files
    // after this one find the namespace empty.
    await env.kubectl.run("admin", ["delete", "agentsessions", "--all", "-n", NAMESPACE, "--timeout=60s"]);
    await controller?.kill("SIGTERM");
  });

  it("leaves a session elsewhere Pending with Progressing=False NamespaceNotServed, and creates no pod", async () => {
    const name = `unserved-${Date.now().toString(36)}`;
    await env.kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "gatehouse.dev/v1alpha1",
        kind: "AgentSession",
        metadata: { name, namespace: PROBES },
        spec: {
          // Admission: the subject is the creating user.
          subject: { user: "admin" },
          model: { name: "scripted/answer" },
          messages: [{ text: "hello" }],
        },
      }),
    );
    const session = await eventually(`session ${name} to say NamespaceNotServed`, 60_000, async () => {
      const s = await env.kubectl.json<{
        status?: {
          phase?: string;
          conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
        };
      }>("admin", ["get", "agentsession", name, "-n", PROBES]);
      return s.status?.conditions?.some((c) => c.reason === "NamespaceNotServed") ? s : undefined;
    });
    expect(session.status?.phase).toBe("Pending");
    const condition = session.status?.conditions?.find((c) => c.type === "Progressing");
    expect(condition).toMatchObject({ status: "False", reason: "NamespaceNotServed" });
    expect(condition?.message).toContain(`not in ${PROBES}`);
    const pods = await env.kubectl.json<{ items: unknown[] }>("admin", ["get", "pods", "-n", PROBES]);
    expect(pods.items).toEqual([]);
    await env.kubectl.ok("admin", ["delete", "agentsession", name, "-n", PROBES, "--timeout=60s"]);
  });

  it("leaves a ProviderInstance elsewhere Ready=False NamespaceNotServed, and applies no workload for it", async () => {
    const name = `unserved-${Date.now().toString(36)}`;
    await env.kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "gatehouse.dev/v1alpha1",
        kind: "ProviderInstance",
        metadata: { name, namespace: PROBES },
        spec: { type: "fixture", image: "gatehouse/provider-fixture:dev", config: {} },
      }),
    );
    const provider = await eventually(`provider ${name} to say NamespaceNotServed`, 60_000, async () => {
      const p = await env.kubectl.json<{
        status?: {
          endpoints?: string[];
          conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
        };
      }>("admin", ["get", "providerinstance", name, "-n", PROBES]);
      return p.status?.conditions?.some((c) => c.reason === "NamespaceNotServed") ? p : undefined;
    });
    const ready = provider.status?.conditions?.find((c) => c.type === "Ready");
    expect(ready).toMatchObject({ status: "False", reason: "NamespaceNotServed" });
    expect(ready?.message).toContain(`not in ${PROBES}`);
    expect(provider.status?.endpoints).toEqual([]);
    for (const kind of ["deployments", "services", "networkpolicies"]) {
      const objects = await env.kubectl.json<{ items: unknown[] }>("admin", ["get", kind, "-n", PROBES]);
      expect(objects.items, kind).toEqual([]);
    }
    await env.kubectl.ok("admin", ["delete", "providerinstance", name, "-n", PROBES, "--timeout=60s"]);
  });

  it("run a session in the served namespace to completion, listing and watching pods and EndpointSlices only there", async () => {
    const since = new Date().toISOString();
    const name = `served-${Date.now().toString(36)}`;
    await env.kubectl.ok(
      "alice",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "gatehouse.dev/v1alpha1",
        kind: "AgentSession",
        metadata: { name, namespace: NAMESPACE },
        spec: {
          subject: { user: "alice" },
          model: { name: "scripted/answer" },
          messages: [{ text: "Does next week's plan need a change?" }],
        },
      }),
    );
    const session = await eventually(`session ${name} to complete`, 180_000, async () => {
      const s = await env.kubectl.json<{ status?: { phase?: string; result?: string } }>("admin", [
        "get",
        "agentsession",
        name,
        "-n",
        NAMESPACE,
      ]);
      return s.status?.phase === "Completed" ? s : undefined;
    });
    expect(session.status?.result).toBeTruthy();
    const events = auditEvents(true);
    // The confined gateway authenticated the session's agent pod (a TokenReview per new token).
    expect(
      by(gateway, events).some(
        (e) =>
          e.verb === "create" &&
          e.objectRef?.resource === "tokenreviews" &&
          e.requestReceivedTimestamp >= since,
      ),
    ).toBe(true);
    for (const replica of [controller, gateway]) {
      const reads = by(replica, events).filter(
        (e) =>
          ["list", "watch"].includes(e.verb) &&
          ["pods", "endpointslices"].includes(e.objectRef?.resource ?? ""),
      );
      expect(new Set(reads.map((e) => `${e.verb} ${e.objectRef?.resource}`)), replica.name).toEqual(
        new Set(["list pods", "watch pods", "list endpointslices", "watch endpointslices"]),
      );
      expect(
        reads
          .filter((e) => e.objectRef?.namespace !== NAMESPACE)
          .map((e) => `${e.verb} ${e.objectRef?.resource}`),
        `${replica.name}'s pod and EndpointSlice reads outside ${NAMESPACE}`,
      ).toEqual([]);
    }
  });
});

describe("a replica given a database login the audit triggers do not bind, or another component's", () => {
  it("exits before serving when DATABASE_URL is a superuser's, naming the variable and the fix", async () => {
    const start = env.startReplica("controller", "as-superuser", { DATABASE_URL: env.databaseUrl });
    await expect(start).rejects.toThrow(/exited \(1\)/);
    await expect(start).rejects.toThrow(
      /DATABASE_URL's login \S+ is a superuser, whom the audit triggers do not bind/,
    );
  });

  it("exits before serving when DATABASE_URL's login may SET ROLE gatehouse_owner", async () => {
    const database = new URL(env.databaseUrl).pathname.slice(1);
    const login = `${database}_ownerish`;
    await env.pool.query(
      `CREATE ROLE ${login} LOGIN PASSWORD 'x' IN ROLE gatehouse_owner, gatehouse_controller`,
    );
    // The migrate program grants CONNECT to its own logins only; this one is made by hand.
    await env.pool.query(`GRANT CONNECT ON DATABASE ${database} TO ${login}`);
    try {
      const url = new URL(env.databaseUrl);
      url.username = login;
      url.password = "x";
      const start = env.startReplica("controller", "as-owner", { DATABASE_URL: url.toString() });
      await expect(start).rejects.toThrow(
        new RegExp(`DATABASE_URL's login ${login} may SET ROLE gatehouse_owner`),
      );
    } finally {
      await env.pool.query(`DROP OWNED BY ${login}`);
      await env.pool.query(`DROP ROLE ${login}`);
    }
  });

  it("exits before serving when a gateway is given the controller's login, naming the role", async () => {
    const start = env.startReplica("gateway", "as-controller", { DATABASE_URL: env.runtimeUrls.controller });
    await expect(start).rejects.toThrow(/exited \(1\)/);
    await expect(start).rejects.toThrow(/is not a member of gatehouse_gateway/);
  });
});
