/**
 * The approver's kubectl plugin against the real control plane, operator, gateway,
 * Postgres, fake APS and scripted model: alice and carol list, approve and reject Approvals of alice's
 * sessions with `kubectl gatehouse`, bob is refused by admission, the transcript is read through the
 * gateway with the caller's own credential, and the audit chain verifies through the plugin. The
 * plugin runs as a real process — once through the control plane's kubectl, which finds it on PATH
 * as bin/kubectl-gatehouse, otherwise directly with the test's Node.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GROUP, VERSION } from "../../operator/src/api/kinds.ts";
import { TRANSCRIPT_READER_ROLE } from "../../operator/src/api/rbac.ts";
import {
  AgentSessionTranscript,
  GET_ANY_VERB,
  MAX_TRANSCRIPT_PAGE,
  transcriptPath,
} from "../../operator/src/api/transcripts-api.ts";
import { componentUsername } from "../../operator/src/api/well-known.ts";
import { decisionPatchOf, isUnappliedPatch } from "../../operator/src/cli/plugin/decide.ts";
import { loadKubeConfig } from "../../operator/src/kube/runtime/client.ts";
import { TRANSCRIPT_LOCK_CLASS } from "../../operator/src/store/transcripts.ts";
import { createClientCertificate, FRONT_PROXY_CLIENT_NAME } from "../cluster/src/index.ts";
import { clusterInfo } from "./cluster-info.ts";
import { approvalPast, DISPATCHING, getApproval } from "./core-approvals.ts";
import { type Environment, NAMESPACE, REPO_ROOT, startEnvironment } from "./environment.ts";
import { type RuntimeSession, startSession } from "./runtime-sessions.ts";
import { checkpointsReachHead, eventually, forgetEarlierCheckpoints, pendingApprovalOf } from "./story.ts";

const PLUGIN = join(REPO_ROOT, "operator/src/cli/kubectl-gatehouse.ts");
const MODEL = "scripted/reference-story";
const REASON = "press 1 is booked for maintenance on Tuesday";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let env: Environment;

function exec(file: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: REPO_ROOT, env: { ...process.env, ...extraEnv }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** `kubectl-gatehouse ARGS --context CONTEXT` run directly, with KUBECONFIG set as kubectl users have it. */
function plugin(context: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  return exec(process.execPath, [PLUGIN, ...args, "--context", context], {
    KUBECONFIG: env.cluster.kubeconfigPath,
    ...extraEnv,
  });
}

/** `kubectl gatehouse ARGS --context CONTEXT`: kubectl finds bin/kubectl-gatehouse on PATH. */
function throughKubectl(context: string, args: string[]): Promise<Run> {
  return exec(env.cluster.kubectlPath, ["gatehouse", ...args, "--context", context], {
    KUBECONFIG: env.cluster.kubeconfigPath,
    PATH: `${join(REPO_ROOT, "bin")}:${process.env.PATH}`,
  });
}

/** A kubeconfig whose user is ServiceAccount default/NAME (created if missing), by its token. */
async function serviceAccountKubeconfig(name: string): Promise<string> {
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: "default" } }),
  );
  const token = (await env.kubectl.ok("admin", ["create", "token", name, "-n", "default"])).stdout.trim();
  const cluster = JSON.parse(
    (await env.kubectl.ok("admin", ["config", "view", "--minify", "--raw", "-o", "jsonpath={.clusters[0]}"]))
      .stdout,
  ) as { name: string };
  const kubeconfig = join(mkdtempSync(join(tmpdir(), `${name}-`)), "kubeconfig");
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [cluster],
      users: [{ name, user: { token } }],
      contexts: [{ name, context: { cluster: cluster.name, user: name } }],
      "current-context": name,
    }),
    { mode: 0o600 },
  );
  return kubeconfig;
}

/** The API server's audit events whose line mentions `needle` (a quoted resource name), parsed as `T`. */
function auditEventsMentioning<T>(needle: string): T[] {
  return readFileSync(inject("cluster").auditLogPath, "utf8")
    .split("\n")
    .filter((line) => line.includes(needle))
    .map((line) => JSON.parse(line) as T);
}

