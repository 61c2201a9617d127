/**
 * Resolving an unknown outcome on the real control plane, local node and Postgres, through a real
 * operator process. The test is the agent (a sleeping session's pod token calls `POST /v1/invoke`);
 * the business system is the counting provider, which commits and then drops its answer for a
 * capability without an idempotency key, so nobody can learn the outcome. An Auto write that ends so
 * gets an Approval in phase Unknown from the operator; an identical proposal is answered from the
 * record and not sent; a person without the verb `resolve` is refused; a platform engineer with it
 * runs `kubectl gatehouse resolve … --succeeded` and the Approval turns Succeeded (ResolvedByPerson),
 * the chain holds `execution.resolved` in their name, and the session's transcript the outcome.
 *
 * The case runs in another file's environment (`exactly-once.test.ts`, whose operator has the same
 * short provider deadline and lease grace), in a namespace of its own.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coreNamespace, startAgent } from "./core-agent.ts";
import { approvalPast, approvalWithStatus } from "./core-approvals.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import { auditOfExecution, executionsOfSession } from "./core-records.ts";
import { type Environment, REPO_ROOT } from "./environment.ts";
import { eventually, verifyAudit } from "./story.ts";

const PLUGIN = join(REPO_ROOT, "operator/src/cli/kubectl-gatehouse.ts");
const LOST_AUTO = "counter.lost-auto.write";
const REASON = "APS shows week-12 shifted by one day";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl-gatehouse ARGS -n NAMESPACE --context CONTEXT`, as kubectl runs it. */
function plugin(env: Environment, namespace: string, context: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PLUGIN, ...args, "-n", namespace, "--context", context],
      { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: env.cluster.kubeconfigPath } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The case, registered where this is called: `environment()` is the calling file's environment,
 * started in its own `beforeAll` (so read only inside hooks and tests). Its operator must run sleeping
 * agent pods, with a provider deadline of a few seconds.
 */
export function describeResolve(environment: () => Environment): void {
  describe("resolving an unknown outcome", () => {
    let env: Environment;
    let namespace: string;
    let ledger: Ledger;

    beforeAll(async () => {
      env = environment();
      namespace = await coreNamespace(env, "resolve");
      // carol is this namespace's platform engineer (gatehouse-platform grants the verb resolve); bob an
      // approver, who may patch approvals but not resolve them.
      await env.kubectl.ok("admin", [
        "create",
        "rolebinding",
        "platform",
        "-n",
        namespace,
        "--clusterrole",
        "gatehouse-platform",
        "--user",
        "carol",
      ]);
      await env.kubectl.ok("admin", [
        "create",
        "rolebinding",
        "approver-bob",
        "-n",
        namespace,
        "--clusterrole",
        "gatehouse-approver",
        "--user",
        "bob",
      ]);
      ledger = await deployCounter(
        env,
        namespace,
        "counter",
        [{ id: LOST_AUTO, effect: "write", idempotency: "none", behaviour: "drop" }],
        { [LOST_AUTO]: { approval: "Auto" } },
      );
    }, 600_000);

    afterAll(async () => {
      if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
    });

    describe("an Auto write whose outcome is unknown", () => {
      it("is recorded in an Approval Unknown, not sent again, and settled by the holder of the resolve verb", async () => {
        const agent = await startAgent(env, namespace, "lost-auto");
        const call = (position: number) => ({
          turn: 0,
          position,
          tool: toolName(LOST_AUTO),
          arguments: JSON.stringify({ planId: "week-12", shiftDays: 1 }),
        });
        const first = await agent.invoke(call(0));
        expect(first).toMatchObject({ status: "unknown", errorKind: "unknown_outcome" });
        const name = first.approval?.name ?? "";
        expect(name).toMatch(/^apr-/);
        const [row] = await executionsOfSession(env.pool, agent.session.uid);
        expect(row?.state).toBe("unknown");

        const recorded = await approvalWithStatus(env, namespace, name);
        expect(recorded.status?.phase).toBe("Unknown");
        expect(recorded.spec).toMatchObject({ executionId: row?.id, autoExecution: true });

        // Proposed again at another position: answered from the record, nothing sent.
        const again = await agent.invoke(call(1));
        expect(again).toMatchObject({ status: "unknown", executionId: row?.id, approval: { name } });
        expect(await ledger.calls(LOST_AUTO)).toHaveLength(1);

        // bob has no verb resolve here: admission refuses, nothing changes.
        const refused = await plugin(env, namespace, "bob", [
          "resolve",
          name,
          "--succeeded",
          "--reason",
          REASON,
          "--wait",
          "false",
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(
          /resolution-verb: bob may resolve Approval \S+ only with the RBAC verb resolve/,
        );

        const run = await plugin(env, namespace, "carol", [
          "resolve",
          name,
          "--succeeded",
          "--reason",
          REASON,
        ]);
        expect(run.stderr).toBe("");
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`approval.gatehouse.dev/${name}: resolved Succeeded by carol`);

        const settled = await approvalPast(env, namespace, name, ["Unknown"]);
        expect(settled.status?.phase).toBe("Succeeded");
        expect(settled.status?.conditions?.find((c) => c.type === "Executed")).toMatchObject({
          reason: "ResolvedByPerson",
          message: `resolved by carol as Succeeded: ${REASON}`,
        });
        const [resolved] = await executionsOfSession(env.pool, agent.session.uid);
        expect(resolved).toMatchObject({ state: "succeeded", message: `resolved by carol: ${REASON}` });

        const audit = await auditOfExecution(env.pool, row?.id ?? "");
        const resolution = audit.filter((r) => r.kind === "execution.resolved");
        expect(resolution).toHaveLength(1);
        expect(resolution[0]).toMatchObject({ actor: "carol", outcome: "success" });
        expect(audit.map((r) => r.kind)).toContain("approval.unknown_recorded");
        expect((await verifyAudit(env)).ok).toBe(true);

        const outcomes = await eventually("the resolution in the transcript", 30_000, async () => {
          const events = await env.pool.query<{
            dedupe_key: string;
            payload: { status: string; content: string };
          }>(
            "SELECT dedupe_key, payload FROM session_events WHERE session_uid = $1 AND kind = 'approval_outcome'",
            [agent.session.uid],
          );
          const found = events.rows.find((e) => e.dedupe_key === `approval_outcome:${name}:resolution`);
          return found ? found : undefined;
        });
        expect(outcomes.payload).toMatchObject({ status: "succeeded" });
        expect(outcomes.payload.content).toContain(
          `carol checked the business system and confirmed it took effect`,
        );
        expect(await ledger.effects(LOST_AUTO)).toHaveLength(1);
      });
    });
  });
}
