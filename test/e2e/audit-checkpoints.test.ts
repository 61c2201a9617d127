/**
 * Audit checkpoints outside Postgres (DESIGN §6) on the real control plane: after a real session
 * (the reference story), the operator's ConfigMap `gatehouse-system/gatehouse-audit-checkpoints` holds
 * the chain head; `gatehouse-audit verify` compares the chain with every checkpoint kept there; and a
 * checkpoint the database cannot match — a different hash for a seq, or a seq beyond its head — is
 * reported as a broken chain. The audit tables refuse UPDATE/DELETE, so the tampering is staged on the
 * ConfigMap side: what verification sees is the same disagreement.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually, forgetEarlierCheckpoints, playReferenceStory, runAuditCli } from "./story.ts";

const OPERATOR_NAMESPACE = "gatehouse-system";
const CONFIGMAP = "gatehouse-audit-checkpoints";

interface StoredCheckpoint {
  seq: number;
  hash: string;
  at: string;
}

let env: Environment;

/** The checkpoints in the ConfigMap, as admin reads them (undefined when it does not exist). */
async function configMapCheckpoints(): Promise<StoredCheckpoint[] | undefined> {
  const got = await env.kubectl.run("admin", [
    "get",
    "configmap",
    CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
    "-o",
    "json",
  ]);
  if (got.code !== 0) return undefined;
  const configMap = JSON.parse(got.stdout) as { data?: Record<string, string> };
  return JSON.parse(configMap.data?.["checkpoints.json"] ?? "[]") as StoredCheckpoint[];
}

/** Replaces the ConfigMap's checkpoints as admin (someone with write access to the operator's namespace). */
async function writeConfigMapCheckpoints(checkpoints: StoredCheckpoint[]): Promise<void> {
  await env.kubectl.ok("admin", [
    "patch",
    "configmap",
    CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
    "--type",
    "merge",
    "-p",
    JSON.stringify({ data: { "checkpoints.json": JSON.stringify(checkpoints) } }),
  ]);
}

/** The chain head in Postgres: the last record's seq and hash. */
async function chainHead(): Promise<{ seq: number; hash: string }> {
  const result = await env.pool.query<{ seq: string; hash: string }>(
    "SELECT seq, encode(hash, 'hex') AS hash FROM audit_log ORDER BY seq DESC LIMIT 1",
  );
  const row = result.rows[0];
  return row ? { seq: Number(row.seq), hash: row.hash } : { seq: 0, hash: "" };
}

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { operatorEnv: { AUDIT_CHECKPOINT_INTERVAL_SECONDS: "1" } });
  await forgetEarlierCheckpoints(env.kubectl);
  await env.kubectl.ok("admin", [
    "delete",
    "agentsession",
    "push-plan",
    "-n",
    NAMESPACE,
    "--ignore-not-found",
    "--timeout=120s",
  ]);
  await playReferenceStory(env, { say: () => {}, command: () => {} });
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

describe("audit checkpoints in the ConfigMap", () => {
  it("hold the chain head after a session, written by the operator's ServiceAccount", async () => {
    const { head, latest } = await eventually("the ConfigMap to hold the chain head", 60_000, async () => {
      const head = await chainHead();
      const latest = (await configMapCheckpoints())?.at(-1);
      return head.seq > 0 && latest?.seq === head.seq ? { head, latest } : undefined;
    });
    expect(latest.hash).toBe(head.hash);
    expect(latest.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const configMap = await env.kubectl.json<{ metadata: { managedFields?: Array<{ manager?: string }> } }>(
      "admin",
      ["get", "configmap", CONFIGMAP, "-n", OPERATOR_NAMESPACE, "--show-managed-fields"],
    );
    expect(configMap.metadata.managedFields?.map((f) => f.manager)).toContain("gatehouse-operator");
  });

  it("match the chain: gatehouse-audit verify compares with each of them and passes", async () => {
    const checkpoints = (await configMapCheckpoints()) ?? [];
    expect(checkpoints.length).toBeGreaterThan(0);
    const run = await runAuditCli(env);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}: ${checkpoints.length} checkpoints`,
    );
    expect(run.stdout).toMatch(/audit chain intact/);
    for (const checkpoint of checkpoints) {
      expect(run.stdout).toContain(
        `checkpoint seq ${checkpoint.seq} (ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}): ok`,
      );
    }
  });

  it("report a checkpoint whose hash the database does not hold as a rewritten chain", async () => {
    const checkpoints = (await configMapCheckpoints()) ?? [];
    const target = checkpoints[0];
    expect(target).toBeDefined();
    const forgedHash = createHash("sha256").update("a history that never was").digest("hex");
    await writeConfigMapCheckpoints(
      checkpoints.map((c) => (c.seq === target!.seq ? { ...c, hash: forgedHash } : c)),
    );
    const run = await runAuditCli(env);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^AUDIT CHAIN BROKEN/m);
    expect(run.stdout).toContain(
      `checkpoint seq ${target!.seq} (ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}): hash_mismatch — record ${target!.seq} hashes to`,
    );
    expect(run.stdout).toContain(`the checkpoint says ${forgedHash}: the chain was rewritten`);
    // The operator keeps the ConfigMap's entry rather than "repairing" the evidence.
    expect((await configMapCheckpoints())?.find((c) => c.seq === target!.seq)?.hash).toBe(forgedHash);
  });

  it("report a checkpoint beyond the database's head as records removed", async () => {
    const checkpoints = (await configMapCheckpoints()) ?? [];
    const head = await chainHead();
    const beyond = { seq: head.seq + 100, hash: "ab".repeat(32), at: checkpoints.at(-1)!.at };
    await writeConfigMapCheckpoints([...checkpoints, beyond]);
    const run = await runAuditCli(env);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `checkpoint seq ${beyond.seq} (ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}): missing — checkpoint at seq ${beyond.seq} but the chain ends at seq ${head.seq}: records were removed`,
    );
  });
});
