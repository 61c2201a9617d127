/**
 * The reference story end to end (DESIGN §1) on the real control plane, local node, Postgres,
 * fake APS and scripted model, through the real operator process and the real agent runtime — the very
 * story `make demo` prints (story.ts), played once per engine the agent image carries (spec.engine),
 * each in an environment of its own, and once more with `spec.engine: external` and the example agent
 * image (examples/mcp-agent: an MCP client of the gateway with the openai SDK). alice's request is
 * approved by her and published exactly once; bob's self-approved request is refused by the APS, and
 * that refusal is final. Then, per engine, a call Core denies, an agent pod released while it waits for
 * a decision, and one killed then; the external agent keeps its conversation in memory only, so instead
 * of those two it is shown holding its pod and its call past holdPodForSeconds. This file owns bob's
 * path (examples.test.ts checks only that the examples apply and are admitted).
 */
import { readFileSync } from "node:fs";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINES, EXTERNAL_ENGINE, type SessionEngine } from "../../operator/src/api/agentsession.ts";
import { containerLogPath } from "../cluster/src/index.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import {
  conversationProblems,
  conversationRequests,
  decide,
  executionsWithReceipts,
  killedWhileAwaiting,
  messagesOf,
  runningPod,
  sessionInPhase,
  sessionOf,
  startSession,
  transcriptOf,
} from "./runtime-sessions.ts";
import {
  decisionPatch,
  eventually,
  forgetEarlierCheckpoints,
  pendingApprovalOf,
  playReferenceStory,
  type StoryReport,
  type TranscriptRow,
} from "./story.ts";

const silent = { say: () => {}, command: () => {} };

/** The example agent (examples/mcp-agent) under the name deploy/engines.yaml lists for external sessions. */
const EXAMPLE_AGENT_IMAGE = "gatehouse/example-mcp-agent:dev";

/** Every engine the agent image carries, then the example agent as an external one. */
const RUNS: readonly SessionEngine[] = [...ENGINES, EXTERNAL_ENGINE];

/** The transcript as `<kind> <tool or status>` steps: what the agent asked and what Core answered. */
function steps(transcript: TranscriptRow[]): string[] {
  const toolOf = new Map<string, string>();
  return transcript.flatMap((row) => {
    const p = row.payload as Record<string, string>;
    if (row.kind === "tool_call") {
      toolOf.set(p.callId!, p.tool!);
      return [`call ${p.tool}`];
    }
    if (row.kind === "tool_result") return [`result ${toolOf.get(p.callId!) ?? p.callId} ${p.status}`];
    if (row.kind === "approval_outcome") return [`approval ${p.phase} ${p.status}`];
    if (row.kind === "final_answer") return ["final_answer"];
    return [];
  });
}

/** The agent container's log of pod `name` (the local node keeps it after the pod ended). */
async function agentLog(env: Environment, name: string): Promise<{ pod: V1Pod; log: string }> {
  const pod = await env.kubectl.json<V1Pod>("admin", ["get", "pod", name, "-n", NAMESPACE]);
  const key = { namespace: NAMESPACE, name, uid: pod.metadata?.uid ?? "" };
  return { pod, log: readFileSync(containerLogPath(env.cluster.runDir, key, "agent"), "utf8") };
}

