/**
 * The reference story of DESIGN §1, played with kubectl against the real API server — shared by
 * `make demo` (which prints every command with its real output) and the e2e test (which asserts on
 * what it returns). Every state reported here is read from the API server, Postgres or the fake APS.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createPostgresAuditLog } from "../../operator/src/store/audit-log.ts";
import type { Environment } from "./environment.ts";
import { NAMESPACE, REPO_ROOT } from "./environment.ts";
import type { KubectlResult } from "./kubectl.ts";

/** How the story shows what it does. */
export interface StoryOutput {
  /** A narrative line. */
  say(line: string): void;
  /** A kubectl command and its real output. */
  command(result: KubectlResult): void;
}

/** What the story observed. */
export interface StoryReport {
  sessionName: string;
  /** Distinct successive status.phase values of the AgentSession, as the API server's watch delivered them. */
  sessionPhases: string[];
  approvalName: string;
  /** Distinct successive status.phase values of the Approval, from the moment it appeared. */
  approvalPhases: string[];
  result: string;
  publishes: number;
  auditRows: number;
  auditOk: boolean;
}

interface ApprovalObject {
  metadata: { name: string };
  spec: { capabilityId: string; sessionRef: { uid: string }; decisions: unknown[] };
  status?: { phase?: string; ignoredDecisions?: Array<{ approver: string; reason: string }> };
}

/**
 * Collects the successive status.phase values a kubectl watch prints (one per watch event). It watches
 * the list filtered by name, so it may start before the object exists.
 */
export function watchPhases(
  env: Environment,
  kind: string,
  name: string,
  namespace = NAMESPACE,
): { phases: string[]; stop(): void } {
  const phases: string[] = [];
  const child = spawn(
    env.cluster.kubectlPath,
    [
      "--kubeconfig",
      env.cluster.kubeconfigPath,
      "--context",
      "admin",
      "get",
      kind,
      "-n",
      namespace,
      "--field-selector",
      `metadata.name=${name}`,
      "-w",
      "-o",
      'jsonpath={.status.phase}{"\\n"}',
    ],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  let buffer = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    for (const line of lines) {
      const phase = line.trim() || "(none)";
      if (phases.at(-1) !== phase) phases.push(phase);
    }
  });
  return { phases, stop: () => child.kill() };
}

/** Polls until `probe` returns a value. */
export async function eventually<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** The Pending Approval of a session, once the operator created it. */
export async function pendingApprovalOf(env: Environment, sessionUid: string): Promise<ApprovalObject> {
  return await eventually("the Approval", 180_000, async () => {
    const list = await env.kubectl.json<{ items: ApprovalObject[] }>("admin", [
      "get",
      "approvals",
      "-n",
      NAMESPACE,
    ]);
    return list.items.find((a) => a.spec.sessionRef.uid === sessionUid && a.status?.phase === "Pending");
  });
}

/** The JSON patch an approver sends: append one decision in their own name (DESIGN §2). */
export function decisionPatch(approver: string, verdict: "Approve" | "Reject", reason?: string): string {
  return JSON.stringify([
    { op: "add", path: "/spec/decisions/-", value: { approver, verdict, ...(reason ? { reason } : {}) } },
  ]);
}

/** Verifies the audit chain in Postgres. */
export async function verifyAudit(env: Environment): Promise<{ ok: boolean; rows: number; report: unknown }> {
  const report = await createPostgresAuditLog(env.pool).verify();
  return { ok: report.ok, rows: report.records, report };
}

/** Plays the story: alice asks, the agent proposes a publish, alice approves, it runs once, the audit verifies. */
export async function playReferenceStory(env: Environment, out: StoryOutput): Promise<StoryReport> {
  const k = env.kubectl;
  const sessionFile = join(REPO_ROOT, "examples", NAMESPACE, "session.yaml");
  const sessionName = "push-plan";

  out.say("1. alice creates an AgentSession (the API server records her as the subject).");
  const sessionWatch = watchPhases(env, "agentsession", sessionName);
  out.command(await k.ok("alice", ["create", "-f", sessionFile]));
  const uid = (
    await k.ok("alice", [
      "get",
      "agentsession",
      sessionName,
      "-n",
      NAMESPACE,
      "-o",
      "jsonpath={.metadata.uid}",
    ])
  ).stdout;

  out.say(
    "2. An agent pod starts; it reads the plan, drafts the shifted plan, and proposes aps.schedule.publish.",
  );
  const approval = await pendingApprovalOf(env, uid);
  const approvalWatch = watchPhases(env, "approval", approval.metadata.name);
  out.command(await k.ok("admin", ["get", "pods", "-n", NAMESPACE, "-o", "wide"]));

  out.say("3. The operator created an Approval; the session waits for it.");
  out.command(await k.ok("alice", ["get", "agentsessions", "-n", NAMESPACE]));
  out.command(await k.ok("alice", ["get", "approvals", "-n", NAMESPACE]));
  out.command(
    await k.ok("alice", [
      "get",
      "approval",
      approval.metadata.name,
      "-n",
      NAMESPACE,
      "-o",
      'jsonpath=capability: {.spec.capabilityId}{"\\n"}arguments: {.spec.arguments}{"\\n"}requester: {.spec.requester.user}{"\\n"}approvers: {.spec.approvers}{"\\n"}',
    ]),
  );

  out.say("4. alice approves by appending her decision with a JSON patch.");
  out.command(
    await k.ok("alice", [
      "patch",
      "approval",
      approval.metadata.name,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      decisionPatch("alice", "Approve"),
    ]),
  );

  out.say(
    "5. The operator executes the publish exactly once through the aps provider; the agent reports back.",
  );
  out.command(
    await k.ok("admin", [
      "wait",
      "-n",
      NAMESPACE,
      "--for=jsonpath={.status.phase}=Completed",
      "--timeout=240s",
      `agentsession/${sessionName}`,
    ]),
  );
  out.command(await k.ok("alice", ["get", "approvals", "-n", NAMESPACE]));
  out.command(await k.ok("alice", ["get", "agentsessions", "-n", NAMESPACE, "-o", "wide"]));
  const resultCommand = await k.ok("alice", [
    "get",
    "agentsession",
    sessionName,
    "-n",
    NAMESPACE,
    "-o",
    'jsonpath={.status.result}{"\\n"}',
  ]);
  out.command(resultCommand);
  const result = resultCommand.stdout.trim();
  const publishes = env.aps.publishes().length;
  out.say(
    `The fake APS system (its own record, not Gatehouse's) holds ${publishes} publish(es) of the plan.`,
  );

  out.say(
    "6. The hash-chained audit log in Postgres verifies (every hash recomputed from the stored bytes).",
  );
  const audit = await verifyAudit(env);
  out.say(`audit verify: ok=${audit.ok}, rows=${audit.rows}`);

  // The watches lag the reads above a little: let them deliver the final phases before stopping them.
  await eventually("the watches to see the final phases", 30_000, async () =>
    approvalWatch.phases.at(-1) === "Succeeded" && sessionWatch.phases.at(-1) === "Completed"
      ? true
      : undefined,
  ).catch(() => undefined);
  sessionWatch.stop();
  approvalWatch.stop();
  return {
    sessionName,
    sessionPhases: sessionWatch.phases,
    approvalName: approval.metadata.name,
    approvalPhases: approvalWatch.phases,
    result,
    publishes,
    auditRows: audit.rows,
    auditOk: audit.ok,
  };
}
