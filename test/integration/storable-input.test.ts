/**
 * Input Postgres cannot store, on the real Postgres: U+0000 in a call is refused by Core before anything
 * runs (with Core's executions, budget and audit ports on Postgres, the rest in memory), and U+0000 in
 * text kept for reading — a transcript event, a provider's receipt — is stored with U+FFFD in its place
 * instead of making the row unstorable (jsonb refuses `\u0000` with SQLSTATE 22P05).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { MAX_APPROVAL_ARGUMENTS_LENGTH } from "../../operator/src/api/approval.ts";
import { canonicalJson, sha256Hex } from "../../operator/src/core/canonical.ts";
import {
  createInMemoryWorld,
  TEST_SESSION,
  testCapability,
} from "../../operator/src/core/in-memory-ports.ts";
import { invoke } from "../../operator/src/core/invoke.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { createPostgresBudgetLedger } from "../../operator/src/store/budget-ledger.ts";
import { createPostgresExecutionStore } from "../../operator/src/store/executions.ts";
import { createPostgresTranscriptStore } from "../../operator/src/store/transcripts.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

let db: FreshDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function count(table: string): Promise<number> {
  const result = await db.admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(result.rows[0]?.n);
}

describe("Core refuses a call Postgres cannot store, before anything runs", () => {
  const schema = { type: "object", properties: { note: { type: "string" } } };

  function worldOnPostgres() {
    const world = createInMemoryWorld();
    world.capabilities.push(
      testCapability({ id: "aps.schedule.read", effect: "read", inputSchema: schema }),
      testCapability({ id: "aps.schedule.publish", effect: "write", inputSchema: schema }),
    );
    world.deps.executions = createPostgresExecutionStore(db.operator);
    world.deps.budget = createPostgresBudgetLedger(db.operator);
    world.deps.audit = createPostgresAuditLog(db.operator);
    return world;
  }

  const cases: Array<{ label: string; call: Partial<InvokeCall>; problem: string }> = [
    { label: "U+0000 in callId", call: { callId: "call_\u0000" }, problem: "nul_character" },
    { label: "U+0000 in tool", call: { tool: "aps_schedule_read\u0000" }, problem: "nul_character" },
    {
      label: "\\u0000 in auto-allowed arguments",
      call: { arguments: '{"note":"\\u0000"}' },
      problem: "nul_character",
    },
    {
      label: "\\u0000 in arguments that need approval",
      call: { tool: "aps_schedule_publish", arguments: '{"note":"\\u0000"}' },
      problem: "nul_character",
    },
    {
      label: "arguments one character over the Approval's limit",
      call: {
        tool: "aps_schedule_publish",
        arguments: canonicalJson({ note: "x".repeat(MAX_APPROVAL_ARGUMENTS_LENGTH - 10) }),
      },
      problem: "too_large_for_approval",
    },
  ];

  it.each(cases.map((c, position) => ({ ...c, position })))(
    "answers $label invalid_arguments, with an audit row and no execution or reservation",
    async ({ call, problem, position }) => {
      const world = worldOnPostgres();
      const before = {
        executions: await count("executions"),
        reservations: await count("budget_reservations"),
      };
      const { answer } = await invoke(world.deps, TEST_SESSION, {
        turn: 0,
        position,
        callId: `call_${position}`,
        tool: "aps_schedule_read",
        arguments: "{}",
        ...call,
      });
      expect(answer).toMatchObject({ status: "invalid_arguments", errorKind: "invalid_arguments" });
      const audited = await db.admin.query<{ kind: string; payload: Record<string, unknown> }>(
        `SELECT kind, convert_from(canonical, 'UTF8')::jsonb -> 'payload' AS payload FROM audit_log
          WHERE session_uid = $1 ORDER BY seq DESC LIMIT 1`,
        [TEST_SESSION.uid],
      );
      expect(audited.rows[0]).toMatchObject({ kind: "invoke.invalid_arguments", payload: { problem } });
      expect(await count("executions")).toBe(before.executions);
      expect(await count("budget_reservations")).toBe(before.reservations);
      expect(world.approvals.size).toBe(0);
      expect(world.providerCalls).toEqual([]);
    },
  );
});

describe("text kept for reading holds U+FFFD where it held U+0000", () => {
  it("stores a transcript event whose call id, arguments and result hold U+0000", async () => {
    const store = createPostgresTranscriptStore(db.operator);
    await store.append({
      sessionUid: "s-nul",
      source: "core",
      kind: "tool_result",
      payload: { callId: "call_\u0000", content: "a\u0000b", "k\u0000": ["\u0000"] },
      atMicros: 1,
    });
    expect((await store.list("s-nul"))[0]?.payload).toEqual({
      callId: "call_\ufffd",
      content: "a\ufffdb",
      "k\ufffd": ["\ufffd"],
    });
  });

  it("records a provider's receipt whose result and message hold U+0000", async () => {
    const store = createPostgresExecutionStore(db.operator);
    const id = "f".repeat(40);
    const args = canonicalJson({ planId: "P-1" });
    await store.claim({
      id,
      idempotencyKey: `gh1.${id}`,
      session: { uid: "s-nul", namespace: "plant-a", name: "s1" },
      capability: "aps.schedule.read",
      providerRef: { namespace: "plant-a", name: "aps" },
      idempotency: "key",
      request: {
        executionId: id,
        idempotencyKey: `gh1.${id}`,
        capability: "aps.schedule.read",
        arguments: { planId: "P-1" },
        subject: { user: "alice", groups: [] },
      },
      argumentsCanonical: args,
      requestDigest: sha256Hex(args),
      leaseUntilMicros: 2_000_000_000_000_000,
      atMicros: 1_700_000_000_000_000,
    });
    const { recorded, execution } = await store.recordReceipt(
      id,
      {
        state: "succeeded",
        receipt: { status: "succeeded", result: { text: "line\u0000end", "k\u0000": 1 } },
        message: "said \u0000",
        atMicros: 1_700_000_000_000_001,
      },
      1,
    );
    expect(recorded).toBe(true);
    expect(execution.receipt).toEqual({
      status: "succeeded",
      result: { text: "line\ufffdend", "k\ufffd": 1 },
    });
    expect(execution.message).toBe("said \ufffd");
  });
});