describe.each(RUNS)("the reference story with spec.engine %s", (engine: SessionEngine) => {
  const external = engine === EXTERNAL_ENGINE;
  // What every session of this run names: its engine and, for external, the example agent's image.
  const options = external ? { engine, agentImage: EXAMPLE_AGENT_IMAGE } : { engine };
  let env: Environment;
  let report: StoryReport;

  beforeAll(async () => {
    const started = Date.now();
    env = await startEnvironment(clusterInfo(), {
      componentEnv: { AUDIT_CHECKPOINT_INTERVAL_SECONDS: "1" },
    });
    await forgetEarlierCheckpoints(env.kubectl);
    report = await playReferenceStory(env, silent, options);
    console.log(`reference story with engine ${engine}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 900_000);

  afterAll(async () => {
    await env?.stop();
  });

  describe("alice's request", () => {
    it("moves her AgentSession through Running and AwaitingApproval to Completed, in that order", () => {
      expect(report.alice.sessionPhases.join(",")).toMatch(
        /^(Pending,)?Running,AwaitingApproval,(Running,)?Completed$/,
      );
    });

    it("moves her Approval from Pending through Executing to Succeeded (approved and dispatched in one pass: Decided=True, reason Approved)", () => {
      expect(report.alice.approvalPhases).toEqual(["Pending", "Executing", "Succeeded"]);
      expect(report.alice.execution).toMatchObject({ state: "succeeded" });
    });

    it("publishes in the APS system exactly once, as alice, the version she approved", async () => {
      const approval = await env.kubectl.json<{ spec: { arguments: string } }>("admin", [
        "get",
        "approval",
        report.alice.approvalName,
        "-n",
        NAMESPACE,
      ]);
      const approved = JSON.parse(approval.spec.arguments) as { planId: string; version: number };
      const publishes = env.aps.publishes().filter((p) => p.user === "alice");
      expect(publishes).toEqual([
        expect.objectContaining({ planId: approved.planId, version: approved.version }),
      ]);
      expect(report.alice.publishExecutions).toEqual(["succeeded"]);
    });

    it("keeps a transcript of every tool call and its one result, in order, ending in the final answer", () => {
      expect(steps(report.alice.transcript)).toEqual([
        "call aps_schedule_read",
        "result aps_schedule_read succeeded",
        "call aps_schedule_draft",
        "result aps_schedule_draft succeeded",
        "call aps_schedule_publish",
        "result aps_schedule_publish pending_approval",
        "approval Succeeded succeeded",
        "final_answer",
      ]);
      // Tool results and approval outcomes come from Core's records, never from the agent.
      for (const row of report.alice.transcript) {
        if (row.kind === "tool_result" || row.kind === "approval_outcome") expect(row.source).toBe("core");
      }
    });

    it("fills status.result with the agent's answer naming the published version", () => {
      const published = env.aps.publishes().find((p) => p.user === "alice");
      expect(report.alice.result).toContain(`published as version ${published?.version}`);
    });

    it("reports the session's token usage in status.usage", () => {
      expect(report.alice.usage?.inputTokens).toBeGreaterThan(0);
      expect(report.alice.usage?.outputTokens).toBeGreaterThan(0);
    });
  });

  describe("bob's self-approved request", () => {
    it("is refused by the APS: the Approval fails with errorKind forbidden", () => {
      expect(report.bob.approvalPhases).toEqual(["Pending", "Executing", "Failed"]);
      expect(report.bob.execution).toMatchObject({ state: "failed", errorKind: "forbidden" });
    });

    it("reaches the agent as a refusal, which it reports in status.result", () => {
      const outcome = report.bob.transcript.find((row) => row.kind === "approval_outcome");
      expect(outcome?.payload).toMatchObject({ phase: "Failed", status: "failed" });
      expect(String(outcome?.payload.content)).toMatch(/forbidden|lacks the right/);
      expect(report.bob.result).toMatch(/refused/);
      expect(report.bob.sessionPhases.at(-1)).toBe("Completed");
    });

    it("is executed once and never retried: one failed execution, one attempt in the audit log, nothing published", async () => {
      expect(report.bob.publishExecutions).toEqual(["failed"]);
      const executionId = report.bob.execution?.id;
      expect(executionId).toBeDefined();
      const kinds = await env.pool.query<{ kind: string }>(
        "SELECT kind FROM audit_log WHERE execution_id = $1 AND kind LIKE 'execution.%' ORDER BY seq",
        [executionId],
      );
      expect(kinds.rows.map((r) => r.kind)).toEqual(["execution.started", "execution.finished"]);
      expect(env.aps.publishes().filter((p) => p.user === "bob")).toEqual([]);
      // What bob's account may do, the APS did: his agent's draft exists, made as bob.
      const drafts = [...(env.aps.state.plans.get("plan-2026-w49")?.versions.values() ?? [])].filter(
        (version) => version.createdBy === "bob",
      );
      expect(drafts).toHaveLength(1);
    });
  });

  describe("the audit log", () => {
    it("verifies against the checkpoints kept in the ConfigMap, and records both executions", async () => {
      expect(report.audit.cli.stderr).toBe("");
      expect(report.audit.cli.code).toBe(0);
      expect(report.audit.ok).toBe(true);
      expect(report.audit.checkpoints).toBeGreaterThan(0);
      const executions = await env.pool.query<{ execution_id: string }>(
        "SELECT DISTINCT execution_id FROM audit_log WHERE kind = 'execution.finished' AND execution_id = ANY($1)",
        [[report.alice.execution?.id, report.bob.execution?.id]],
      );
      expect(executions.rowCount).toBe(2);
    });

    it("names alice as the approver of her publish, read back from the chain alone", () => {
      expect(report.evidence.cli.stderr).toBe("");
      expect(report.evidence.namesApprover).toBe(true);
      expect(report.evidence.cli.stdout).toContain(`Approval plant-a/${report.alice.approvalName}`);
    });
  });

  describe("the agent pods", () => {
    it(`run the session's engine, ${engine}`, async () => {
      for (const part of [report.alice, report.bob]) {
        const podName = (await sessionOf(env, part.sessionName)).status?.podName ?? "";
        const { pod, log } = await agentLog(env, podName);
        const container = pod.spec?.containers[0];
        expect(container?.env).toContainEqual({ name: "GATEHOUSE_ENGINE", value: engine });
        if (external) {
          // The session's own image ran, and it ended by sending its final answer over MCP.
          expect(container?.image).toBe(EXAMPLE_AGENT_IMAGE);
          expect(log).toMatch(/^mcp-agent: answering message 0 of /m);
          expect(log).toMatch(/^mcp-agent: final answer sent$/m);
          continue;
        }
        // A subprocess engine logs its start; no other engine's name appears in the pod's log.
        if (engine !== "builtin")
          expect(log).toMatch(new RegExp(`"engine":"${engine}".*"msg":"${engine} started"`));
        for (const other of ENGINES.filter((name) => name !== engine && name !== "builtin"))
          expect(log).not.toMatch(`"engine":"${other}"`);
      }
    });
  });

  describe("a call Core denies", () => {
    it("reaches the model as Core's refusal: nothing runs, no Approval is asked for, and the session completes saying so", async () => {
      const publishesBefore = env.aps.publishes().length;
      const session = await startSession(env, `denied-${engine}`, "scripted/reference-story", {
        limits: { maxWrites: 0 },
        ...options,
      });
      const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"], 240_000);
      expect(ended.status?.phase).toBe("Completed");
      expect(ended.status?.result).toMatch(/^The publish did not go through: .*writes it is allowed/);
      const transcript = await transcriptOf(env, session.uid);
      expect(transcript.filter((row) => row.kind === "tool_result").map((row) => row.payload.status)).toEqual(
        ["succeeded", "succeeded", "denied"],
      );
      const approvals = await env.kubectl.json<{ items: Array<{ spec: { sessionRef: { uid: string } } }> }>(
        "admin",
        ["get", "approvals", "-n", NAMESPACE],
      );
      expect(approvals.items.filter((a) => a.spec.sessionRef.uid === session.uid)).toEqual([]);
      expect(env.aps.publishes()).toHaveLength(publishesBefore);
    });
  });

  // The two cases a new pod resumes from the transcript: the external example has no replay (docs/engines.md).
  describe.runIf(!external)("an agent pod killed while it waits for a decision", () => {
    it("is replaced by a pod of the same engine that resumes from the transcript; once approved, it publishes once and the model sees the receipt", async () => {
      const publishesBefore = env.aps.publishes().length;
      const { session, ended, killed, replacement } = await killedWhileAwaiting(env, `killed-${engine}`, {
        verdict: "Approve",
        ...options,
      });
      expect(replacement.metadata?.uid).not.toBe(killed.metadata?.uid);
      expect(replacement.spec?.containers[0]?.env).toContainEqual({
        name: "GATEHOUSE_ENGINE",
        value: engine,
      });
      expect(ended.status?.phase).toBe("Completed");
      expect(ended.status?.result).toMatch(/published as version \d+/);
      expect(env.aps.publishes()).toHaveLength(publishesBefore + 1);
      // The publish ran once and its receipt is the one answer to its call in what the model saw last.
      const requests = conversationRequests(env, session.text);
      for (const request of requests) expect(conversationProblems(messagesOf(request))).toEqual([]);
      const last = messagesOf(requests.at(-1)!);
      const publishAnswers = last.filter(
        (m) => m.role === "tool" && typeof m.content === "string" && m.content.includes("publicationId"),
      );
      expect(publishAnswers).toHaveLength(1);
    });
  });

  describe.runIf(!external)("an agent pod released while it waits for a decision", () => {
    it("exits after holdPodForSeconds; once approved, a new pod resumes the session from the transcript and publishes once", async () => {
      const publishesBefore = env.aps.publishes().length;
      const session = await startSession(env, `held-${engine}`, "scripted/reference-story", {
        approval: { holdPodForSeconds: 3 },
        ...options,
      });
      const approval = await pendingApprovalOf(env, session.uid);
      const held = await eventually("the held pod to exit", 120_000, async () => {
        const status = (await sessionOf(env, session.name)).status;
        if (!status?.podName) return undefined;
        const { pod } = await agentLog(env, status.podName).catch(() => ({ pod: undefined }));
        const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
        return terminated ? { pod, exitCode: terminated.exitCode } : undefined;
      });
      expect(held.exitCode).toBe(0);
      expect((await sessionOf(env, session.name)).status?.phase).toBe("AwaitingApproval");

      await env.kubectl.ok("alice", [
        "patch",
        "approval",
        approval.metadata.name,
        "-n",
        NAMESPACE,
        "--type",
        "json",
        "-p",
        decisionPatch("alice", "Approve"),
      ]);
      const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"], 240_000);
      expect(ended.status?.phase).toBe("Completed");
      expect(ended.status?.result).toMatch(/published as version \d+/);
      expect(ended.status?.podUID).not.toBe(held.pod?.metadata?.uid);
      expect(env.aps.publishes()).toHaveLength(publishesBefore + 1);
      const resumed = await agentLog(env, ended.status?.podName ?? "");
      expect(resumed.pod.spec?.containers[0]?.env).toContainEqual({
        name: "GATEHOUSE_ENGINE",
        value: engine,
      });
      // Every request the model received for this conversation, before and after the release, was
      // one a real endpoint accepts.
      const requests = conversationRequests(env, session.text);
      expect(requests.length).toBeGreaterThanOrEqual(4);
      for (const request of requests) expect(conversationProblems(messagesOf(request))).toEqual([]);
    });
  });

  describe.runIf(external)("an external agent waiting for a decision", () => {
    it("keeps its pod and its call open past holdPodForSeconds; once approved, the same pod publishes once and answers", async () => {
      const publishesBefore = env.aps.publishes().length;
      const session = await startSession(env, `held-${engine}`, "scripted/reference-story", {
        approval: { holdPodForSeconds: 1 },
        ...options,
      });
      const approval = await pendingApprovalOf(env, session.uid);
      const waiting = await sessionInPhase(env, session.name, ["AwaitingApproval"]);
      // Past the hold, a released pod would have exited (the builtin case above); this one still waits
      // in its tools/call at the gateway.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const held = await runningPod(env, session);
      expect(held.metadata?.uid).toBe(waiting.status?.podUID);

      await decide(env, approval.metadata.name, "Approve");
      const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"], 240_000);
      expect(ended.status?.phase).toBe("Completed");
      expect(ended.status?.result).toMatch(/published as version \d+/);
      expect(ended.status?.podUID).toBe(held.metadata?.uid);
      expect(env.aps.publishes()).toHaveLength(publishesBefore + 1);
      // One Approval, one publish execution, one outcome: the call was neither lost nor made twice.
      const approvals = await env.kubectl.json<{
        items: Array<{ metadata: { name: string }; spec: { sessionRef: { uid: string } } }>;
      }>("admin", ["get", "approvals", "-n", NAMESPACE]);
      expect(
        approvals.items.filter((a) => a.spec.sessionRef.uid === session.uid).map((a) => a.metadata.name),
      ).toEqual([approval.metadata.name]);
      const publishes = (await executionsWithReceipts(env, session.uid)).filter(
        (e) => e.capability === "aps.schedule.publish",
      );
      expect(publishes.map((e) => e.state)).toEqual(["succeeded"]);
      const transcript = await transcriptOf(env, session.uid);
      expect(transcript.filter((row) => row.kind === "released")).toEqual([]);
      expect(
        transcript.filter((row) => row.kind === "approval_outcome").map((row) => row.payload.status),
      ).toEqual(["succeeded"]);
      for (const request of conversationRequests(env, session.text))
        expect(conversationProblems(messagesOf(request))).toEqual([]);
    });
  });

  // Admission, whatever the engine: played once.
  describe.runIf(engine === "builtin")("a decision from someone who is not an approver", () => {
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
});
