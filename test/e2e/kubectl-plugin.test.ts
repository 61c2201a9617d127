/**
 * The approver's kubectl plugin (issue 10 §3) against the real control plane, operator, gateway,
 * Postgres, fake APS and scripted model: alice and carol list, approve and reject Approvals of alice's
 * sessions with `kubectl gatehouse`, bob is refused by admission, the transcript is read through the
 * gateway with the caller's own credential, and the audit chain verifies through the plugin. The
 * plugin runs as a real process — once through the control plane's kubectl, which finds it on PATH
 * as bin/kubectl-gatehouse, otherwise directly with the test's Node.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GROUP, VERSION } from "../../operator/src/api/kinds.ts";
import { decisionPatchOf, isUnappliedPatch } from "../../operator/src/cli/plugin/decide.ts";
import { loadKubeConfig } from "../../operator/src/kube/client.ts";
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
      const run = await plugin("alice", ["transcript", rejected.session.name, "-n", NAMESPACE], {
        GATEHOUSE_GATEWAY_URL: env.gatewayUrl,
      });
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

describe("the transcript through the gateway", () => {
  it("is refused to an authenticated identity that may not get the session", async () => {
    // A ServiceAccount token: the API server authenticates it, RBAC grants it nothing in plant-a.
    await env.kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: "plugin-outsider", namespace: "default" },
      }),
    );
    const token = (
      await env.kubectl.ok("admin", ["create", "token", "plugin-outsider", "-n", "default"])
    ).stdout.trim();
    const cluster = (
      await env.kubectl.ok("admin", ["config", "view", "--minify", "--raw", "-o", "jsonpath={.clusters[0]}"])
    ).stdout;
    const kubeconfig = join(mkdtempSync(join(tmpdir(), "plugin-outsider-")), "kubeconfig");
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [JSON.parse(cluster)],
        users: [{ name: "outsider", user: { token } }],
        contexts: [{ name: "outsider", context: { cluster: JSON.parse(cluster).name, user: "outsider" } }],
        "current-context": "outsider",
      }),
      { mode: 0o600 },
    );
    const sessions = await env.kubectl.json<{ items: Array<{ metadata: { name: string } }> }>("admin", [
      "get",
      "agentsessions",
      "-n",
      NAMESPACE,
    ]);
    const name = sessions.items[0]?.metadata.name ?? "none";
    const run = await exec(
      process.execPath,
      [PLUGIN, "transcript", name, "-n", NAMESPACE, "--kubeconfig", kubeconfig, "--context", "outsider"],
      { GATEHOUSE_GATEWAY_URL: env.gatewayUrl },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /the gateway answered 403: system:serviceaccount:default:plugin-outsider may not get agentsessions\//,
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
