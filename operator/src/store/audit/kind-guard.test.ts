import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditKind, GATEWAY_AUDIT_KINDS } from "../../core/audit.ts";
import { MIGRATIONS_DIR } from "../migrate.ts";

/** The `gateway_kinds` of the newest migration that (re)defines the guard, and its file name. */
function guardedKinds(): { file: string; kinds: string[] } {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith(".sql"))
    .sort()
    .reverse();
  for (const file of files) {
    const up = readFileSync(join(MIGRATIONS_DIR, file), "utf8").split("-- Down Migration")[0] ?? "";
    const list = /gateway_kinds CONSTANT text\[\] := ARRAY\[([^\]]*)\]/.exec(up)?.[1];
    if (list !== undefined) return { file, kinds: [...list.matchAll(/'([^']*)'/g)].map((m) => m[1] ?? "") };
  }
  throw new Error("no migration defines gatehouse_audit_kind_guard's gateway_kinds");
}

describe("the gateway's audit kinds", () => {
  it("are the kinds the newest migration's guard lets a gateway login append", () => {
    const { kinds } = guardedKinds();
    expect([...kinds].sort()).toEqual([...GATEWAY_AUDIT_KINDS].sort());
  });

  it("are kinds Core emits, each once", () => {
    expect(new Set(GATEWAY_AUDIT_KINDS).size).toBe(GATEWAY_AUDIT_KINDS.length);
    const known = new Set<string>(Object.values(AuditKind));
    expect(GATEWAY_AUDIT_KINDS.filter((kind) => !known.has(kind))).toEqual([]);
  });

  it("leave every decision, end and dispatch refusal of an Approval to the controller", () => {
    const controllers = [
      AuditKind.approvalDecided,
      AuditKind.approvalApproved,
      AuditKind.approvalRejected,
      AuditKind.approvalExpired,
      AuditKind.approvalCancelled,
      AuditKind.approvalStale,
      AuditKind.approvalFailed,
      AuditKind.approvalRefused,
      AuditKind.decisionIgnored,
      AuditKind.executionResolved,
      AuditKind.executionSettling,
    ];
    expect(controllers.filter((kind) => GATEWAY_AUDIT_KINDS.includes(kind))).toEqual([]);
  });
});
