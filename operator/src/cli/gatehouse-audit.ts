#!/usr/bin/env node
/**
 * `gatehouse-audit` — reads the audit chain in the Postgres named by `DATABASE_URL` (DESIGN §6).
 *
 * `gatehouse-audit verify [--from SEQ] [--json] [--kubeconfig FILE] [--context NAME] [--namespace NS] [--witness-file FILE] [--trust-kid KID]…`
 * verifies the chain: every hash recomputed from the stored bytes, every link, every column against
 * the hashed bytes, sequence gaps, and the head against the last checkpoint. With `--kubeconfig`,
 * `--context` or `--namespace` it also compares the chain with every checkpoint the witness keeps
 * outside Postgres, in the ConfigMap `gatehouse-audit-checkpoints` of the operator's namespace (default
 * gatehouse-system; the kubeconfig defaults to $KUBECONFIG, else ~/.kube/config), and checks each
 * one's signature against the public keys published there (`unsigned (legacy)` for checkpoints
 * written before signing is not a failure). `--witness-file FILE` reads that ConfigMap from a copy
 * instead (`kubectl get configmap gatehouse-audit-checkpoints -o json`), for an archived one.
 * `--trust-kid KID` (repeatable) checks signatures against those witness keys only, not whatever keys
 * the ConfigMap lists (whoever may update it may list their own). A progress bar is
 * drawn on stderr when it is a terminal; the verdict goes to stdout (`--json`: the whole report).
 * Exit codes: 0 the chain is intact; 1 it is broken (tampering or loss detected); 2 usage error,
 * missing `DATABASE_URL`, the database or the ConfigMap could not be read (a ConfigMap asked for
 * but absent is such an error: there is nothing to compare with).
 *
 * `gatehouse-audit show --approval NAME [--namespace NS] [--json]` prints one Approval's whole
 * history from the chain alone — request, decisions, outcome, execution — also after its session and
 * the Approval are deleted (`cli/approval-history.ts`). Here `--namespace` is the Approval's; without
 * it every namespace's Approval NAME is shown, each headed by its namespace. Exit codes: 0 printed;
 * 1 no record names that Approval; 2 usage error, missing `DATABASE_URL`, the database could not be read.
 *
 * `gatehouse-audit lifecycle [--kubeconfig FILE] [--context NAME] [--json]` checks that no Approval
 * request is left without an end: every `approval.requested` after the lifecycle marker has its end in
 * the chain, or its Approval is still in the cluster (`cli/lifecycle-report.ts`), and that no approved
 * call started without an `approval.requested` before it. Exit codes: 0 every request has an end or a
 * live Approval and every dispatch a request; 1 some end is lost, or some dispatch has no request
 * (each is named); 2 usage error, missing `DATABASE_URL`, the database or the API server could not
 * be read.
 *
 * `DATABASE_URL` needs SELECT on `audit_log` and `audit_checkpoints` (the operator role has it); the
 * kubeconfig's user needs `get` on that ConfigMap (verify) or on approvals (lifecycle).
 *
 * This entry point runs the commands; their usage text and argument parsing are in audit-arguments.ts.
 */
import { readFile } from "node:fs/promises";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { APPROVAL, type Approval, GROUP, VERSION } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import type { WitnessDocument } from "../core/witness.ts";
import { checkSignatures, type SignatureCheck, trustedWitnessKeys } from "../core/witness-signature.ts";
import { CHECKPOINTS_CONFIGMAP, decodeWitnessDocument } from "../kube/witness/configmap-data.ts";
import {
  readApprovalRecords,
  readOpenRequests,
  readUnrequestedDispatches,
} from "../store/approval-records.ts";
import { createPostgresAuditLog } from "../store/audit/log.ts";
import { createPool } from "../store/pool.ts";
import { approvalHistoryLines, approvalHistoryOf } from "./approval-history.ts";
import { type KubeconfigSource, parseCommand, type ShowCommand, USAGE } from "./audit-arguments.ts";
import {
  type ApprovalLookup,
  approvalKey,
  lifecycleReportLines,
  lifecycleReportOf,
} from "./lifecycle-report.ts";
import { ProgressBar } from "./progress-bar.ts";
import { verifyReportLines } from "./verify-report-text.ts";

