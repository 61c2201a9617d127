/**
 * Decisions that reach an Approval after it was decided (DESIGN §2), on the real control plane. The
 * admission policy refuses them, so the path is shown with its binding removed for the duration (as
 * when the policy is not installed): admin appends decisions to a Succeeded and a Rejected Approval.
 * Each changes nothing — phase, execution, provider effects — and is reported exactly once: a Warning
 * Event `DecisionIgnored` naming the approver and the phase, and an audit record. Finally the binding
 * is restored and the API server refuses late decisions again.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, REPO_ROOT, startEnvironment } from "./environment.ts";
import { createReferenceSession, decisionPatch, eventually, pendingApprovalOf } from "./story.ts";

const DECISION_BINDING = "gatehouse-approval-decide";

interface ApprovalObject {
  metadata: { name: string; resourceVersion: string };
  spec: { decisions: Array<{ approver: string; verdict: string }>; sessionRef: { uid: string } };
  status?: {
    phase?: string;
    observedDecisions?: number;
    execution?: { id: string; state: string; finishedAt?: string };
  };
}

interface EventObject {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

let env: Environment;
let succeeded: { approval: ApprovalObject; sessionUid: string };
let rejected: { approval: ApprovalObject; sessionUid: string };

async function getApproval(name: string): Promise<ApprovalObject> {
  return await env.kubectl.json<ApprovalObject>("admin", ["get", "approval", name, "-n", NAMESPACE]);
}

/** alice starts a reference-story session and decides its publish Approval; resolves once it left Pending. */
async function decidedApproval(
  name: string,
  verdict: "Approve" | "Reject",
  phase: string,
): Promise<{ approval: ApprovalObject; sessionUid: string }> {
  const sessionUid = await createReferenceSession(env, name);
  const pending = await pendingApprovalOf(env, sessionUid);
  await env.kubectl.ok("alice", [
    "patch",
    "approval",
    pending.metadata.name,
    "-n",
    NAMESPACE,
    "--type",
    "json",
    "-p",
    decisionPatch("alice", verdict),
  ]);
  const approval = await eventually(`Approval ${pending.metadata.name} to be ${phase}`, 240_000, async () => {
    const current = await getApproval(pending.metadata.name);
    return current.status?.phase === phase ? current : undefined;
  });
  return { approval, sessionUid };
}

/** Appends a decision as admin; retried until the API server has dropped the removed binding. */
async function appendAsAdmin(approval: string, approver: string, verdict: "Approve" | "Reject") {
  await eventually("admission to let admin append a late decision", 60_000, async () => {
    const run = await env.kubectl.run("admin", [
      "patch",
      "approval",
      approval,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      decisionPatch(approver, verdict),
    ]);
    if (run.code === 0) return true;
    if (!run.stderr.includes("decision-closed")) throw new Error(run.stderr);
    return undefined;
  });
}

async function ignoredEvents(approval: string): Promise<EventObject[]> {
  const list = await env.kubectl.json<{ items: EventObject[] }>("admin", [
    "get",
    "events",
    "-n",
    NAMESPACE,
    "--field-selector",
    `involvedObject.name=${approval},reason=DecisionIgnored`,
  ]);
  return list.items;
}

/** The audit records of ignored decisions of a session: approver, verdict and phase from the hashed bytes. */
async function ignoredAuditRecords(sessionUid: string) {
  const rows = await env.pool.query<{ actor: string; outcome: string; canonical: Buffer }>(
    "SELECT actor, outcome, canonical FROM audit_log WHERE kind = 'approval.decision_ignored' AND session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return rows.rows.map((r) => {
    const { payload } = JSON.parse(r.canonical.toString("utf8")) as {
      payload: { approval: string; index: number; approver: string; verdict: string; phase: string };
    };
    return { actor: r.actor, outcome: r.outcome, ...payload };
  });
}

async function publishExecutions(sessionUid: string) {
  const rows = await env.pool.query<{ id: string; state: string }>(
    "SELECT id, state FROM executions WHERE session_uid = $1 AND capability = 'aps.schedule.publish' ORDER BY id",
    [sessionUid],
  );
  return rows.rows;
}

async function metricsText(): Promise<string> {
  return await (await fetch(`${env.controller.healthUrl}/metrics`)).text();
}

async function restoreBinding(): Promise<void> {
  await env.kubectl.ok("admin", [
    "apply",
    "--server-side",
    "-f",
    join(REPO_ROOT, "crds", "admission-policies.yaml"),
  ]);
}

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  const suffix = Date.now().toString(36);
  succeeded = await decidedApproval(`late-succeeded-${suffix}`, "Approve", "Succeeded");
  rejected = await decidedApproval(`late-rejected-${suffix}`, "Reject", "Rejected");
  await env.kubectl.ok("admin", ["delete", "validatingadmissionpolicybinding", DECISION_BINDING]);
}, 600_000);

