/**
 * `gatehouse-audit show --approval NAME` against a real Postgres: one Approval's history read back
 * from the chain alone (no session, no Approval object), in every namespace or one, and its exit codes;
 * and `kubectl gatehouse audit show NAME`, which runs it.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { executionIdentity } from "../../operator/src/core/execution-identity.ts";
import type { AuditEntry } from "../../operator/src/core/ports.ts";
import { readUnrequestedDispatches } from "../../operator/src/store/approval-records.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const CLI = join(import.meta.dirname, "../../operator/src/cli/gatehouse-audit.ts");
const PLUGIN = join(import.meta.dirname, "../../operator/src/cli/kubectl-gatehouse.ts");

function gatehouseAudit(args: string[], databaseUrl: string | undefined, cli = CLI) {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  if (databaseUrl !== undefined) env.DATABASE_URL = databaseUrl;
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [cli, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

const SESSION_UID = "5e55a0a0-1111-4222-8333-444455556666";
const identity = executionIdentity({
  sessionUid: SESSION_UID,
  turn: 2,
  position: 0,
  capability: "aps.schedule.publish",
  argumentsDigest: "d".repeat(64),
});
const NAME = identity.approvalName;
/** An Approval name of another execution, which rows under ours name. */
const OTHER = `apr-${"e".repeat(20)}`;
const UNREQUESTED = executionIdentity({
  sessionUid: SESSION_UID,
  turn: 9,
  position: 0,
  capability: "aps.schedule.publish",
  argumentsDigest: "9".repeat(64),
});
const APPROVAL = `team-a/${NAME}`;
const T0 = 1_750_000_000_000_000;

let db: FreshDatabase;
let at = 0;

/** An entry of this call's execution (or `executionId`'s), one second after the previous one. */
function entry(
  kind: string,
  actor: string,
  outcome: AuditEntry["outcome"],
  payload: AuditEntry["payload"],
  executionId = identity.executionId,
): AuditEntry {
  at += 1;
  return {
    kind,
    actor,
    ...(outcome ? { outcome } : {}),
    sessionUid: SESSION_UID,
    executionId,
    atMicros: T0 + at * 1_000_000,
    payload,
  };
}

beforeAll(async () => {
  db = await freshDatabase();
  const log = createPostgresAuditLog(db.operator);
  // A neighbour whose execution id differs from ours in the 20th hex digit: not our Approval.
  const neighbour = `${identity.executionId.slice(0, 19)}${identity.executionId[19] === "0" ? "1" : "0"}${"0".repeat(20)}`;
  await log.appendBatch([
    entry(
      "approval.requested",
      "eve",
      "pending",
      { approval: `team-a/apr-${neighbour.slice(0, 20)}` },
      neighbour,
    ),
    entry("approval.requested", "alice", "pending", {
      session: "team-a/weekly-publish",
      approval: APPROVAL,
      capability: "aps.schedule.publish",
      argumentsDigest: "d".repeat(64),
      target: { kind: "Schedule", id: "s-42", version: "7" },
      approvers: { users: ["bob", "carol"], groups: ["schedulers"] },
      requiredApprovals: 1,
      expiresAt: "2025-06-16T16:00:00Z",
    }),
    entry("approval.decided", "mallory", "failure", {
      approval: APPROVAL,
      index: 0,
      approver: "mallory",
      verdict: "Approve",
      counted: false,
      ignoredReason: "mallory is not a listed approver",
      rulesEnforced: true,
    }),
    entry("approval.decided", "bob", "success", {
      approval: APPROVAL,
      index: 1,
      approver: "bob",
      verdict: "Approve",
      reason: "checked the schedule",
      counted: true,
      rulesEnforced: true,
    }),
  ]);
  const [approved] = await log.appendBatch([
    entry("approval.approved", "gatehouse", "success", {
      approval: APPROVAL,
      phase: "Approved",
      reason: "Approved",
      message: "approved by bob",
      decisions: [{ index: 1, approver: "bob", verdict: "Approve" }],
      approvedBy: ["bob"],
    }),
  ]);
  await log.appendBatch([
    entry("execution.started", "alice", "pending", {
      approval: APPROVAL,
      capability: "aps.schedule.publish",
      provider: "team-a/aps",
      argumentsDigest: "d".repeat(64),
      idempotencyKey: identity.idempotencyKey,
      approvalRecord: { seq: approved?.seq ?? 0, hash: approved?.hash ?? "" },
    }),
    entry("execution.finished", "alice", "success", {
      state: "succeeded",
      attempts: 1,
      resultDigest: "c".repeat(64),
      evidence: { system: "aps", reference: "publication-977" },
    }),
    entry("approval.decision_ignored", "gatehouse", "failure", {
      approval: APPROVAL,
      index: 2,
      approver: "carol",
      verdict: "Reject",
      phase: "Succeeded",
    }),
    // The same name in another namespace, written by an earlier version: a bare name, no decisions.
    entry(
      "approval.requested",
      "dana",
      "pending",
      { session: "team-b/nightly", approval: NAME, capability: "aps.schedule.publish" },
      `${identity.executionId.slice(0, 20)}${"f".repeat(20)}`,
    ),
    entry(
      "execution.started",
      "dana",
      "pending",
      { approval: NAME, capability: "aps.schedule.publish" },
      `${identity.executionId.slice(0, 20)}${"f".repeat(20)}`,
    ),
    {
      kind: "audit.lifecycle_marker",
      actor: "gatehouse",
      atMicros: T0 + 99_000_000,
      payload: { version: 1 },
    },
  ]);
  // Under our execution id, records of another Approval: that one's, not ours.
  await log.appendBatch([
    entry("approval.approved", "gatehouse", "success", {
      approval: `team-a/${OTHER}`,
      phase: "Approved",
      reason: "Approved",
      message: "approved by nobody",
    }),
    entry("execution.started", "eve", "pending", { approval: OTHER, capability: "aps.schedule.publish" }),
    // An approved call's start with no request of its execution before it.
    entry(
      "execution.started",
      "eve",
      "pending",
      { approval: UNREQUESTED.approvalName, capability: "aps.schedule.publish" },
      UNREQUESTED.executionId,
    ),
    // An Auto call's start names no Approval and needs no request.
    entry(
      "execution.started",
      "alice",
      "pending",
      { approval: null, capability: "crm.read" },
      "a".repeat(64),
    ),
  ]);
});
afterAll(async () => {
  await db?.drop();
});

