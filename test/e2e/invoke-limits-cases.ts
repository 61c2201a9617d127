/**
 * Limits and unstorable input on the real control plane, local node and Postgres (DESIGN §4 steps 4
 * and 6), as cases that run in another file's environment (`invoke.test.ts`: sleeping agent pods), in
 * a namespace of their own; an environment of its own would cost its start for these few cases. The
 * test is the agent: sessions' pods only sleep, and the test calls the gateway with each pod's token,
 * as an agent would. The business side is the counting provider, whose ledger shows what reached it.
 *
 * Covered: a `callId` or arguments holding U+0000, and arguments longer than an Approval holds, each
 * answered `invalid_arguments`, audited, with no execution and no Approval; and 20 concurrent calls at
 * distinct positions against `maxToolCalls: 2` and `maxWrites`, never one over; `maxTurns` from Core.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvokeAnswer, InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { MAX_APPROVAL_ARGUMENTS_LENGTH } from "../../operator/src/api/approval.ts";
import { canonicalJson } from "../../operator/src/core/canonical.ts";
import { coreNamespace, invokeAs, podToken, type SleepingSession, sleepingSession } from "./core-agent.ts";
import { deployCounter, type Ledger, toolName } from "./core-counter.ts";
import type { Environment } from "./environment.ts";

const PLACE = "lm.order.place"; // write, approval Required by default
const SHIP = "lm.order.ship"; // write, auto-allowed by its policy
const READ = "lm.stock.read"; // read, Auto

/**
 * The cases, registered where this is called: `environment()` is the calling file's environment,
 * started in its own `beforeAll` (so read only inside hooks and tests). The environment's agent pods
 * must only sleep.
 */