/**
 * The tool's pool: no statement timeout — its reads scan the whole audit log, which may take longer
 * than the runtime's bound on a long chain, and the operator running it ends it with Ctrl-C.
 */
const AUDIT_POOL = { max: 2, statementTimeoutMs: 0 };

/** Exit codes of the command (`show`: 0 printed, 1 no record names the Approval). */
const EXIT = { intact: 0, broken: 1, error: 2 } as const;

/**
 * The Kubernetes client, loaded only by the commands that reach the API server: loading it takes
 * longer than verifying a small chain, and `show` or `verify --witness-file` never need it.
 */
async function kubeClient() {
  const [client, { readCheckpointConfigMap }, { CoreV1Api }] = await Promise.all([
    import("../kube/runtime/client.ts"),
    import("../kube/witness/configmap.ts"),
    import("@kubernetes/client-node"),
  ]);
  return { ...client, readCheckpointConfigMap, CoreV1Api };
}

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed: ReturnType<typeof parseCommand>;
  try {
    parsed = parseCommand(argv);
  } catch (error) {
    process.stderr.write(`gatehouse-audit: ${(error as Error).message}\n${USAGE}\n`);
    return EXIT.error;
  }
  if (parsed.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.intact;
  }
  const url = env.DATABASE_URL;
  if (!url) {
    process.stderr.write(
      `gatehouse-audit: DATABASE_URL is not set: set it to the URL of a login that may SELECT the audit tables (the controller's runtime login has it)\n${USAGE}\n`,
    );
    return EXIT.error;
  }
  if (parsed.show) return showApproval(url, parsed.show);
  if (parsed.lifecycle) return checkLifecycle(url, parsed.lifecycle, parsed.json);

  let witness: WitnessDocument | undefined;
  let outsideName: string | undefined;
  if (parsed.witnessFile !== undefined) {
    outsideName = `witness file ${parsed.witnessFile}`;
    try {
      const configMap = JSON.parse(await readFile(parsed.witnessFile, "utf8")) as V1ConfigMap;
      witness = decodeWitnessDocument(configMap.data, outsideName);
    } catch (error) {
      process.stderr.write(
        `gatehouse-audit: cannot read ${outsideName}: ${(error as Error).message} (it must be the ConfigMap as JSON: kubectl get configmap ${CHECKPOINTS_CONFIGMAP} -o json)\n`,
      );
      return EXIT.error;
    }
  } else if (parsed.configMap) {
    const { kubeconfig, context, namespace } = parsed.configMap;
    const where = `ConfigMap ${namespace}/${CHECKPOINTS_CONFIGMAP}`;
    outsideName = where;
    const { CoreV1Api, describeApiError, loadKubeConfig, readCheckpointConfigMap } = await kubeClient();
    try {
      const api = loadKubeConfig(kubeconfig, context, "gatehouse-audit").makeApiClient(CoreV1Api);
      const read = await readCheckpointConfigMap(api, namespace);
      if (!read) {
        process.stderr.write(
          `gatehouse-audit: ${where} does not exist: no checkpoints outside Postgres to compare with (was it deleted, or has the operator not published yet?)\n`,
        );
        return EXIT.error;
      }
      witness = read.document;
    } catch (error) {
      process.stderr.write(
        `gatehouse-audit: cannot read ${where}: ${describeApiError(error)}; verify as someone who may get that ConfigMap, or without --kubeconfig/--context/--namespace to check the chain in Postgres alone\n`,
      );
      return EXIT.error;
    }
  }
  let signatures: SignatureCheck[] = [];
  if (witness && outsideName) {
    const trust = trustedWitnessKeys(witness.keys, parsed.trustKids);
    signatures = checkSignatures(witness.checkpoints, trust.keys, trust.signingBegan);
    const seqs = witness.checkpoints.map((c) => c.seq);
    const signed = signatures.filter((c) => c.status === "valid").length;
    // --json: stdout holds the report only.
    (parsed.json ? process.stderr : process.stdout).write(
      `${outsideName}: ${seqs.length} checkpoints${seqs.length ? ` (seq ${Math.min(...seqs)}..${Math.max(...seqs)})` : ""}, ${signed} signed, ${witness.keys.length} witness keys${witness.keys.length ? ` (${witness.keys.map((k) => `${k.kid} since ${k.createdAt}`).join(", ")})` : ""}\n`,
    );
  }

  const pool = createPool(url, AUDIT_POOL);
  const bar = new ProgressBar(process.stderr, "verify");
  try {
    const report = await createPostgresAuditLog(pool).verify({
      fromSeq: parsed.fromSeq,
      checkpoints: witness?.checkpoints ?? [],
      signatures,
      onProgress: (p) => bar.update(p.verified, Math.max(p.headSeq - p.fromSeq + 1, p.verified)),
    });
    bar.finish();
    const text = parsed.json
      ? JSON.stringify(report, null, 2)
      : verifyReportLines(report, outsideName).join("\n");
    process.stdout.write(`${text}\n`);
    return report.ok ? EXIT.intact : EXIT.broken;
  } catch (error) {
    bar.finish();
    const where = new URL(url).host || "DATABASE_URL";
    process.stderr.write(
      `gatehouse-audit: cannot verify the audit log at ${where}: ${(error as Error).message}\n`,
    );
    return EXIT.error;
  } finally {
    await pool.end();
  }
}