/** The gateway's SubjectAccessReviews in the API server's audit log: for whom, which verb on which name, RBAC's answer. */
function gatewayAccessReviews(): Array<{ user: string; verb: string; name: string; allowed: boolean }> {
  const gateway = componentUsername("gateway");
  return auditEventsMentioning<{
    user: { username: string };
    requestObject?: { spec?: { user?: string; resourceAttributes?: { verb?: string; name?: string } } };
    responseObject?: { status?: { allowed?: boolean } };
  }>('"subjectaccessreviews"')
    .filter((event) => event.user.username === gateway && event.requestObject?.spec)
    .map((event) => ({
      user: event.requestObject?.spec?.user ?? "",
      verb: event.requestObject?.spec?.resourceAttributes?.verb ?? "",
      name: event.requestObject?.spec?.resourceAttributes?.name ?? "",
      allowed: event.responseObject?.status?.allowed === true,
    }));
}

/** The API server's audit events of `user`'s requests for the transcript `name`: RBAC's decision and the answer. */
function transcriptRequests(user: string, name: string): Array<{ decision?: string; code?: number }> {
  return auditEventsMentioning<{
    user: { username: string };
    objectRef?: { resource?: string; name?: string };
    annotations?: Record<string, string>;
    responseStatus?: { code?: number };
  }>('"agentsessiontranscripts"')
    .filter(
      (e) =>
        e.user.username === user &&
        e.objectRef?.resource === "agentsessiontranscripts" &&
        e.objectRef.name === name,
    )
    .map((e) => ({
      decision: e.annotations?.["authorization.k8s.io/decision"],
      code: e.responseStatus?.code,
    }));
}

/** GET `url` on the gateway's TLS listener directly, with `client`'s certificate if given. */
function direct(
  url: string,
  options: { client?: { cert: string; key: string }; headers?: Record<string, string> },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const call = request(
      url,
      {
        headers: options.headers ?? {},
        // The test checks the server's refusal, not its certificate (issued for the Service's name).
        rejectUnauthorized: false,
        ...(options.client
          ? { cert: readFileSync(options.client.cert), key: readFileSync(options.client.key) }
          : {}),
      },
      (response) => {
        let body = "";
        response.on("data", (chunk: Buffer) => {
          body += chunk.toString("utf8");
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    call.on("error", reject);
    call.end();
  });
}

/** Appends `count` agent events to the session's transcript, numbered after its last, under the store's lock. */
async function appendEvents(sessionUid: string, count: number): Promise<void> {
  const client = await env.pool.connect();
  try {
    await client.query("BEGIN");
    // The lock transcript appends take (store/transcripts.ts), so the live session's own appends wait.
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [TRANSCRIPT_LOCK_CLASS, sessionUid]);
    await client.query(
      `INSERT INTO session_events (session_uid, seq, source, kind, payload, at_us)
       SELECT $1, last.seq + n, 'agent', 'assistant_text', jsonb_build_object('text', 'paging event ' || n), $3
         FROM generate_series(1, $2::int) AS n,
              (SELECT COALESCE(MAX(seq), 0) AS seq FROM session_events WHERE session_uid = $1) AS last`,
      [sessionUid, count, Date.now() * 1000],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function proposedPublish(prefix: string): Promise<{ session: RuntimeSession; approval: string }> {
  const session = await startSession(env, prefix, MODEL);
  const approval = await pendingApprovalOf(env, session.uid);
  return { session, approval: approval.metadata.name };
}

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: { AUDIT_CHECKPOINT_INTERVAL_SECONDS: "1" } });
  await forgetEarlierCheckpoints(env.kubectl);
}, 900_000);

afterAll(async () => {
  await env?.stop();
});