export function describeInvokeLimits(environment: () => Environment): void {
  describe("invoke limits and unstorable input", () => {
    let env: Environment;
    let namespace: string;
    let counter: Ledger;

    beforeAll(async () => {
      env = environment();
      namespace = await coreNamespace(env, "limits");
      counter = await deployCounter(
        env,
        namespace,
        "counter",
        [
          { id: PLACE, effect: "write" },
          { id: SHIP, effect: "write" },
          { id: READ, effect: "read" },
        ],
        { [SHIP]: { approval: "Auto" } },
      );
    }, 600_000);

    afterAll(async () => {
      if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
    });

    function call(
      turn: number,
      position: number,
      id: string,
      args: string,
      callId = `call_${position}`,
    ): InvokeCall {
      return { turn, position, callId, tool: toolName(id), arguments: args };
    }

    async function countOf(sql: string, params: unknown[] = []): Promise<number> {
      const result = await env.pool.query<{ n: string }>(sql, params);
      return Number(result.rows[0]?.n);
    }

    /** The session's audit records of `kind`, their payloads read as text (a payload may hold U+0000). */
    async function auditOf(sessionUid: string, kind: string): Promise<Array<Record<string, unknown>>> {
      const result = await env.pool.query<{ canonical: string }>(
        "SELECT convert_from(canonical, 'UTF8') AS canonical FROM audit_log WHERE session_uid = $1 AND kind = $2 ORDER BY seq",
        [sessionUid, kind],
      );
      return result.rows.map(
        (r) => (JSON.parse(r.canonical) as { payload: Record<string, unknown> }).payload,
      );
    }

    async function approvalsOf(session: SleepingSession): Promise<string[]> {
      const list = await env.kubectl.json<{
        items: Array<{ metadata: { name: string }; spec: { sessionRef: { uid: string } } }>;
      }>("admin", ["get", "approvals", "-n", session.namespace]);
      return list.items.filter((a) => a.spec.sessionRef.uid === session.uid).map((a) => a.metadata.name);
    }

    async function executionsOf(session: SleepingSession): Promise<number> {
      return countOf("SELECT count(*) AS n FROM executions WHERE session_uid = $1", [session.uid]);
    }

    /** `n` calls of `id` fired at once, at positions 0…n−1 of turn 0; their answers (each must be a 200). */
    async function concurrently(
      token: string,
      n: number,
      id: string,
      args: (p: number) => string,
    ): Promise<InvokeAnswer[]> {
      const replies = await Promise.all(
        Array.from({ length: n }, (_, position) =>
          invokeAs(env, token, call(0, position, id, args(position))),
        ),
      );
      for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return replies.map((reply) => reply.body);
    }

    describe("input that cannot be stored", () => {
      let session: SleepingSession;
      let token: string;

      beforeAll(async () => {
        session = await sleepingSession(env, namespace, "unstorable");
        token = await podToken(env, session);
      }, 300_000);

      const cases: Array<{ label: string; call: InvokeCall; problem: string }> = [
        {
          label: "a callId holding U+0000",
          call: call(0, 0, READ, "{}", "call_\u0000"),
          problem: "nul_character",
        },
        {
          label: "auto-allowed arguments holding \\u0000",
          call: call(0, 1, READ, '{"n":"\\u0000"}'),
          problem: "nul_character",
        },
        {
          label: "arguments holding \\u0000 on a call that needs approval",
          call: call(0, 2, PLACE, '{"orderId":"\\u0000"}'),
          problem: "nul_character",
        },
        {
          label: "arguments one character over the Approval's 64 KiB on a call that needs approval",
          call: call(0, 3, PLACE, canonicalJson({ note: "x".repeat(MAX_APPROVAL_ARGUMENTS_LENGTH - 10) })),
          problem: "too_large_for_approval",
        },
      ];

      it.each(cases)(
        "answers $label invalid_arguments, audits it, and approves and runs nothing",
        async ({ call: bad, problem }) => {
          const executionsBefore = await countOf("SELECT count(*) AS n FROM executions");
          const mark = await counter.mark();
          const reply = await invokeAs(env, token, bad);
          expect(reply.status).toBe(200);
          expect(reply.body).toMatchObject({ status: "invalid_arguments", errorKind: "invalid_arguments" });
          const audited = await auditOf(session.uid, "invoke.invalid_arguments");
          expect(audited.filter((p) => p.problem === problem).length).toBeGreaterThan(0);
          expect(await countOf("SELECT count(*) AS n FROM executions")).toBe(executionsBefore);
          expect(await approvalsOf(session)).toEqual([]);
          expect(await mark.calls()).toEqual([]);
        },
      );

      it("keeps the refused calls in the session's history, readable", async () => {
        const result = await env.pool.query<{ payload: { callId?: string; status?: string } }>(
          "SELECT payload FROM session_events WHERE session_uid = $1 AND kind = 'tool_result' ORDER BY seq",
          [session.uid],
        );
        expect(result.rows.map((r) => r.payload.status)).toEqual(
          Array(cases.length).fill("invalid_arguments"),
        );
        expect(result.rows[0]?.payload.callId).toBe("call_\ufffd");
      });
    });

    describe("budgets decided before anything runs", () => {
      it("runs exactly 2 of 20 concurrent calls at maxToolCalls 2 and denies the rest", async () => {
        const session = await sleepingSession(env, namespace, "tool-calls", { limits: { maxToolCalls: 2 } });
        const token = await podToken(env, session);
        const mark = await counter.mark();
        const answers = await concurrently(token, 20, READ, (p) => `{"n":${p}}`);
        expect(answers.filter((a) => a.status === "succeeded")).toHaveLength(2);
        expect(answers.filter((a) => a.status === "denied")).toHaveLength(18);
        expect(await executionsOf(session)).toBe(2);
        expect(await mark.calls()).toHaveLength(2);
        const denied = await auditOf(session.uid, "invoke.denied");
        expect(denied.map((p) => p.reason)).toEqual(Array(18).fill("ToolCallLimitReached"));
      });

      it("runs exactly maxWrites of 20 concurrent auto-allowed writes", async () => {
        const session = await sleepingSession(env, namespace, "writes", { limits: { maxWrites: 2 } });
        const token = await podToken(env, session);
        const mark = await counter.mark();
        const answers = await concurrently(token, 20, SHIP, (p) => `{"orderId":"S-${p}"}`);
        expect(answers.filter((a) => a.status === "succeeded")).toHaveLength(2);
        expect(await executionsOf(session)).toBe(2);
        expect(await mark.effects()).toHaveLength(2);
        const denied = await auditOf(session.uid, "invoke.denied");
        expect(denied.map((p) => p.reason)).toEqual(Array(18).fill("WriteLimitReached"));
      });

      it("requests exactly maxWrites Approvals of 20 concurrent writes that need approval", async () => {
        const session = await sleepingSession(env, namespace, "approvals", { limits: { maxWrites: 1 } });
        const token = await podToken(env, session);
        const answers = await concurrently(token, 20, PLACE, (p) => `{"orderId":"P-${p}"}`);
        expect(answers.filter((a) => a.status === "pending_approval")).toHaveLength(1);
        expect(await approvalsOf(session)).toHaveLength(1);
        expect(await auditOf(session.uid, "approval.requested")).toHaveLength(1);
      });

      it("denies a call in turn maxTurns, audited, and runs nothing", async () => {
        const session = await sleepingSession(env, namespace, "turns", { limits: { maxTurns: 2 } });
        const token = await podToken(env, session);
        const last = await invokeAs(env, token, call(1, 0, READ, "{}"));
        expect(last.body).toMatchObject({ status: "succeeded" });
        const over = await invokeAs(env, token, call(2, 0, READ, "{}"));
        expect(over.body).toMatchObject({ status: "denied", errorKind: "forbidden" });
        expect((await auditOf(session.uid, "invoke.denied")).map((p) => p.reason)).toEqual([
          "TurnLimitReached",
        ]);
        expect(await executionsOf(session)).toBe(1);
      });
    });
  });
}
