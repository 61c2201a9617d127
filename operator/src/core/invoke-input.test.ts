/**
 * Input that cannot be stored is refused before anything runs: a `callId`, `tool` or argument string
 * holding U+0000 (Postgres text and jsonb refuse it), and canonical arguments longer than an Approval's
 * `spec.arguments` holds on a call that needs approval. Each is answered `invalid_arguments` to the
 * model and audited; nothing is reserved, approved or executed.
 */
import { describe, expect, it } from "vitest";
import type { InvokeCall } from "../api/agent-protocol.ts";
import { MAX_APPROVAL_ARGUMENTS_LENGTH } from "../api/approval.ts";
import { AuditKind } from "./audit.ts";
import {
  auditPayloads,
  createInMemoryWorld,
  type InMemoryWorld,
  TEST_SESSION,
  testCapability,
} from "./in-memory-ports.ts";
import { invoke } from "./invoke.ts";

const schema = { type: "object", properties: { note: { type: "string" } } };
const read = testCapability({ id: "aps.schedule.read", effect: "read", inputSchema: schema });
const publish = testCapability({ id: "aps.schedule.publish", effect: "write", inputSchema: schema });

function world(): InMemoryWorld {
  const w = createInMemoryWorld();
  w.capabilities.push(read, publish);
  return w;
}

function call(overrides: Partial<InvokeCall>): InvokeCall {
  return { turn: 0, position: 0, callId: "call_0", tool: "aps_schedule_read", arguments: "{}", ...overrides };
}

/** Nothing happened but the refusal's audit record. */
function expectNothingRan(w: InMemoryWorld): void {
  expect(w.executions.size).toBe(0);
  expect(w.approvals.size).toBe(0);
  expect(w.providerCalls).toEqual([]);
  expect(w.reservations).toEqual([]);
}

/** `{"note":"xxx…"}` whose canonical text is exactly `length` characters. */
function argumentsOfLength(length: number): string {
  return JSON.stringify({ note: "x".repeat(length - '{"note":""}'.length) });
}

describe("U+0000 in a call", () => {
  it.each([
    ["callId", { callId: "call\u00000" }],
    ["tool", { tool: "aps_schedule_read\u0000" }],
  ] as const)(
    "answers a %s holding U+0000 invalid_arguments, audited, and runs nothing",
    async (field, bad) => {
      const w = world();
      const { answer, decision } = await invoke(w.deps, TEST_SESSION, call(bad));
      expect(decision).toBe("invalid_arguments");
      expect(answer).toMatchObject({ status: "invalid_arguments", errorKind: "invalid_arguments" });
      expect(answer.content).toMatch(new RegExp(`${field} contains U\\+0000`));
      expect(auditPayloads(w, AuditKind.invalidArguments)).toEqual([
        expect.objectContaining({ problem: "nul_character", field }),
      ]);
      expect(JSON.stringify(auditPayloads(w, AuditKind.invalidArguments))).not.toContain("\\u0000");
      expectNothingRan(w);
    },
  );

  it.each([
    ["auto-allowed", "aps_schedule_read"],
    ["approval-required", "aps_schedule_publish"],
  ])(
    "answers %s arguments holding \\u0000 invalid_arguments, naming the path, and runs nothing",
    async (_, tool) => {
      const w = world();
      const { answer } = await invoke(
        w.deps,
        TEST_SESSION,
        call({ tool, arguments: '{"note":"a\\u0000b"}' }),
      );
      expect(answer.status).toBe("invalid_arguments");
      expect(answer.content).toMatch(/\$\.note contains U\+0000/);
      expect(auditPayloads(w, AuditKind.invalidArguments).map((p) => p.problem)).toEqual(["nul_character"]);
      expectNothingRan(w);
    },
  );
});

describe("arguments longer than an Approval holds", () => {
  it("answers a call that needs approval with one character too many invalid_arguments, and requests nothing", async () => {
    const w = world();
    const args = argumentsOfLength(MAX_APPROVAL_ARGUMENTS_LENGTH + 1);
    const { answer } = await invoke(
      w.deps,
      TEST_SESSION,
      call({ tool: "aps_schedule_publish", arguments: args }),
    );
    expect(answer.status).toBe("invalid_arguments");
    expect(answer.content).toMatch(/65537 characters .* at most 65536/);
    expect(auditPayloads(w, AuditKind.invalidArguments)).toEqual([
      expect.objectContaining({ problem: "too_large_for_approval", capability: "aps.schedule.publish" }),
    ]);
    expect(auditPayloads(w, AuditKind.approvalRequested)).toEqual([]);
    expectNothingRan(w);
  });

  it("requests an Approval for arguments of exactly the limit", async () => {
    const w = world();
    const args = argumentsOfLength(MAX_APPROVAL_ARGUMENTS_LENGTH);
    const { answer } = await invoke(
      w.deps,
      TEST_SESSION,
      call({ tool: "aps_schedule_publish", arguments: args }),
    );
    expect(answer.status).toBe("pending_approval");
    expect([...w.approvals.values()][0]?.request.arguments).toHaveLength(MAX_APPROVAL_ARGUMENTS_LENGTH);
  });

  it("runs an auto-allowed call with longer arguments: no Approval has to hold them", async () => {
    const w = world();
    const args = argumentsOfLength(MAX_APPROVAL_ARGUMENTS_LENGTH + 1);
    const { answer } = await invoke(w.deps, TEST_SESSION, call({ arguments: args }));
    expect(answer.status).toBe("succeeded");
  });
});