/** Prints the history of the Approval `show` names; resolves with the exit code. */
async function showApproval(url: string, show: ShowCommand): Promise<number> {
  const pool = createPool(url, AUDIT_POOL);
  try {
    const found = await readApprovalRecords(pool, show);
    if (found.histories.length === 0) {
      const where = show.namespace !== undefined ? ` in namespace ${show.namespace}` : " in any namespace";
      process.stderr.write(
        `gatehouse-audit: no audit records name Approval ${show.name}${where}; check the name ` +
          "(kubectl gatehouse pending -A, or the agent's pending_approval answer) and that DATABASE_URL is the operator's database\n",
      );
      return EXIT.broken;
    }
    const histories = found.histories.map((h) => approvalHistoryOf(h, found.lifecycleMarkerSeq));
    const text = show.json
      ? JSON.stringify({ histories }, null, 2)
      : histories.map((h) => approvalHistoryLines(h).join("\n")).join("\n\n");
    process.stdout.write(`${text}\n`);
    return EXIT.intact;
  } catch (error) {
    const where = new URL(url).host || "DATABASE_URL";
    process.stderr.write(
      `gatehouse-audit: cannot read the audit log at ${where}: ${(error as Error).message}\n`,
    );
    return EXIT.error;
  } finally {
    await pool.end();
  }
}

/** Checks that every Approval request has an end or a live Approval; resolves with the exit code. */
async function checkLifecycle(url: string, cluster: KubeconfigSource, json: boolean): Promise<number> {
  const { describeApiError, isNotFound, loadKubeConfig, makeClients } = await kubeClient();
  const pool = createPool(url, AUDIT_POOL);
  try {
    const found = await readOpenRequests(pool);
    const clients = makeClients(loadKubeConfig(cluster.kubeconfig, cluster.context, "gatehouse-audit"));
    const lookups = new Map<string, ApprovalLookup>();
    for (const request of found.open) {
      const key = approvalKey(request);
      if (lookups.has(key)) continue;
      try {
        const approval = (await clients.custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: request.namespace,
          plural: APPROVAL.plural,
          name: request.name,
        })) as Approval;
        lookups.set(key, {
          found: true,
          phase: approval.status?.phase ?? ApprovalPhase.Pending,
          ...(approval.metadata.uid ? { uid: approval.metadata.uid } : {}),
        });
      } catch (error) {
        if (!isNotFound(error)) throw new Error(`cannot read Approval ${key}: ${describeApiError(error)}`);
        lookups.set(key, { found: false });
      }
    }
    const unrequested = await readUnrequestedDispatches(pool, found.lifecycleMarkerSeq);
    const report = lifecycleReportOf(found, lookups, unrequested);
    const text = json ? JSON.stringify(report, null, 2) : lifecycleReportLines(report).join("\n");
    process.stdout.write(`${text}\n`);
    return report.ok ? EXIT.intact : EXIT.broken;
  } catch (error) {
    process.stderr.write(
      `gatehouse-audit: cannot check the Approval lifecycles: ${(error as Error).message}\n`,
    );
    return EXIT.error;
  } finally {
    await pool.end();
  }
}

process.exitCode = await main(process.argv.slice(2), process.env);
