/**
 * Audit checkpoints outside Postgres (DESIGN §6) on the real control plane: after a real session
 * (the reference story), the witness's ConfigMap `gatehouse-system/gatehouse-audit-checkpoints` holds
 * the chain head, signed with the key in Secret `gatehouse-audit-witness-key`, and its public key;
 * `gatehouse-audit verify` compares the chain with every checkpoint kept there and checks each
 * signature; a checkpoint forged by someone who can write the ConfigMap but not read the Secret, or
 * one the database cannot match — a different hash for a seq, or a seq beyond its head — is reported
 * as a broken chain, and the operator stops publishing over it. The audit tables refuse UPDATE/DELETE,
 * so the tampering is staged on the ConfigMap side: what verification sees is the same disagreement
 * (test/integration/audit-checkpoints.test.ts rewrites the chain itself).
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newWitnessKey, privateKeyOf, signCheckpoint } from "../../operator/src/core/witness-signature.ts";
import { microsOf } from "../../operator/src/kube/witness/configmap-data.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually, forgetEarlierCheckpoints, playReferenceStory, runAuditCli } from "./story.ts";

const OPERATOR_NAMESPACE = "gatehouse-system";
const CONFIGMAP = "gatehouse-audit-checkpoints";

interface StoredCheckpoint {
  seq: number;
  hash: string;
  at: string;
  kid?: string;
  sig?: string;
}

const WITNESS_SECRET = "gatehouse-audit-witness-key";

/** The ConfigMap's data as admin reads it. */
async function configMapData(): Promise<Record<string, string>> {
  const configMap = await env.kubectl.json<{ data?: Record<string, string> }>("admin", [
    "get",
    "configmap",
    CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
  ]);
  return configMap.data ?? {};
}

/** The operator's metric `name` (no labels) from its health server. */
async function metric(name: string): Promise<number | undefined> {
  const text = await (await fetch(`${env.controller.healthUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : undefined;
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
  env = await startEnvironment(clusterInfo(), { componentEnv: { AUDIT_CHECKPOINT_INTERVAL_SECONDS: "1" } });
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
  it("hold the chain head after a session, written by the controller (its User-Agent names the manager)", async () => {
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
    expect(configMap.metadata.managedFields?.map((f) => f.manager)).toContain("gatehouse-controller");
  });

  it("are signed with the witness's key, whose public part only is published beside them", async () => {
    const data = await configMapData();
    const keys = JSON.parse(data["keys.json"] ?? "[]") as Array<{
      kid: string;
      publicJwk: Record<string, string>;
    }>;
    expect(keys).toHaveLength(1);
    expect(Object.keys(keys[0]!.publicJwk).sort()).toEqual(["crv", "kty", "x"]);
    const latest = (await configMapCheckpoints())?.at(-1);
    expect(latest?.kid).toBe(keys[0]!.kid);
    expect(latest?.sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    // The private key is in the Secret only, which the controller created.
    const secret = await env.kubectl.json<{
      data: Record<string, string>;
      metadata: { managedFields?: Array<{ manager?: string }> };
    }>("admin", ["get", "secret", WITNESS_SECRET, "-n", OPERATOR_NAMESPACE, "--show-managed-fields"]);
    const stored = JSON.parse(Buffer.from(secret.data["keys.json"]!, "base64").toString()) as Array<{
      kid: string;
      privateJwk?: { d: string };
    }>;
    expect(stored.map((k) => k.kid)).toEqual([keys[0]!.kid]);
    expect(JSON.stringify(data)).not.toContain(stored[0]!.privateJwk!.d);
    expect(secret.metadata.managedFields?.map((f) => f.manager)).toContain("gatehouse-controller");
    expect(await metric("gatehouse_audit_witness_mismatch")).toBe(0);
  });

  it("keep the signing key from people without get on its Secret", async () => {
    for (const user of ["alice", "carol"]) {
      const got = await env.kubectl.run(user, [
        "get",
        "secret",
        WITNESS_SECRET,
        "-n",
        OPERATOR_NAMESPACE,
        "-o",
        "json",
      ]);
      expect(got.code).not.toBe(0);
      expect(got.stderr).toMatch(/forbidden/i);
    }
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

  it("report a checkpoint signed by another key as a failure, and the operator publishes nothing over it", async () => {
    const checkpoints = (await configMapCheckpoints()) ?? [];
    const head = await chainHead();
    // Someone who may write the ConfigMap but not read the Secret signs with a key of their own.
    const theirs = newWitnessKey(new Date());
    const at = checkpoints.at(-1)!.at;
    const forged = signCheckpoint(
      { seq: head.seq + 1, headHash: "cd".repeat(32), atMicros: microsOf(at) },
      { kid: theirs.kid, privateKey: privateKeyOf(theirs.privateJwk!) },
    );
    await writeConfigMapCheckpoints([
      ...checkpoints,
      { seq: forged.seq, hash: forged.headHash, at, kid: forged.kid!, sig: forged.sig! },
    ]);
    const run = await runAuditCli(env);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `checkpoint seq ${forged.seq} (ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}): missing`,
    );
    expect(run.stdout).toContain(`SIGNATURE FAILED (unknown_kid): signed by kid ${theirs.kid}`);
    // The witness refuses: the forged entry stays, nothing newer is added, the metric says so.
    await eventually("the witness to refuse", 30_000, async () =>
      (await metric("gatehouse_audit_witness_mismatch")) === 1 ? true : undefined,
    );
    expect(await metric("gatehouse_audit_witness_mismatch_seq")).toBe(forged.seq);
    expect((await configMapCheckpoints())?.at(-1)?.seq).toBe(forged.seq);
    // A person intervenes: the forged entry is removed, and the witness publishes again.
    await writeConfigMapCheckpoints(checkpoints);
    await eventually("the witness to agree again", 30_000, async () =>
      (await metric("gatehouse_audit_witness_mismatch")) === 0 ? true : undefined,
    );
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
    expect(run.stdout).toContain(
      `first checkpoint that disagrees: seq ${target!.seq} (ConfigMap ${OPERATOR_NAMESPACE}/${CONFIGMAP}): the chain holds another hash there`,
    );
    expect(run.stdout).toContain("SIGNATURE FAILED (bad_signature)");
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