describe("an Approval alice's session is waiting for", () => {
  let approved: { session: RuntimeSession; approval: string };

  beforeAll(async () => {
    approved = await proposedPublish("plugin-approve");
  }, 300_000);

  it("is listed by pending for alice, who may decide it as its requester", async () => {
    const run = await plugin("alice", ["pending", "-n", NAMESPACE]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^NAME\s+SESSION\s+CAPABILITY\s+REQUESTED BY\s+AGE\s+EXPIRES\s+VOTES\s+YOU$/);
    const row = rows.find((r) => r.startsWith(`${approved.approval} `));
    expect(row).toBeDefined();
    expect(row?.split(/\s{3,}/)).toEqual([
      approved.approval,
      approved.session.name,
      "aps.schedule.publish",
      "alice",
      expect.stringMatching(/^\d+[smh]/),
      expect.stringMatching(/^in \d/),
      "0/1",
      "yes",
    ]);
  });

  it("is listed through kubectl for carol, who may decide it as a member of the approvers group", async () => {
    const run = await throughKubectl("carol", ["pending", "-n", NAMESPACE, "-o", "json"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout) as {
      user: string;
      items: Array<{ name: string; requestedBy: string; you: { may: string } }>;
    };
    expect(listed.user).toBe("carol");
    expect(listed.items.find((i) => i.name === approved.approval)).toMatchObject({
      requestedBy: "alice",
      you: { may: "yes" },
    });
  });

  it("shows bob that he may not decide it", async () => {
    const run = await plugin("bob", ["pending", "-n", NAMESPACE, "-o", "json"]);
    const listed = JSON.parse(run.stdout) as { items: Array<{ name: string; you: { why: string } }> };
    expect(listed.items.find((i) => i.name === approved.approval)?.you.why).toBe("not an approver");
  });

  it("refuses bob's approval with the admission policy's message and a non-zero exit, changing nothing", async () => {
    const before = await getApproval(env, NAMESPACE, approved.approval);
    const run = await plugin("bob", ["approve", approved.approval, "-n", NAMESPACE]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/decision-approver: bob is not an approver of Approval/);
    const after = await getApproval(env, NAMESPACE, approved.approval);
    expect(after.spec.decisions).toEqual([]);
    expect(after.status?.phase).toBe("Pending");
    expect(before.spec.decisions).toEqual([]);
  });

  it("takes no flag that names the approver: such an attempt is a usage error", async () => {
    for (const flag of ["--approver=alice", "--as=alice", "--user=alice"]) {
      const run = await plugin("carol", ["approve", approved.approval, "-n", NAMESPACE, flag]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/Unknown option/);
    }
    expect((await getApproval(env, NAMESPACE, approved.approval)).spec.decisions).toEqual([]);
  });

  it("is guarded by the plugin's test op: a patch made from decisions that are not the current ones is refused", async () => {
    const stale = decisionPatchOf([{ approver: "alice", verdict: "Approve" }], {
      approver: "carol",
      verdict: "Approve",
    });
    const asCarol = loadKubeConfig(env.cluster.kubeconfigPath, "carol").makeApiClient(CustomObjectsApi);
    const refused = await asCarol
      .patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: NAMESPACE,
          plural: "approvals",
          name: approved.approval,
          body: stale,
        },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isUnappliedPatch(refused)).toBe(true);
    expect((await getApproval(env, NAMESPACE, approved.approval)).spec.decisions).toEqual([]);
  });

  it("is approved by carol in her own name, and the publish then runs exactly once", async () => {
    const publishesBefore = env.aps.publishes().filter((p) => p.user === "alice").length;
    const run = await plugin("carol", ["approve", approved.approval, "-n", NAMESPACE]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `approval.gatehouse.dev/${approved.approval}: Approve by carol appended as spec.decisions[0]`,
    );
    // It waits for the call to settle and prints the Executed condition.
    expect(run.stdout).toMatch(/^phase: Succeeded \(1\/1 approvals\) — Executed Succeeded: /m);

    const settled = await approvalPast(env, NAMESPACE, approved.approval, DISPATCHING);
    expect(settled.status?.phase).toBe("Succeeded");
    // The approver written is the one the API server authenticated (SelfSubjectReview), never a flag.
    expect(settled.spec.decisions).toEqual([{ approver: "carol", verdict: "Approve" }]);
    const executions = await env.pool.query<{ state: string }>(
      "SELECT state FROM executions WHERE session_uid = $1 AND capability = 'aps.schedule.publish'",
      [approved.session.uid],
    );
    expect(executions.rows.map((r) => r.state)).toEqual(["succeeded"]);
    expect(env.aps.publishes().filter((p) => p.user === "alice")).toHaveLength(publishesBefore + 1);
  });

  it("takes no second decision: carol's repeated approval sends nothing, reports her decision and the run, and exits 0", async () => {
    const before = await getApproval(env, NAMESPACE, approved.approval);
    const run = await plugin("carol", ["approve", approved.approval, "-n", NAMESPACE]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `approval.gatehouse.dev/${approved.approval}: Approve by carol is already recorded (spec.decisions[0]); nothing sent`,
    );
    expect(run.stdout).toMatch(
      /^phase: Succeeded \(1\/1 approvals\) — Executed Succeeded: .*; execution: succeeded$/m,
    );
    expect((await getApproval(env, NAMESPACE, approved.approval)).spec.decisions).toEqual(
      before.spec.decisions,
    );
  });
});