afterAll(async () => {
  if (env) await restoreBinding().catch(() => {});
  await env?.stop();
});

describe("a decision appended to a decided Approval", () => {
  it("on a Succeeded Approval changes nothing and is reported as DecisionIgnored, naming approver and phase", async () => {
    const name = succeeded.approval.metadata.name;
    const publishes = env.aps.publishes().length;
    const executions = await publishExecutions(succeeded.sessionUid);
    await appendAsAdmin(name, "carol", "Reject");

    const events = await eventually("a DecisionIgnored Event", 60_000, async () => {
      const found = await ignoredEvents(name);
      return found.length > 0 ? found : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "Warning", involvedObject: { kind: "Approval", name } });
    expect(events[0]?.message).toContain("Reject by carol");
    expect(events[0]?.message).toContain("already Succeeded");

    expect(await ignoredAuditRecords(succeeded.sessionUid)).toEqual([
      {
        actor: "gatehouse",
        outcome: "failure",
        approval: `${NAMESPACE}/${name}`,
        index: 1,
        approver: "carol",
        verdict: "Reject",
        phase: "Succeeded",
      },
    ]);
    const after = await getApproval(name);
    expect(after.status?.phase).toBe("Succeeded");
    expect(after.status?.execution).toEqual(succeeded.approval.status?.execution);
    expect(after.status?.observedDecisions).toBe(2);
    expect(await publishExecutions(succeeded.sessionUid)).toEqual(executions);
    expect(env.aps.publishes()).toHaveLength(publishes);
  });

  it("on a Rejected Approval executes nothing, and is reported as DecisionIgnored", async () => {
    const name = rejected.approval.metadata.name;
    const publishes = env.aps.publishes().length;
    await appendAsAdmin(name, "carol", "Approve");

    const events = await eventually("a DecisionIgnored Event", 60_000, async () => {
      const found = await ignoredEvents(name);
      return found.length > 0 ? found : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.type).toBe("Warning");
    expect(events[0]?.message).toContain("Approve by carol");
    expect(events[0]?.message).toContain("already Rejected");
    expect(await ignoredAuditRecords(rejected.sessionUid)).toEqual([
      expect.objectContaining({ approver: "carol", verdict: "Approve", phase: "Rejected" }),
    ]);
    const after = await getApproval(name);
    expect(after.status?.phase).toBe("Rejected");
    expect(after.status?.execution).toBeUndefined();
    expect(await publishExecutions(rejected.sessionUid)).toEqual([]);
    expect(env.aps.publishes()).toHaveLength(publishes);
  });

  it("is reported once: a further late decision adds its own record, not a second one for the first", async () => {
    const name = rejected.approval.metadata.name;
    await appendAsAdmin(name, "bob", "Approve");
    const events = await eventually("a second DecisionIgnored Event", 60_000, async () => {
      const found = await ignoredEvents(name);
      return found.length >= 2 ? found : undefined;
    });
    // Give a duplicate the chance to appear: the operator has reconciled once more after bob's decision.
    await eventually("the Approval to count bob's decision", 30_000, async () =>
      (await getApproval(name)).status?.observedDecisions === 3 ? true : undefined,
    );
    expect(events.map((e) => e.message.match(/by (\w+)/)?.[1]).sort()).toEqual(["bob", "carol"]);
    expect((await ignoredEvents(name)).length).toBe(2);
    expect((await ignoredAuditRecords(rejected.sessionUid)).map((r) => r.approver)).toEqual(["carol", "bob"]);
    expect((await getApproval(name)).status?.phase).toBe("Rejected");
  });

  it("leaves the decision-time metric observed once per Approval", async () => {
    const text = await metricsText();
    expect(text).toMatch(/^gatehouse_approval_decision_seconds_count\{outcome="Approved"\} 1$/m);
    expect(text).toMatch(/^gatehouse_approval_decision_seconds_count\{outcome="Rejected"\} 1$/m);
  });

  it("is refused by the API server again once the binding is restored", async () => {
    await restoreBinding();
    const name = succeeded.approval.metadata.name;
    const before = await getApproval(name);
    const patch = (extra: string[]) =>
      env.kubectl.run("admin", [
        "patch",
        "approval",
        name,
        "-n",
        NAMESPACE,
        "--type",
        "json",
        "-p",
        decisionPatch("dave", "Approve"),
        ...extra,
      ]);
    // Server-side dry runs pass admission without persisting: wait until the binding is in force.
    await eventually("admission to refuse late decisions again", 60_000, async () =>
      (await patch(["--dry-run=server"])).code !== 0 ? true : undefined,
    );
    const refused = await patch([]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/decision-closed: Approval \S+ is Succeeded/);
    expect((await getApproval(name)).spec.decisions).toEqual(before.spec.decisions);
  });
});
