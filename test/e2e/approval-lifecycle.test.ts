/**
 * Who decided is evidence (DESIGN §6 "Approval lifecycle"), on the real control plane and Postgres:
 * every Approval's request, decisions and end are in the audit chain, readable after the Approval and
 * its session are gone. Each test is named after the hole it closes (an expiry's record and Event are
 * checked by dispatch.test.ts, which waits out a short ttl anyway). The last one deletes the example
 * namespace, so it runs last.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVAL_FINALIZER } from "../../operator/src/api/well-known.ts";
import type { ChainedRecord } from "../../operator/src/core/ports.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { patchStatusAsOperator } from "../cluster-tests/api-fixtures.ts";
import { clusterInfo } from "./cluster-info.ts";
import {
  type ComponentReplica,
  type Environment,
  NAMESPACE,
  REPO_ROOT,
  startEnvironment,
} from "./environment.ts";
import {
  createReferenceSession,
  decisionPatch,
  eventually,
  pendingApprovalOf,
  runGatehouseAudit,
} from "./story.ts";

const DECISION_BINDING = "gatehouse-approval-decide";

interface ApprovalObject {
  metadata: { name: string; finalizers?: string[] };
  spec: { executionId: string; decisions: Array<{ approver: string; verdict: string }> };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

let env: Environment;
/** The controller replica running now (tests restart it). */
let controller: ComponentReplica;
const suffix = Date.now().toString(36);

/** alice asks for the reference story's publish; resolves with the session uid and its Pending Approval. */
async function proposedPublish(name: string): Promise<{ sessionUid: string; approval: ApprovalObject }> {
  const sessionUid = await createReferenceSession(env, name);
  const approval = (await pendingApprovalOf(env, sessionUid)) as unknown as ApprovalObject;
  return { sessionUid, approval };
}

async function getApproval(name: string): Promise<ApprovalObject | undefined> {
  const run = await env.kubectl.run("admin", ["get", "approval", name, "-n", NAMESPACE, "-o", "json"]);
  return run.code === 0 ? (JSON.parse(run.stdout) as ApprovalObject) : undefined;
}

async function approvalInPhase(name: string, phase: string, timeoutMs = 240_000): Promise<ApprovalObject> {
  return await eventually(`Approval ${name} to be ${phase}`, timeoutMs, async () => {
    const current = await getApproval(name);
    return current?.status?.phase === phase ? current : undefined;
  });
}

/** `user` appends a decision in `approver`'s name (their own, unless forging) to Approval `approval`. */
function appendDecision(
  user: string,
  approval: string,
  approver: string,
  verdict: "Approve" | "Reject",
  reason?: string,
) {
  return env.kubectl.run(user, [
    "patch",
    "approval",
    approval,
    "-n",
    NAMESPACE,
    "--type",
    "json",
    "-p",
    decisionPatch(approver, verdict, reason),
  ]);
}

async function decide(user: string, approval: string, verdict: "Approve" | "Reject", reason?: string) {
  const run = await appendDecision(user, approval, user, verdict, reason);
  if (run.code !== 0) throw new Error(`${run.command} failed: ${run.stderr}`);
}

/** Appends the decision, retried until the API server takes it (admission follows binding changes). */
async function decisionTaken(user: string, approval: string, approver: string): Promise<void> {
  await eventually(`the API server to take ${user}'s decision as ${approver}`, 60_000, async () =>
    (await appendDecision(user, approval, approver, "Approve")).code === 0 ? true : undefined,
  );
}

/** The chain's records of one call, read back as Core reads them (AuditLog.recordsOf). */
async function chainOf(executionId: string): Promise<ChainedRecord[]> {
  return await createPostgresAuditLog(env.pool).recordsOf(executionId);
}

function kindsOf(records: ChainedRecord[]): string[] {
  return records.map((r) => r.kind);
}

async function eventsOf(approval: string, reason: string) {
  const list = await env.kubectl.json<{ items: Array<{ type: string; reason: string; message: string }> }>(
    "admin",
    [
      "get",
      "events",
      "-n",
      NAMESPACE,
      "--field-selector",
      `involvedObject.name=${approval},reason=${reason}`,
    ],
  );
  return list.items;
}

async function restoreAdmission(): Promise<void> {
  await env.kubectl.ok("admin", [
    "apply",
    "--server-side",
    "--force-conflicts",
    "-f",
    join(REPO_ROOT, "crds", "admission-policies.yaml"),
  ]);
}

/** `gatehouse-audit lifecycle` against the environment's database and cluster, as admin. */
function lifecycleCheck() {
  return runGatehouseAudit(env, [
    "lifecycle",
    "--kubeconfig",
    env.cluster.kubeconfigPath,
    "--context",
    "admin",
  ]);
}

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  controller = env.controller;
}, 600_000);

