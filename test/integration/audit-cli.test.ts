/** `gatehouse-audit verify` against a real Postgres: its verdict, its exit codes, `--from`. */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { auditEntry } from "./audit-entry.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const CLI = join(import.meta.dirname, "../../operator/src/cli/gatehouse-audit.ts");

/** Runs the command with `DATABASE_URL` set to `databaseUrl` (unset when undefined). */
function gatehouseAudit(args: string[], databaseUrl: string | undefined) {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  if (databaseUrl !== undefined) env.DATABASE_URL = databaseUrl;
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

let db: FreshDatabase;
beforeEach(async () => {
  db = await freshDatabase();
  const log = createPostgresAuditLog(db.operator);
  for (let i = 1; i <= 5; i++) await log.append(auditEntry(i));
  await log.checkpoint();
});
afterEach(async () => {
  await db?.drop();
});

async function tamperOutcome(seq: number): Promise<void> {
  const client = await db.owner.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE audit_log DISABLE TRIGGER USER");
    await client.query("UPDATE audit_log SET outcome = 'failure' WHERE seq = $1", [seq]);
    await client.query("ALTER TABLE audit_log ENABLE TRIGGER USER");
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

describe("gatehouse-audit verify", () => {
  it("exits 0 and says so when the chain is intact", async () => {
    const run = await gatehouseAudit(["verify"], db.operatorUrl);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^audit chain intact: 5 records from seq 1, head seq 5 /);
    expect(run.stdout).toContain("checkpoint seq 5 (Postgres audit_checkpoints): ok");
    expect(run.stderr).toBe(""); // not a terminal: no progress bar
  });

  it("exits 1 and names the first bad row when the chain is broken", async () => {
    await tamperOutcome(3);
    const run = await gatehouseAudit(["verify"], db.operatorUrl);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^AUDIT CHAIN BROKEN/);
    expect(run.stdout).toContain("first bad row: seq 3 (column_mismatch): column outcome is");
  });

  it("starts at --from SEQ, trusting the record before it", async () => {
    await tamperOutcome(2);
    const run = await gatehouseAudit(["verify", "--from", "3", "--json"], db.operatorUrl);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, fromSeq: 3, records: 3, head: { seq: 5 } });
  });

  it.each([
    ["DATABASE_URL is unset", ["verify"], undefined, /DATABASE_URL is not set/],
    [
      "--from is not a positive integer",
      ["verify", "--from", "0"],
      "db",
      /--from must be a positive integer/,
    ],
    [
      "--from is past the head",
      ["verify", "--from", "500000"],
      "db",
      /fromSeq 500000 is past the end of the chain \(head seq 5\): nothing would be verified/,
    ],
    ["the command is unknown", ["check"], "db", /unknown command check/],
    [
      "the witness file cannot be read",
      ["verify", "--witness-file", "/nonexistent/configmap.json"],
      "db",
      /cannot read witness file \/nonexistent\/configmap.json: .*kubectl get configmap gatehouse-audit-checkpoints -o json/,
    ],
    [
      "a witness file and a ConfigMap are both asked for",
      ["verify", "--witness-file", "cm.json", "--namespace", "gatehouse-system"],
      "db",
      /--witness-file reads the ConfigMap from a file: give it or --kubeconfig\/--context\/--namespace, not both/,
    ],
    [
      "--trust-kid is given without a witness to check",
      ["verify", "--trust-kid", "x".repeat(43)],
      "db",
      /--trust-kid checks the witness's signatures: give --kubeconfig\/--context\/--namespace or --witness-file too/,
    ],
    [
      "--trust-kid=KID names a key id beginning with - (read as the value, not an option) without a witness",
      ["verify", `--trust-kid=-${"x".repeat(42)}`],
      "db",
      /--trust-kid checks the witness's signatures: give --kubeconfig\/--context\/--namespace or --witness-file too/,
    ],
    [
      "--trust-kid is not a key id",
      ["verify", "--witness-file", "cm.json", "--trust-kid", "kPrK"],
      "db",
      /--trust-kid "kPrK" is not a witness key id \(43 base64url characters, as verify prints them\)/,
    ],
    ["the database does not answer", ["verify"], "postgres://nobody@127.0.0.1:1/none", /cannot verify/],
  ])("exits 2 when %s", async (_, args, url, message) => {
    const run = await gatehouseAudit(args, url === "db" ? db.operatorUrl : url);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });
});
