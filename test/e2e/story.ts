/**
 * The reference story of DESIGN §1, played with kubectl against the real API server — shared by
 * `make demo` (which prints every command with its real output) and the e2e test (which asserts on
 * what it returns). Every state reported here is read from the API server, Postgres, the fake APS or
 * the output of a command that really ran.
 *
 *   alice  creates an AgentSession; the agent reads, drafts and proposes a publish; the session waits in
 *          AwaitingApproval; alice appends her decision with a JSON patch; Core publishes once; the
 *          agent's answer lands in status.result.
 *   bob    runs the same request and approves it himself; the APS refuses his account (`forbidden`);
 *          Core reports that as final — in the Approval's status and to the agent — and never retries.
 *   audit  `gatehouse-audit verify` recomputes the chain and compares it with the checkpoints kept in
 *          ConfigMap gatehouse-system/gatehouse-audit-checkpoints.
 */

import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse, stringify } from "yaml";
import type { SessionEngine } from "../../operator/src/api/agentsession.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { CHECKPOINTS_CONFIGMAP } from "../../operator/src/kube/witness/configmap-data.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { eventually } from "../cluster/src/poll.ts";
import type { BaseEnvironment as Environment } from "./environment.ts";
import { NAMESPACE, REPO_ROOT } from "./environment.ts";
import { EXAMPLE_SESSIONS_DIR } from "./examples.ts";
import type { Kubectl, KubectlResult } from "./kubectl.ts";

/** How the story shows what it does. */
export interface StoryOutput {
  /** A narrative line. */
  say(line: string): void;
  /** A command (kubectl, or the audit CLI) and its real output. */
  command(result: KubectlResult): void;
}

/** How the story is played. */
export interface StoryOptions {
  /**
   * The model the sessions ask for instead of the examples' `scripted/reference-story` (a real
   * endpoint's model, e.g. `gpt-4o-mini`); the session files are then sent on stdin with that name.
   */
  model?: string;
  /** The sessions' spec.engine (default: the examples' own, none, which is builtin). */
  engine?: SessionEngine;
  /** The sessions' spec.agent.image, with engine `external`. */
  agentImage?: string;
}

/** One transcript event of a session, as stored in Postgres `session_events`. */
export interface TranscriptRow {
  seq: number;
  source: "agent" | "core";
  kind: string;
  payload: Record<string, unknown>;
}

/** What one user's session went through. */
export interface SessionPart {
  sessionName: string;
  sessionUid: string;
  /** Distinct successive status.phase values of the AgentSession, as the API server's watch delivered them. */
  sessionPhases: string[];
  approvalName: string;
  /** Distinct successive status.phase values of the Approval, from the moment it appeared. */
  approvalPhases: string[];
  /** The Approval's status.execution once it settled. */
  execution: { id?: string; state?: string; errorKind?: string; resultSummary?: string } | undefined;
  /** status.result and status.usage of the finished session. */
  result: string;
  usage: { inputTokens: number; outputTokens: number } | undefined;
  /** The session's transcript, in order. */
  transcript: TranscriptRow[];
  /** States of the `executions` rows Core claimed for this session's publish (one per execution). */
  publishExecutions: string[];
  /** Publishes the APS system itself recorded for this user. */
  publishes: number;
}

/** The outcome of the audit step. */
export interface AuditPart {
  ok: boolean;
  rows: number;
  /** Checkpoints in the ConfigMap that the verify run compared the chain with. */
  checkpoints: number;
  /** The CLI's exit code and output. */
  cli: KubectlResult;
}

/** The evidence step: alice's Approval as `gatehouse-audit show` reads it from the chain alone. */
export interface EvidencePart {
  /** The CLI's exit code and output. */
  cli: KubectlResult;
  /** Whether it names alice's decision as counted, the approval and the succeeded execution. */
  namesApprover: boolean;
}

/** What the story observed. */
export interface StoryReport {
  alice: SessionPart;
  bob: SessionPart;
  audit: AuditPart;
  evidence: EvidencePart;
}

interface ApprovalObject {
  metadata: { name: string };
  spec: { capabilityId: string; sessionRef: { uid: string }; decisions: unknown[] };
  status?: {
    phase?: string;
    execution?: SessionPart["execution"];
    ignoredDecisions?: Array<{ approver: string; reason: string }>;
  };
}

interface SessionObject {
  metadata: { name: string; uid: string };
  status?: { phase?: string; result?: string; usage?: { inputTokens: number; outputTokens: number } };
}