describe("gatehouse-audit show", () => {
  it("prints the Approval's request, decisions, outcome and execution from the chain alone", async () => {
    const run = await gatehouseAudit(["show", "--approval", NAME, "--namespace", "team-a"], db.operatorUrl);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(
      `Approval ${APPROVAL} — execution ${identity.executionId}, session team-a/weekly-publish (uid ${SESSION_UID})`,
    );
    expect(lines[1]).toBe("  Approval Approved, execution succeeded");
    expect(lines.slice(2).map((l) => l.replace(/^ {2}seq +\d+ {2}\S+ {2}/, ""))).toEqual([
      `requested by alice: aps.schedule.publish, arguments sha256 ${"d".repeat(64)}, target Schedule s-42 at version 7, approvers users bob, carol; groups schedulers, 1 approval required, expires 2025-06-16T16:00:00Z`,
      "decision 0 by mallory: Approve — not counted: mallory is not a listed approver",
      'decision 1 by bob: Approve "checked the schedule" — counted',
      "approved (Approved): approved by bob",
      expect.stringMatching(
        /^execution started by alice: aps\.schedule\.publish, provider team-a\/aps — approved record seq 5 \(hash [0-9a-f]{16}…\)$/,
      ),
      `execution finished: succeeded, after 1 attempt, evidence aps publication-977, result sha256 ${"c".repeat(64)}`,
      "decision 2 ignored: Reject by carol appended when the Approval was already Succeeded",
    ]);
    expect(lines[2]).toMatch(/^ {2}seq 2 {2}2025-06-15T\d\d:\d\d:\d\d\.000000Z {2}requested/);
  });

  it("shows every namespace's Approval of that name when no namespace is given", async () => {
    const run = await gatehouseAudit(["show", "--approval", NAME], db.operatorUrl);
    expect(run.code).toBe(0);
    const headings = run.stdout.split("\n").filter((l) => l.startsWith("Approval "));
    expect(headings).toEqual([
      expect.stringContaining(`Approval ${APPROVAL} — execution ${identity.executionId}`),
      expect.stringContaining(`Approval team-b/${NAME} — execution ${identity.executionId.slice(0, 20)}ffff`),
    ]);
    expect(run.stdout).toContain(
      "execution started by dana: aps.schedule.publish\n  (no decision records: written before decisions were audited)",
    );
    expect(run.stdout).not.toContain("eve");
  });

  it("prints the history as JSON with --json", async () => {
    const run = await gatehouseAudit(["show", "--approval", NAME, "-n", "team-a", "--json"], db.operatorUrl);
    expect(run.code).toBe(0);
    const { histories } = JSON.parse(run.stdout);
    expect(histories).toHaveLength(1);
    expect(histories[0]).toMatchObject({
      approval: { namespace: "team-a", name: NAME },
      executionId: identity.executionId,
      phase: "Approved",
      executionState: "succeeded",
      notes: [],
    });
    expect(histories[0].events.map((e: { step: string }) => e.step)).toEqual([
      "requested",
      "decision",
      "decision",
      "decided",
      "execution_started",
      "execution_finished",
      "decision_ignored",
    ]);
    expect(histories[0].events[2]).toMatchObject({ approver: "bob", verdict: "Approve", counted: true });
  });

  it("does not show a record under its execution id that names another Approval", async () => {
    const run = await gatehouseAudit(["show", "--approval", NAME, "-n", "team-a"], db.operatorUrl);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain(OTHER);
    expect(run.stdout).not.toContain("eve");
    expect(run.stdout).not.toContain("approved by nobody");
  });

  it("exits 1 and says so when no record names the Approval", async () => {
    const run = await gatehouseAudit(["show", "--approval", NAME, "-n", "team-c"], db.operatorUrl);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      new RegExp(`^gatehouse-audit: no audit records name Approval ${NAME} in namespace team-c; `),
    );
  });

  it.each([
    ["--approval is missing", ["show"], /show needs --approval NAME/],
    [
      "the name is not an Approval's",
      ["show", "--approval", "my-approval"],
      /is not the name of an Approval/,
    ],
    ["a flag of verify is given", ["show", "--approval", NAME, "--from", "2"], /--from belongs to verify/],
  ])("exits 2 with the usage when %s", async (_, args, message) => {
    const run = await gatehouseAudit(args, db.operatorUrl);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain("gatehouse-audit show --approval NAME [--namespace NS] [--json]");
  });
});