describe("a rejection", () => {
  let rejected: { session: RuntimeSession; approval: string };

  beforeAll(async () => {
    rejected = await proposedPublish("plugin-reject");
  }, 300_000);

  it("without --reason is a usage error that prints reject's usage and appends nothing", async () => {
    const run = await plugin("carol", ["reject", rejected.approval, "-n", NAMESPACE]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/reject needs --reason/);
    expect(run.stderr).toContain("Usage: kubectl gatehouse reject NAME --reason TEXT");
    expect((await getApproval(env, NAMESPACE, rejected.approval)).spec.decisions).toEqual([]);
  });

  it("with a reason lands in the Approval as carol's and rejects it", async () => {
    const run = await plugin("carol", ["reject", rejected.approval, "-n", NAMESPACE, "--reason", REASON]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^phase: Rejected \(0\/1 approvals\) — Decided \w+: /m);
    const approval = await getApproval(env, NAMESPACE, rejected.approval);
    expect(approval.spec.decisions).toEqual([{ approver: "carol", verdict: "Reject", reason: REASON }]);
    expect(approval.status?.phase).toBe("Rejected");
  });

  it("is not turned into an approval by carol: approve after her own reject exits 1 saying what is recorded", async () => {
    const run = await plugin("carol", ["approve", rejected.approval, "-n", NAMESPACE]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `kubectl-gatehouse: approve ${rejected.approval} refused: carol has already decided Approval ${rejected.approval}: Reject (spec.decisions[0], reason: ${REASON}); each user decides once`,
    );
    const approval = await getApproval(env, NAMESPACE, rejected.approval);
    expect(approval.spec.decisions).toEqual([{ approver: "carol", verdict: "Reject", reason: REASON }]);
  });

  it("reaches the session's transcript as 'rejected by carol: …', which alice reads with the plugin", async () => {
    const line = await eventually("the rejection in the transcript", 180_000, async () => {
      const run = await plugin("alice", ["transcript", rejected.session.name, "-n", NAMESPACE]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      return run.stdout.split("\n").find((l) => l.includes(`rejected by carol: ${REASON}`));
    });
    expect(line).toMatch(/\s(core)\s+approval_outcome\s+\S+ Rejected: rejected by carol: /);
    const executions = await env.pool.query(
      "SELECT id FROM executions WHERE session_uid = $1 AND capability = 'aps.schedule.publish'",
      [rejected.session.uid],
    );
    expect(executions.rowCount).toBe(0);
  });
});

describe("two approvers deciding at once", () => {
  it("lose no decision: each one appended is kept, a late one is refused, and the call runs once", async () => {
    const { session, approval } = await proposedPublish("plugin-race");
    const runs = await Promise.all(
      ["carol", "alice"].map(async (user) => ({
        user,
        run: await plugin(user, ["approve", approval, "-n", NAMESPACE, "--wait=false"]),
      })),
    );
    const settled = await approvalPast(env, NAMESPACE, approval, DISPATCHING);
    const appended = runs.filter((r) => r.run.code === 0).map((r) => r.user);
    expect(appended.length).toBeGreaterThan(0);
    expect(settled.spec.decisions.map((d) => d.approver).sort()).toEqual([...appended].sort());
    for (const { run } of runs.filter((r) => r.run.code !== 0)) {
      expect(run.stderr).toMatch(/decision-closed: Approval \S+ is \w+ and takes no more decisions/);
    }
    expect(settled.status?.phase).toBe("Succeeded");
    const executions = await env.pool.query<{ state: string }>(
      "SELECT state FROM executions WHERE session_uid = $1 AND capability = 'aps.schedule.publish'",
      [session.uid],
    );
    expect(executions.rows.map((r) => r.state)).toEqual(["succeeded"]);
  });
});

describe("the transcript through the API server (the aggregated transcripts API)", () => {
  let session: RuntimeSession;
  const path = () => transcriptPath(NAMESPACE, session.name);

  beforeAll(async () => {
    ({ session } = await proposedPublish("plugin-transcript"));
  }, 300_000);

  it("is read by the session's subject with the plugin and with kubectl get --raw, her token staying with the API server", async () => {
    const run = await throughKubectl("alice", ["transcript", session.name, "-n", NAMESPACE]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^AgentSession ${NAMESPACE}/${session.name} \\(uid ${session.uid}\\): \\d+ events$`, "m"),
    );
    expect(run.stdout).toMatch(/\sagent\s+tool_call\s+aps_schedule_publish\s/);
    const raw = AgentSessionTranscript.parse(
      JSON.parse((await env.kubectl.ok("alice", ["get", "--raw", path()])).stdout),
    );
    expect(raw.metadata).toMatchObject({ name: session.name, namespace: NAMESPACE, uid: session.uid });
    expect(raw.events.map((e) => e.seq)).toEqual(raw.events.map((_, i) => i + 1));
    // The gateway saw the front proxy and alice's name, never a bearer token: nothing on it takes one.
    const log = readFileSync(env.gateway.logPath, "utf8");
    expect(log).toMatch(/"user":"alice","verb":"get".*"msg":"transcript read"/);
  });

  it("is refused to bob by the gateway: a session user, let through by the API server, who is not the session's subject", async () => {
    const run = await env.kubectl.run("bob", ["get", "--raw", path()]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      `User "bob" may read only the transcripts of sessions whose subject they are; reading another's needs the verb ${GET_ANY_VERB}`,
    );
    // The gateway's SubjectAccessReviews for him, in the API server's audit log: get yes, get-any no.
    expect(gatewayAccessReviews().filter((r) => r.user === "bob" && r.name === session.name)).toEqual([
      { user: "bob", verb: "get", name: session.name, allowed: true },
      { user: "bob", verb: GET_ANY_VERB, name: session.name, allowed: false },
    ]);
  });

  it("is refused to carol, an approver, until the platform binds gatehouse-transcript-reader to her", async () => {
    const refused = await env.kubectl.run("carol", ["get", "--raw", path()]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `User "carol" cannot get resource "agentsessiontranscripts" in API group "transcripts.gatehouse.dev" in the namespace "${NAMESPACE}"`,
    );
    await env.kubectl.ok("admin", [
      "create",
      "rolebinding",
      "carol-transcripts",
      "-n",
      NAMESPACE,
      `--clusterrole=${TRANSCRIPT_READER_ROLE}`,
      "--user=carol",
    ]);
    try {
      const run = await eventually("carol's new binding to take effect", 30_000, async () => {
        const attempt = await plugin("carol", ["transcript", session.name, "-n", NAMESPACE, "-o", "json"]);
        return attempt.code === 0 ? attempt : undefined;
      });
      expect(AgentSessionTranscript.parse(JSON.parse(run.stdout)).metadata.uid).toBe(session.uid);
    } finally {
      await env.kubectl.ok("admin", ["delete", "rolebinding", "carol-transcripts", "-n", NAMESPACE]);
    }
  });

  it("is refused to an identity holding only the built-in view role, by the API server's authorization, which the audit log records", async () => {
    const user = "system:serviceaccount:default:plugin-viewer";
    const kubeconfig = await serviceAccountKubeconfig("plugin-viewer");
    await env.kubectl.ok("admin", [
      "create",
      "rolebinding",
      "plugin-viewer-view",
      "-n",
      NAMESPACE,
      "--clusterrole=view",
      `--serviceaccount=default:plugin-viewer`,
    ]);
    try {
      // view reads the session itself (the read fragment aggregates into it), not its transcript.
      const sessionRead = await exec(env.cluster.kubectlPath, [
        "get",
        "agentsession",
        session.name,
        "-n",
        NAMESPACE,
        "--kubeconfig",
        kubeconfig,
      ]);
      expect(sessionRead.code).toBe(0);
      const run = await exec(process.execPath, [
        PLUGIN,
        "transcript",
        session.name,
        "-n",
        NAMESPACE,
        "--kubeconfig",
        kubeconfig,
      ]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `the API server answered 403: agentsessiontranscripts.transcripts.gatehouse.dev "${session.name}" is forbidden: User "${user}" cannot get resource`,
      );
      // RBAC's `forbid` for get on the transcript, recorded before anything reached the gateway.
      expect(transcriptRequests(user, session.name)).toEqual([{ decision: "forbid", code: 403 }]);
      expect(gatewayAccessReviews().filter((r) => r.user === user)).toEqual([]);
    } finally {
      await env.kubectl.ok("admin", ["delete", "rolebinding", "plugin-viewer-view", "-n", NAMESPACE]);
    }
  });

  describe("sent to the gateway directly, not through the API server", () => {
    const pkiDir = () => join(env.cluster.runDir, "pki");
    const url = () => `${env.gateway.transcriptsApiUrl}${path()}`;

    it("is refused without a client certificate, whatever X-Remote-* headers it forges", async () => {
      const plain = await direct(url(), {});
      expect(plain.status).toBe(401);
      expect(plain.body).toContain("only the API server's front proxy may call this API");
      const forged = await direct(url(), {
        headers: { "X-Remote-User": "alice", "X-Remote-Group": "system:masters" },
      });
      expect(forged.status).toBe(401);
      expect(forged.body).toContain("only the API server's front proxy may call this API");
    });

    it("is refused with a certificate of the cluster's client CA, or of the front proxy's CA with another name", async () => {
      const clientCa = await createClientCertificate(
        join(pkiDir(), "test-clients", "client-ca"),
        { caCert: join(pkiDir(), "ca.crt"), caKey: join(pkiDir(), "ca.key") },
        FRONT_PROXY_CLIENT_NAME,
      );
      const wrongCa = await direct(url(), { client: clientCa, headers: { "X-Remote-User": "alice" } });
      expect(wrongCa.status).toBe(401);
      const frontProxyCa = {
        caCert: join(pkiDir(), "front-proxy-ca.crt"),
        caKey: join(pkiDir(), "front-proxy-ca.key"),
      };
      const otherName = await createClientCertificate(
        join(pkiDir(), "test-clients", "front-proxy-ca"),
        frontProxyCa,
        "not-the-proxy",
      );
      const wrongName = await direct(url(), { client: otherName, headers: { "X-Remote-User": "alice" } });
      expect(wrongName.status).toBe(401);
      expect(wrongName.body).toContain(
        'client certificate CN \\"not-the-proxy\\" is not an allowed front proxy',
      );
      // The control: the front proxy's own name and CA get through, so the refusals above are the certificates'.
      const proxy = await createClientCertificate(
        join(pkiDir(), "test-clients", "front-proxy-ca"),
        frontProxyCa,
        FRONT_PROXY_CLIENT_NAME,
      );
      const allowed = await direct(url(), { client: proxy, headers: { "X-Remote-User": "alice" } });
      expect(allowed.status).toBe(200);
    });
  });

  it("pages a 10,000-event transcript limit events at a time, each page from where the continue token left off", async () => {
    await appendEvents(session.uid, 10_000);
    const first = AgentSessionTranscript.parse(
      JSON.parse((await env.kubectl.ok("alice", ["get", "--raw", `${path()}?limit=3`])).stdout),
    );
    expect(first.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    const token = first.page.continue ?? "";
    const second = AgentSessionTranscript.parse(
      JSON.parse(
        (
          await env.kubectl.ok("alice", [
            "get",
            "--raw",
            `${path()}?limit=3&continue=${encodeURIComponent(token)}`,
          ])
        ).stdout,
      ),
    );
    expect(second.events.map((e) => e.seq)).toEqual([4, 5, 6]);
    const tooMany = await env.kubectl.run("alice", [
      "get",
      "--raw",
      `${path()}?limit=${MAX_TRANSCRIPT_PAGE + 1}`,
    ]);
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.stderr).toContain("invalid query: limit");
    // The plugin reads every page (at most MAX_TRANSCRIPT_PAGE events each) and loses none.
    const run = await plugin("alice", ["transcript", session.name, "-n", NAMESPACE, "-o", "json"]);
    expect(run.code).toBe(0);
    const all = AgentSessionTranscript.parse(JSON.parse(run.stdout));
    expect(all.events.length).toBeGreaterThanOrEqual(10_000);
    expect(all.events.map((e) => e.seq)).toEqual(all.events.map((_, i) => i + 1));
    const reads = readFileSync(env.gateway.logPath, "utf8")
      .split("\n")
      .filter((l) => l.includes('"msg":"transcript read"') && l.includes(`"name":"${session.name}"`));
    expect(Math.max(...reads.map((l) => (JSON.parse(l) as { events: number }).events))).toBeLessThanOrEqual(
      MAX_TRANSCRIPT_PAGE,
    );
  });
});

describe("audit verify", () => {
  it("runs gatehouse-audit verify against the database and the ConfigMap's checkpoints and their signatures", async () => {
    await checkpointsReachHead(env);
    const run = await plugin("admin", ["audit", "verify"], { DATABASE_URL: env.databaseUrl });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^ConfigMap gatehouse-system\/gatehouse-audit-checkpoints: (\d+) checkpoints \(seq \d+\.\.\d+\), \1 signed, 1 witness keys/m,
    );
    expect(run.stdout).toMatch(/^audit chain intact: \d+ records from seq 1/m);
    expect(run.stdout).toMatch(
      /\(ConfigMap gatehouse-system\/gatehouse-audit-checkpoints\): ok — .*; signed by key /,
    );
  });
});