const AUDIT_CLI = join(REPO_ROOT, "operator/src/cli/gatehouse-audit.ts");
const PUBLISH = "aps.schedule.publish";

/**
 * Collects the successive distinct status.phase values a kubectl watch prints (one per watch event;
 * events without a phase are skipped). It watches the list filtered by name, so it may start before
 * the object exists.
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
      // An object without a phase yet (just created) has no phase to record.
      const phase = line.trim();
      if (phase && phases.at(-1) !== phase) phases.push(phase);
    }
  });
  return { phases, stop: () => child.kill() };
}

/** The harness's one polling helper, re-exported where the e2e files have always found it. */
export { eventually };

/**
 * `user` creates AgentSession `name` in the example namespace asking the scripted reference story's
 * request (push next week's plan back by one day); resolves with its uid.
 */
export async function createReferenceSession(
  env: Environment,
  name: string,
  user = "alice",
): Promise<string> {
  const session = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      subject: { user },
      model: { name: "scripted/reference-story" },
      messages: [{ text: "Push next week's production plan back by one day." }],
    },
  };
  await env.kubectl.ok(user, ["create", "-f", "-"], JSON.stringify(session));
  return (await env.kubectl.ok(user, ["get", "ags", name, "-n", NAMESPACE, "-o", "jsonpath={.metadata.uid}"]))
    .stdout;
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