describe("kubectl gatehouse audit show", () => {
  const plugin = (args: string[]) => gatehouseAudit(["audit", "show", ...args], db.operatorUrl, PLUGIN);

  it("prints what gatehouse-audit show prints, for the Approval in -n's namespace", async () => {
    const [viaPlugin, direct] = await Promise.all([
      plugin([NAME, "-n", "team-a"]),
      gatehouseAudit(["show", "--approval", NAME, "--namespace", "team-a"], db.operatorUrl),
    ]);
    expect(viaPlugin.code).toBe(0);
    expect(viaPlugin.stdout).toBe(direct.stdout);
    expect(viaPlugin.stdout).toContain('decision 1 by bob: Approve "checked the schedule" — counted');
    expect(viaPlugin.stdout).toContain("execution finished: succeeded");
  });

  it("prints JSON with -o json", async () => {
    const run = await plugin([NAME, "-o", "json"]);
    expect(run.code).toBe(0);
    expect(
      JSON.parse(run.stdout).histories.map((h: { approval: { namespace: string } }) => h.approval.namespace),
    ).toEqual(["team-a", "team-b"]);
  });

  it("exits 1 when no record names the Approval", async () => {
    const run = await plugin(["apr-00000000000000000000"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no audit records name Approval apr-00000000000000000000 in any namespace");
  });

  it.each([
    ["NAME is missing", [], /missing the Approval's NAME/],
    ["the output format is unknown", [NAME, "-o", "yaml"], /--output must be one of text, json/],
    [
      "a kubeconfig is given",
      [NAME, "--context", "kind"],
      /audit show reads only DATABASE_URL; it takes no --context/,
    ],
  ])("exits 2 with the usage when %s", async (_, args, message) => {
    const run = await plugin(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain("kubectl gatehouse audit show NAME [-n NS] [-o text|json]");
  });
});

describe("the dispatches gatehouse-audit lifecycle flags", () => {
  it("are the approved calls that started after the marker with no approval.requested of their execution before them", async () => {
    const marker = await db.operator.query("SELECT seq FROM audit_log WHERE kind = 'audit.lifecycle_marker'");
    const unrequested = await readUnrequestedDispatches(db.operator, Number(marker.rows[0]?.seq));
    expect(unrequested).toEqual([
      {
        seq: expect.any(Number),
        atMicros: expect.any(Number),
        executionId: UNREQUESTED.executionId,
        approval: UNREQUESTED.approvalName,
      },
    ]);
  });
});