afterAll(async () => {
  if (env) await restoreAdmission().catch(() => {});
  await env?.stop();
});

describe("an Approval's lifecycle in the audit chain", () => {
  it("still names who approved a write after the session and its Approval are deleted", async () => {
    const { approval } = await proposedPublish(`lifecycle-story-${suffix}`);
    const name = approval.metadata.name;
    expect(approval.metadata.finalizers).toContain(APPROVAL_FINALIZER);
    await decide("alice", name, "Approve", "checked the shifted plan");
    await approvalInPhase(name, "Succeeded");
    await env.kubectl.ok("admin", ["delete", "ags", `lifecycle-story-${suffix}`, "-n", NAMESPACE]);
    await eventually(`Approval ${name} to be gone`, 120_000, async () =>
      (await getApproval(name)) === undefined ? true : undefined,
    );

    const chain = await chainOf(approval.spec.executionId);
    expect(kindsOf(chain)).toEqual([
      "approval.requested",
      "approval.decided",
      "approval.approved",
      "execution.started",
      "execution.finished",
    ]);
    const [requested, decided, approved, started] = chain;
    expect(requested?.actor).toBe("alice");
    expect(decided).toMatchObject({
      actor: "alice",
      outcome: "success",
      payload: { approver: "alice", verdict: "Approve", reason: "checked the shifted plan", counted: true },
    });
    expect(approved?.payload).toMatchObject({ phase: "Approved", approvedBy: ["alice"] });
    expect(started?.payload.approvalRecord).toEqual({ seq: approved?.seq, hash: approved?.hash });

    const shown = await runGatehouseAudit(env, ["show", "--approval", name]);
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("alice");
    expect(shown.stdout).toMatch(/Approve/);
    expect(shown.stdout).toMatch(/succeeded/);
  });

  it("records a rejection with its approver and reason, and says so in an Event", async () => {
    const { approval } = await proposedPublish(`lifecycle-reject-${suffix}`);
    const name = approval.metadata.name;
    await decide("alice", name, "Reject", "not this week");
    await approvalInPhase(name, "Rejected");
    const chain = await chainOf(approval.spec.executionId);
    expect(kindsOf(chain)).toEqual(["approval.requested", "approval.decided", "approval.rejected"]);
    expect(chain[2]?.payload).toMatchObject({ phase: "Rejected", rejectedBy: "alice" });
    const events = await eventually("a Rejected Event", 60_000, async () => {
      const found = await eventsOf(name, "Rejected");
      return found.length > 0 ? found : undefined;
    });
    expect(events[0]?.message).toContain("Rejected by alice");
  });

  it("counts no forged decision and runs nothing while the decision binding is deleted, and never counts it after", async () => {
    const { approval } = await proposedPublish(`lifecycle-forged-${suffix}`);
    const name = approval.metadata.name;
    const publishes = env.aps.publishes().length;
    await env.kubectl.ok("admin", ["delete", "validatingadmissionpolicybinding", DECISION_BINDING]);
    try {
      // bob (a planner, who may patch Approvals) appends a decision in alice's name.
      await decisionTaken("bob", name, "alice");
      const held = await eventually("the DecisionRulesEnforced=False condition", 90_000, async () => {
        const current = await getApproval(name);
        const condition = current?.status?.conditions?.find((c) => c.type === "DecisionRulesEnforced");
        return condition?.status === "False" ? { current, condition } : undefined;
      });
      expect(held.condition.reason).toBe("DecisionRulesNotEnforced");
      expect(held.condition.message).toContain(DECISION_BINDING);
      expect(held.current?.status?.phase).toBe("Pending");
      const decided = await eventually("the forged decision's record", 60_000, async () => {
        const found = (await chainOf(approval.spec.executionId)).find((r) => r.kind === "approval.decided");
        return found;
      });
      expect(decided).toMatchObject({ actor: "alice", payload: { counted: false, rulesEnforced: false } });
    } finally {
      await restoreAdmission();
    }
    // The binding is back: the forged decision still does not count, and nothing ran.
    await eventually("the DecisionRulesEnforced=True condition", 90_000, async () => {
      const condition = (await getApproval(name))?.status?.conditions?.find(
        (c) => c.type === "DecisionRulesEnforced",
      );
      return condition?.status === "True" ? true : undefined;
    });
    expect((await getApproval(name))?.status?.phase).toBe("Pending");
    expect(env.aps.publishes().length).toBe(publishes);
    // carol, in the approvers group, decides for real.
    await decisionTaken("carol", name, "carol");
    await approvalInPhase(name, "Succeeded");
    const approved = (await chainOf(approval.spec.executionId)).find((r) => r.kind === "approval.approved");
    expect(approved?.payload).toMatchObject({ approvedBy: ["carol"] });
    expect(env.aps.publishes().length).toBe(publishes + 1);
  });

  it("backfills the approval record of an Approval an earlier version approved, before running it", async () => {
    const { approval } = await proposedPublish(`lifecycle-upgrade-${suffix}`);
    const name = approval.metadata.name;
    await controller.kill("SIGKILL");
    // What an earlier version leaves: alice's decision, the phase Approved, no finalizer, no records.
    await decide("alice", name, "Approve");
    await patchStatusAsOperator(env.cluster.kubeconfigPath, "approvals", NAMESPACE, name, {
      phase: "Approved",
      approvals: 1,
      observedDecisions: 1,
    });
    await env.kubectl.ok("gatehouse-controller", [
      "patch",
      "approval",
      name,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      JSON.stringify([{ op: "remove", path: "/metadata/finalizers" }]),
    ]);
    expect(kindsOf(await chainOf(approval.spec.executionId))).toEqual(["approval.requested"]);
    controller = await env.startReplica("controller", "after-upgrade");
    const done = await approvalInPhase(name, "Succeeded");
    expect(done.metadata.finalizers).toContain(APPROVAL_FINALIZER);
    const chain = await chainOf(approval.spec.executionId);
    expect(kindsOf(chain)).toEqual([
      "approval.requested",
      "approval.approved",
      "execution.started",
      "execution.finished",
    ]);
    expect(chain[1]?.payload).toMatchObject({ backfilled: true, approvedBy: ["alice"] });
    expect(chain[2]?.payload.approvalRecord).toEqual({ seq: chain[1]?.seq, hash: chain[1]?.hash });
    // Every request of this file so far has its end in the chain.
    const lifecycle = await lifecycleCheck();
    expect(lifecycle.stdout).toMatch(/^every Approval request has an end in the chain$/m);
    expect(lifecycle.code).toBe(0);
  });

  it("records the end of a Pending Approval whose namespace was deleted while the controller was down", async () => {
    const { approval } = await proposedPublish(`lifecycle-namespace-${suffix}`);
    const name = approval.metadata.name;
    const { approval: released } = await proposedPublish(`lifecycle-released-${suffix}`);
    await controller.kill("SIGKILL");
    // The escape when no controller will run again: a cluster admin removes one finalizer by hand.
    await env.kubectl.ok("admin", [
      "patch",
      "approval",
      released.metadata.name,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      JSON.stringify([{ op: "remove", path: "/metadata/finalizers" }]),
    ]);
    await env.kubectl.ok("admin", ["delete", "namespace", NAMESPACE, "--wait=false"]);
    // The namespace controller deletes the Approval; its finalizer keeps it until a controller is back.
    await eventually("the Approval to be marked for deletion", 60_000, async () => {
      const run = await env.kubectl.run("admin", ["get", "approval", name, "-n", NAMESPACE, "-o", "json"]);
      const current =
        run.code === 0 ? (JSON.parse(run.stdout) as { metadata: { deletionTimestamp?: string } }) : undefined;
      return current?.metadata.deletionTimestamp ? true : undefined;
    });
    controller = await env.startReplica("controller", "after-namespace-delete");
    await eventually(`namespace ${NAMESPACE} to be gone`, 240_000, async () => {
      const run = await env.kubectl.run("admin", ["get", "namespace", NAMESPACE]);
      return run.code !== 0 ? true : undefined;
    });
    const chain = await chainOf(approval.spec.executionId);
    expect(kindsOf(chain)).toEqual(["approval.requested", "approval.cancelled"]);
    expect(chain[1]?.payload).toMatchObject({ reason: "ApprovalDeleted", phase: "Cancelled" });

    // The chain shows the one released by hand as a request without an end, and only that one.
    expect(kindsOf(await chainOf(released.spec.executionId))).toEqual(["approval.requested"]);
    const lifecycle = await lifecycleCheck();
    expect(lifecycle.stderr).toBe("");
    expect(lifecycle.code).toBe(1);
    expect(lifecycle.stdout).toContain(
      `Approval ${NAMESPACE}/${released.metadata.name} (execution ${released.spec.executionId}) has no end in the chain and is gone from the cluster`,
    );
    expect(lifecycle.stdout).not.toContain(name);
    expect(lifecycle.stdout).toMatch(/^1 Approval request without an end/m);
    // The approvers' plugin runs the same check.
    const plugin = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(
        join(REPO_ROOT, "bin", "kubectl-gatehouse"),
        ["audit", "lifecycle", "--kubeconfig", env.cluster.kubeconfigPath, "--context", "admin"],
        { env: { ...process.env, DATABASE_URL: env.databaseUrl } },
        (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
      );
    });
    expect(plugin.code).toBe(1);
    expect(plugin.stdout).toBe(lifecycle.stdout);
  });
});