/** The transcript of session `sessionUid` from Postgres `session_events`, in order. */
export async function transcriptOf(env: Environment, sessionUid: string): Promise<TranscriptRow[]> {
  const rows = await env.pool.query<TranscriptRow>(
    "SELECT seq, source, kind, payload FROM session_events WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return rows.rows.map((row) => ({ ...row, seq: Number(row.seq) }));
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** One line per transcript event: seq, who wrote it, its kind and what matters of its payload. */
export function transcriptLines(rows: TranscriptRow[]): string[] {
  return rows.map((row) => {
    const p = row.payload;
    const text = (key: string) => (typeof p[key] === "string" ? (p[key] as string) : "");
    let detail: string;
    switch (row.kind) {
      case "tool_call":
        detail = `${text("tool")} (call ${text("callId")})`;
        break;
      case "tool_result":
        detail = `${text("status")} (call ${text("callId")}): ${clip(text("content"), 90)}`;
        break;
      case "usage":
        detail = `${text("model")} via endpoint ${text("endpoint")}: ${String(p.inputTokens)} tokens in, ${String(p.outputTokens)} out`;
        break;
      case "approval_outcome":
        detail = `${text("approval")} ${text("phase")}/${text("status")}: ${clip(text("content"), 80)}`;
        break;
      default:
        detail = clip(text("text") || JSON.stringify(p), 100);
    }
    return `${String(row.seq).padStart(3)}  ${row.source.padEnd(5)}  ${row.kind.padEnd(16)}  ${detail}`;
  });
}

/**
 * Clears what an earlier story on this cluster left under a fixed session name: the session itself
 * (foreground deletion, so it goes only after its pods) and any agent pod of that name still being
 * collected — the operator never adopts a pod it did not create for this session (PodNameTaken).
 * Waits ≤ 120 s; a fresh cluster has nothing to clear.
 */
async function clearLeftovers(env: Environment, sessionName: string): Promise<void> {
  await env.kubectl.ok("admin", [
    "delete",
    "agentsession",
    sessionName,
    "-n",
    NAMESPACE,
    "--ignore-not-found",
    "--cascade=foreground",
    "--timeout=120s",
  ]);
  await eventually(`the agent pods of an earlier ${sessionName} to be gone`, 120_000, async () => {
    const pods = await env.kubectl.json<{ items: Array<{ metadata: { name: string } }> }>("admin", [
      "get",
      "pods",
      "-n",
      NAMESPACE,
    ]);
    return pods.items.some((p) => p.metadata.name.startsWith(`${sessionName}-agent-`)) ? undefined : true;
  });
}

/** `kubectl create -f <examples/plant-a/file>` as `user`, with the model name and engine set when asked. */
async function createSession(
  env: Environment,
  user: string,
  file: string,
  options: StoryOptions,
): Promise<KubectlResult> {
  const path = join(EXAMPLE_SESSIONS_DIR, file);
  const fixedName = (parse(readFileSync(path, "utf8")) as { metadata?: { name?: string } }).metadata?.name;
  if (fixedName) await clearLeftovers(env, fixedName);
  // Relative to the repository when run from it (make demo), so the printed command reads as typed.
  const shown = relative(process.cwd(), path).startsWith("..") ? path : relative(process.cwd(), path);
  if (!options.model && !options.engine) return env.kubectl.ok(user, ["create", "-f", shown]);
  const session = parse(readFileSync(path, "utf8")) as {
    spec: { model: { name: string }; engine?: SessionEngine; agent?: { image: string } };
  };
  if (options.model) session.spec.model.name = options.model;
  if (options.engine) session.spec.engine = options.engine;
  if (options.agentImage) session.spec.agent = { image: options.agentImage };
  return env.kubectl.ok(user, ["create", "-f", "-"], stringify(session));
}

/**
 * One user's request: create the session from `file`, wait for its Pending Approval, let `user`
 * approve it, and wait until the Approval settles (`approvalEnd`) and the session ends.
 */
async function playRequest(
  env: Environment,
  out: StoryOutput,
  options: StoryOptions,
  user: string,
  file: string,
  approvalEnd: "Succeeded" | "Failed",
  steps: { created: string; proposed: string; approve: string; executed: string },
): Promise<SessionPart> {
  const k = env.kubectl;
  out.say(steps.created);
  const created = await createSession(env, user, file, options);
  out.command(created);
  const sessionName = /agentsession\.gatehouse\.dev\/(\S+) created/.exec(created.stdout)?.[1];
  if (!sessionName) throw new Error(`cannot read the session's name from: ${created.stdout}`);
  const sessionWatch = watchPhases(env, "agentsession", sessionName);
  try {
    const sessionUid = (
      await k.ok(user, [
        "get",
        "agentsession",
        sessionName,
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.metadata.uid}",
      ])
    ).stdout;

    out.say(steps.proposed);
    const approval = await pendingApprovalOf(env, sessionUid).catch(async (error: unknown) => {
      // Say where the session got stuck: its status and the pods of the namespace.
      const status = await k.run("admin", [
        "get",
        "agentsession",
        sessionName,
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.status}",
      ]);
      const pods = await k.run("admin", ["get", "pods", "-n", NAMESPACE, "-o", "wide"]);
      throw new Error(
        `${String(error)} of ${sessionName}; its status: ${status.stdout}${status.stderr}\n${pods.stdout}`,
      );
    });
    const approvalWatch = watchPhases(env, "approval", approval.metadata.name);
    try {
      out.command(
        await k.ok("admin", [
          "wait",
          "-n",
          NAMESPACE,
          "--for=jsonpath={.status.phase}=AwaitingApproval",
          "--timeout=120s",
          `agentsession/${sessionName}`,
        ]),
      );
      out.command(await k.ok(user, ["get", "agentsessions,approvals", "-n", NAMESPACE]));
      out.command(
        await k.ok(user, [
          "get",
          "approval",
          approval.metadata.name,
          "-n",
          NAMESPACE,
          "-o",
          'jsonpath=capability: {.spec.capabilityId}{"\\n"}arguments:  {.spec.arguments}{"\\n"}requester:  {.spec.requester.user}{"\\n"}approvers:  {.spec.approvers}{"\\n"}expiresAt:  {.spec.expiresAt}{"\\n"}',
        ]),
      );

      out.say(steps.approve);
      out.command(
        await k.ok(user, [
          "patch",
          "approval",
          approval.metadata.name,
          "-n",
          NAMESPACE,
          "--type",
          "json",
          "-p",
          decisionPatch(user, "Approve"),
        ]),
      );

      out.say(steps.executed);
      out.command(
        await k.ok("admin", [
          "wait",
          "-n",
          NAMESPACE,
          `--for=jsonpath={.status.phase}=${approvalEnd}`,
          "--timeout=240s",
          `approval/${approval.metadata.name}`,
        ]),
      );
      out.command(
        await k.ok(user, [
          "get",
          "approval",
          approval.metadata.name,
          "-n",
          NAMESPACE,
          "-o",
          'jsonpath=phase:     {.status.phase}{"\\n"}execution: {.status.execution}{"\\n"}',
        ]),
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
      out.command(await k.ok(user, ["get", "agentsession", sessionName, "-n", NAMESPACE, "-o", "wide"]));
      out.command(
        await k.ok(user, [
          "get",
          "agentsession",
          sessionName,
          "-n",
          NAMESPACE,
          "-o",
          'jsonpath=result: {.status.result}{"\\n"}usage:  {.status.usage}{"\\n"}',
        ]),
      );
      const session = await k.json<SessionObject>("admin", [
        "get",
        "agentsession",
        sessionName,
        "-n",
        NAMESPACE,
      ]);
      const settled = await k.json<ApprovalObject>("admin", [
        "get",
        "approval",
        approval.metadata.name,
        "-n",
        NAMESPACE,
      ]);
      const transcript = await transcriptOf(env, sessionUid);
      out.say(`The transcript of ${sessionName}, from Postgres (session_events; seq, writer, kind):`);
      for (const line of transcriptLines(transcript)) out.say(`  ${line}`);
      const executions = await env.pool.query<{ state: string }>(
        "SELECT state FROM executions WHERE session_uid = $1 AND capability = $2 ORDER BY created_at_us",
        [sessionUid, PUBLISH],
      );
      const publishes = env.aps.publishes().filter((p) => p.user === user).length;
      out.say(
        `The APS system's own record holds ${publishes} publish(es) by ${user}; Core claimed ` +
          `${executions.rowCount} execution(s) of ${PUBLISH} for this session (${executions.rows.map((r) => r.state).join(", ")}).`,
      );

      // The watches lag the reads above a little: let them deliver the final phases before stopping them.
      await eventually("the watches to see the final phases", 30_000, async () =>
        approvalWatch.phases.at(-1) === approvalEnd && sessionWatch.phases.at(-1) === "Completed"
          ? true
          : undefined,
      ).catch(() => undefined);
      return {
        sessionName,
        sessionUid,
        sessionPhases: [...sessionWatch.phases],
        approvalName: approval.metadata.name,
        approvalPhases: [...approvalWatch.phases],
        execution: settled.status?.execution,
        result: session.status?.result ?? "",
        usage: session.status?.usage,
        transcript,
        publishExecutions: executions.rows.map((r) => r.state),
        publishes,
      };
    } finally {
      approvalWatch.stop();
    }
  } finally {
    sessionWatch.stop();
  }
}

/** Runs `gatehouse-audit verify` against the environment's database, comparing with the ConfigMap. */
export function runAuditCli(env: Environment): Promise<KubectlResult> {
  return runGatehouseAudit(env, [
    "verify",
    "--kubeconfig",
    env.cluster.kubeconfigPath,
    "--context",
    "admin",
    "--namespace",
    OPERATOR_NAMESPACE,
  ]);
}

/** Runs `gatehouse-audit ARGS…` against the environment's database. */
export function runGatehouseAudit(env: Environment, command: string[]): Promise<KubectlResult> {
  const args = [relative(REPO_ROOT, AUDIT_CLI), ...command];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: env.databaseUrl } },
      (error, stdout, stderr) =>
        resolve({
          command: `DATABASE_URL=${env.databaseUrl} node ${args.join(" ")}`,
          code: error ? Number(error.code ?? 1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}

/** The seqs of the checkpoints in the ConfigMap (undefined while it does not exist). */
async function configMapCheckpointSeqs(env: Environment): Promise<number[] | undefined> {
  const got = await env.kubectl.run("admin", [
    "get",
    "configmap",
    CHECKPOINTS_CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
    "-o",
    "json",
  ]);
  if (got.code !== 0) return undefined;
  const data = (JSON.parse(got.stdout) as { data?: Record<string, string> }).data ?? {};
  return (JSON.parse(data["checkpoints.json"] ?? "[]") as Array<{ seq: number }>).map((c) => c.seq);
}

/**
 * Waits (≤ 60 s; the operator checkpoints every AUDIT_CHECKPOINT_INTERVAL_SECONDS) until the newest
 * checkpoint in the ConfigMap is the audit chain's head. Errors: the wait's timeout.
 */
export async function checkpointsReachHead(env: Environment): Promise<void> {
  const audit = createPostgresAuditLog(env.pool);
  await eventually("the ConfigMap to hold the chain's head", 60_000, async () => {
    const head = await audit.head();
    const seqs = await configMapCheckpointSeqs(env);
    return seqs && seqs.at(-1) === head.seq ? true : undefined;
  });
}

/**
 * The audit step: waits (≤ 60 s; the operator checkpoints every AUDIT_CHECKPOINT_INTERVAL_SECONDS)
 * until the ConfigMap's newest checkpoint is the chain's head, then runs `gatehouse-audit verify`
 * against the database and that ConfigMap.
 */
export async function verifyAuditStep(env: Environment, out: StoryOutput): Promise<AuditPart> {
  out.say(
    "7. The hash-chained audit log in Postgres verifies: every hash recomputed from the stored bytes, and the head matched against the checkpoints the operator keeps outside Postgres.",
  );
  await checkpointsReachHead(env);
  out.command(
    await env.kubectl.ok("admin", ["get", "configmap", CHECKPOINTS_CONFIGMAP, "-n", OPERATOR_NAMESPACE]),
  );
  const cli = await runAuditCli(env);
  out.command(cli);
  const checkpoints = /: (\d+) checkpoints/.exec(cli.stdout)?.[1];
  const rows = /(\d+) records from seq/.exec(cli.stdout)?.[1];
  return {
    ok: cli.code === 0 && /^audit chain intact/m.test(cli.stdout),
    rows: Number(rows ?? 0),
    checkpoints: Number(checkpoints ?? 0),
    cli,
  };
}

/** alice's part: she asks, the agent proposes a publish, she approves, it runs once, the agent reports. */
export function playAliceStory(
  env: Environment,
  out: StoryOutput,
  options: StoryOptions = {},
): Promise<SessionPart> {
  return playRequest(env, out, options, "alice", "session.yaml", "Succeeded", {
    created: "1. alice creates an AgentSession (the API server records her as the subject).",
    proposed:
      "2. An agent pod reads the plan, drafts the shifted plan and proposes aps.schedule.publish: the operator creates an Approval, and the session waits for it.",
    approve: "3. alice approves by appending her decision with a JSON patch (admission checks it is hers).",
    executed:
      "4. The operator re-checks and publishes exactly once through the aps provider; the waiting agent pod (or, once it was released, a new one resuming the session) reports the result.",
  });
}

/** bob's part: the same request, self-approved; the APS refuses his account, and that is final. */
export function playBobStory(
  env: Environment,
  out: StoryOutput,
  options: StoryOptions = {},
): Promise<SessionPart> {
  return playRequest(env, out, options, "bob", "bob-session.yaml", "Failed", {
    created: "5. bob runs the same request.",
    proposed: "   His agent drafts the plan and proposes the same publish.",
    approve: "   bob may approve his own request (allowSelfApproval), and does.",
    executed:
      "6. The APS system refuses bob's account the publish right: the provider answers forbidden, Core records it as final — no retry — and the agent reports the refusal.",
  });
}

/**
 * The evidence step: `gatehouse-audit show` prints alice's Approval — her request, her decision, the
 * approval, the execution and its receipt — from the audit chain alone, as it would after the session
 * and the Approval are deleted.
 */
export async function showEvidenceStep(
  env: Environment,
  out: StoryOutput,
  alice: SessionPart,
): Promise<EvidencePart> {
  out.say(
    "8. Who decided is evidence: the chain alone says who asked, who approved and what ran, also after the session and its Approval are deleted.",
  );
  const cli = await runGatehouseAudit(env, ["show", "--approval", alice.approvalName]);
  out.command(cli);
  const namesApprover =
    cli.code === 0 &&
    /decision 0 by alice: Approve.* — counted/.test(cli.stdout) &&
    /approved \(Approved\)/.test(cli.stdout) &&
    /execution finished: succeeded/.test(cli.stdout);
  return { cli, namesApprover };
}

/** Plays the whole story: alice's request, bob's request, then the audit and the evidence of who decided. */
export async function playReferenceStory(
  env: Environment,
  out: StoryOutput,
  options: StoryOptions = {},
): Promise<StoryReport> {
  const alice = await playAliceStory(env, out, options);
  const bob = await playBobStory(env, out, options);
  const audit = await verifyAuditStep(env, out);
  const evidence = await showEvidenceStep(env, out, alice);
  return { alice, bob, audit, evidence };
}

/**
 * Deletes ConfigMap gatehouse-audit-checkpoints: the e2e files share one cluster, and each starts a new
 * database whose chain the checkpoints of an earlier file's database would not match.
 */
export async function forgetEarlierCheckpoints(kubectl: Pick<Kubectl, "ok">): Promise<void> {
  await kubectl.ok("admin", [
    "delete",
    "configmap",
    CHECKPOINTS_CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
    "--ignore-not-found",
  ]);
}
