/**
 * The reference story end to end (DESIGN §1) on the real control plane, local node, Postgres, fake APS
 * and scripted model, through the real operator process.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import {
  decisionPatch,
  eventually,
  pendingApprovalOf,
  playReferenceStory,
  type StoryReport,
  verifyAudit,
} from "./story.ts";

let env: Environment;
let report: StoryReport;
const silent = { say: () => {}, command: () => {} };

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  report = await playReferenceStory(env, silent);
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

describe("the reference story", () => {
  it("moves the AgentSession through AwaitingApproval to Completed", () => {
    const phases = report.sessionPhases;
    expect(phases.at(-1)).toBe("Completed");
    expect(phases).toContain("AwaitingApproval");
    expect(phases.indexOf("AwaitingApproval")).toBeLessThan(phases.indexOf("Completed"));
  });

  it("moves the Approval from Pending to Succeeded", () => {
    expect(report.approvalPhases[0]).toBe("Pending");
    expect(report.approvalPhases.at(-1)).toBe("Succeeded");
  });

  it("publishes in the APS system exactly once, as alice", () => {
    const publishes = env.aps.publishes();
    expect(publishes).toHaveLength(1);
    expect(publishes[0]?.user).toBe("alice");
  });

  it("fills status.result with the agent's answer", () => {
    expect(report.result).toMatch(/publish/i);
  });

  it("records the execution in a hash-chained audit log that verifies", async () => {
    const audit = await verifyAudit(env);
    expect(audit.ok).toBe(true);
    const kinds = await env.pool.query<{ kind: string }>("SELECT kind FROM audit_log ORDER BY seq");
    expect(kinds.rows.map((r) => r.kind)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^execution\./)]),
    );
  });
});

describe("a decision from someone who is not an approver", () => {
  it("is refused by the API server; nothing executes and the Approval stays Pending", async () => {
    const name = "bob-approves";
    const session = {
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name, namespace: NAMESPACE },
      spec: {
        subject: { user: "alice" },
        model: { name: "scripted/reference-story" },
        messages: [{ text: "Push next week's production plan back by one day." }],
      },
    };
    const publishesBefore = env.aps.publishes().length;
    await env.kubectl.ok("alice", ["create", "-f", "-"], JSON.stringify(session));
    const uid = (
      await env.kubectl.ok("alice", ["get", "ags", name, "-n", NAMESPACE, "-o", "jsonpath={.metadata.uid}"])
    ).stdout;
    const approval = await pendingApprovalOf(env, uid);
    const before = await env.kubectl.json<{ metadata: { resourceVersion: string } }>("admin", [
      "get",
      "approval",
      approval.metadata.name,
      "-n",
      NAMESPACE,
    ]);

    const refused = await env.kubectl.run("bob", [
      "patch",
      "approval",
      approval.metadata.name,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      decisionPatch("bob", "Approve"),
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/decision-approver: bob is not an approver/);

    const current = await env.kubectl.json<{
      metadata: { resourceVersion: string };
      spec: { decisions: unknown[] };
      status?: { phase?: string };
    }>("admin", ["get", "approval", approval.metadata.name, "-n", NAMESPACE]);
    expect(current.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(current.spec.decisions).toEqual([]);
    expect(current.status?.phase).toBe("Pending");
    expect(env.aps.publishes()).toHaveLength(publishesBefore);
    const publishRows = await env.pool.query(
      "SELECT id FROM executions WHERE session_uid = $1 AND capability = 'aps.schedule.publish'",
      [uid],
    );
    expect(publishRows.rowCount).toBe(0);
    await env.kubectl.ok("alice", [
      "patch",
      "ags",
      name,
      "-n",
      NAMESPACE,
      "--type",
      "merge",
      "-p",
      '{"spec":{"cancel":true}}',
    ]);
    // Nobody waits for the decision any more: the operator cancels the Approval, and it stays unexecuted.
    const cancelled = await eventually("the Approval to be Cancelled", 60_000, async () => {
      const latest = await env.kubectl.json<{ status?: { phase?: string; execution?: unknown } }>("admin", [
        "get",
        "approval",
        approval.metadata.name,
        "-n",
        NAMESPACE,
      ]);
      return latest.status?.phase === "Cancelled" ? latest : undefined;
    });
    expect(cancelled.status?.execution).toBeUndefined();
    expect(env.aps.publishes()).toHaveLength(publishesBefore);
  });
});