describe("an approval whose call goes Stale at dispatch", () => {
  /** Sets spec.disabled of ProviderInstance aps and waits until the operator reports it (Ready). */
  async function setApsDisabled(disabled: boolean): Promise<void> {
    await env.kubectl.ok("admin", [
      "patch",
      "providerinstance",
      "aps",
      "-n",
      NAMESPACE,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { disabled: disabled ? true : null } }),
    ]);
    await eventually(
      `ProviderInstance aps to be Ready=${disabled ? "False Disabled" : "True"}`,
      120_000,
      async () => {
        const provider = await env.kubectl.json<{
          status?: { conditions?: Array<{ type: string; status: string; reason: string }> };
        }>("admin", ["get", "providerinstance", "aps", "-n", NAMESPACE]);
        const ready = provider.status?.conditions?.find((c) => c.type === "Ready");
        return (disabled ? ready?.reason === "Disabled" : ready?.status === "True") ? true : undefined;
      },
    );
  }

  afterAll(async () => {
    await setApsDisabled(false);
  }, 180_000);

  it("reports the Stale phase with the Executed condition's reason and message, and exits 1", async () => {
    const { approval } = await proposedPublish("plugin-stale");
    await setApsDisabled(true);
    const run = await plugin("carol", ["approve", approval, "-n", NAMESPACE]);
    expect(run.stdout).toContain(
      `approval.gatehouse.dev/${approval}: Approve by carol appended as spec.decisions[0]`,
    );
    expect(run.stdout).toMatch(
      /^phase: Stale \(1\/1 approvals\) — Executed Disabled: aps\.schedule\.publish or its provider is disabled$/m,
    );
    expect(run.stderr).toBe(
      `kubectl-gatehouse: Approval ${approval} is Stale: the call you approved did not run or did not succeed\n`,
    );
    expect(run.code).toBe(1);
    expect((await getApproval(env, NAMESPACE, approval)).status?.phase).toBe("Stale");
  });
});
