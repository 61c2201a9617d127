/**
 * Audit checkpoints outside Postgres (DESIGN §6): the ConfigMap `gatehouse-audit-checkpoints` in the
 * operator's namespace keeps the last N checkpoints of the audit chain head, so that truncating or
 * rewriting `audit_log` (and `audit_checkpoints` with it) is detectable by someone who can read the
 * API server but does not trust the database. It implements the store's `CheckpointPublisher` port.
 *
 * Shape: `data["checkpoints.json"]` is a JSON array, ascending by seq, of
 *   { "seq": 123, "hash": "<64 hex: the hash of record 123>", "at": "2026-11-29T10:00:00.123456Z" }
 * (`at`: when the checkpoint was taken, RFC 3339 with microseconds, as metav1.MicroTime).
 *
 * Writes are optimistic, as client-go's `retry.RetryOnConflict`: read, merge, then create (absent) or
 * update carrying the read resourceVersion; a 409 re-reads and merges again. A seq already kept is
 * never overwritten: the ConfigMap is a witness, and a different hash for a seq it holds means one
 * of the two copies was rewritten — that is logged as an error and left for `gatehouse-audit verify`
 * to report, never "repaired".
 */
import type { CoreV1Api, V1ConfigMap } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { z } from "zod";
import type { AuditCheckpoint } from "../core/audit.ts";
import { GatehouseError } from "../core/errors.ts";
import type { CheckpointPublisher } from "../store/checkpoint-publisher.ts";
import { describeApiError, isConflict, isNotFound } from "./client.ts";

/** The ConfigMap's name (DESIGN §6). */
export const CHECKPOINTS_CONFIGMAP = "gatehouse-audit-checkpoints";
/** The data key holding the checkpoints. */
export const CHECKPOINTS_KEY = "checkpoints.json";
/** How many checkpoints the ConfigMap keeps by default (the most recent by seq). */
export const DEFAULT_CHECKPOINTS_KEPT = 50;
/** Read-merge-write rounds before a publish gives up on repeated 409 Conflicts. */
const MAX_ATTEMPTS = 5;

const MICRO_TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})(\d{3})Z$/;

/** One checkpoint as the ConfigMap stores it. */
const StoredCheckpoint = z
  .object({
    seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    hash: z.string().regex(/^[0-9a-f]{64}$/, "64 lowercase hex digits"),
    at: z.string().regex(MICRO_TIME, "RFC 3339 UTC with six fractional digits"),
  })
  .strict();
const StoredCheckpoints = z.array(StoredCheckpoint);
type StoredCheckpoint = z.infer<typeof StoredCheckpoint>;

/** `micros` (µs since the epoch) as RFC 3339 UTC with six fractional digits, e.g. `…T10:00:00.123456Z`. */
export function microTimeOf(micros: number): string {
  const millis = Math.floor(micros / 1000);
  return `${new Date(millis).toISOString().slice(0, 23)}${String(micros - millis * 1000).padStart(3, "0")}Z`;
}

/** The inverse of {@link microTimeOf}. Errors: `invalid_arguments` for any other form. */
export function microsOf(microTime: string): number {
  const match = MICRO_TIME.exec(microTime);
  const millis = match ? Date.parse(`${match[1]}Z`) : Number.NaN;
  if (!match || Number.isNaN(millis)) {
    throw new GatehouseError("invalid_arguments", `${microTime} is not RFC 3339 UTC with microseconds`);
  }
  return millis * 1000 + Number(match[2]);
}

/**
 * Parses the ConfigMap's `checkpoints.json` (absent → none). Errors: `GatehouseError("conflict")`
 * naming the ConfigMap when the text is not a list of checkpoints — someone edited it by hand.
 */
export function decodeCheckpoints(text: string | undefined, where: string): AuditCheckpoint[] {
  if (text === undefined || text.trim() === "") return [];
  let parsed: StoredCheckpoint[];
  try {
    parsed = StoredCheckpoints.parse(JSON.parse(text));
  } catch (error) {
    throw new GatehouseError(
      "conflict",
      `${where} ${CHECKPOINTS_KEY} is not a JSON list of {seq, hash, at} checkpoints: ${error instanceof z.ZodError ? z.prettifyError(error) : String(error)}`,
      { cause: error },
    );
  }
  return parsed.map((c) => ({ seq: c.seq, headHash: c.hash, atMicros: microsOf(c.at) }));
}

/** The `checkpoints.json` text of `checkpoints`: one checkpoint per line, ascending by seq. */
export function encodeCheckpoints(checkpoints: AuditCheckpoint[]): string {
  const lines = [...checkpoints]
    .sort((a, b) => a.seq - b.seq)
    .map((c) => JSON.stringify({ seq: c.seq, hash: c.headHash, at: microTimeOf(c.atMicros) }));
  return `[\n${lines.join(",\n")}\n]\n`;
}

/** What merging a checkpoint into the kept ones gives. */
export interface MergedCheckpoints {
  /** The checkpoints to keep, ascending by seq, at most `keep`. */
  checkpoints: AuditCheckpoint[];
  /** Whether they differ from the existing ones (false → nothing to write). */
  changed: boolean;
  /** The kept checkpoint of the same seq when its hash differs from the new one's. */
  disagreement?: AuditCheckpoint;
}

/**
 * Adds `checkpoint` to `existing` unless that seq is kept already (idempotent per seq; an existing
 * entry wins), then keeps the `keep` highest seqs. Pure.
 */
export function mergeCheckpoints(
  existing: AuditCheckpoint[],
  checkpoint: AuditCheckpoint,
  keep: number,
): MergedCheckpoints {
  const same = existing.find((c) => c.seq === checkpoint.seq);
  const checkpoints = (same ? [...existing] : [...existing, checkpoint])
    .sort((a, b) => a.seq - b.seq)
    .slice(-keep);
  // Changed when the new one is kept, or old ones were dropped.
  const changed = checkpoints.length !== existing.length || (!same && checkpoints.includes(checkpoint));
  return {
    checkpoints,
    changed,
    ...(same && same.headHash !== checkpoint.headHash ? { disagreement: same } : {}),
  };
}

/**
 * Reads the checkpoints kept in `namespace`'s ConfigMap; undefined when the ConfigMap does not
 * exist. Errors: the API error (e.g. 403 without RBAC get); `GatehouseError("conflict")` when its
 * content does not parse.
 */
export async function readCheckpointConfigMap(
  core: CoreV1Api,
  namespace: string,
): Promise<{ configMap: V1ConfigMap; checkpoints: AuditCheckpoint[] } | undefined> {
  let configMap: V1ConfigMap;
  try {
    configMap = await core.readNamespacedConfigMap({ name: CHECKPOINTS_CONFIGMAP, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const where = `ConfigMap ${namespace}/${CHECKPOINTS_CONFIGMAP}`;
  return { configMap, checkpoints: decodeCheckpoints(configMap.data?.[CHECKPOINTS_KEY], where) };
}

/** Options of {@link configMapCheckpoints}. */
export interface ConfigMapCheckpointOptions {
  /** The operator's namespace (config.leaderElection.namespace). */
  namespace: string;
  /** How many checkpoints to keep (default {@link DEFAULT_CHECKPOINTS_KEPT}, at least 1). */
  keep?: number;
  /**
   * Whether this replica should write (default: always). The operator passes "holds the Lease": every
   * replica runs the checkpointer, only the leader writes the ConfigMap; a standby's publish is a no-op.
   */
  isLeader?: () => boolean;
  log?: Pick<Logger, "info" | "error">;
}

/**
 * The ConfigMap-backed {@link CheckpointPublisher}. `publish` needs RBAC get, create and update on
 * the ConfigMap in `options.namespace`; `list` needs get. Errors: `publish` and `list` throw the API
 * error (unavailable, forbidden), a `GatehouseError("conflict")` when the ConfigMap's content is not
 * ours to parse (it is then left alone), or after {@link MAX_ATTEMPTS} conflicting writes.
 */
export function configMapCheckpoints(
  core: CoreV1Api,
  options: ConfigMapCheckpointOptions,
): CheckpointPublisher {
  const { namespace } = options;
  const keep = Math.max(1, options.keep ?? DEFAULT_CHECKPOINTS_KEPT);
  const where = `ConfigMap ${namespace}/${CHECKPOINTS_CONFIGMAP}`;

  const body = (checkpoints: AuditCheckpoint[], current: V1ConfigMap | undefined): V1ConfigMap => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: CHECKPOINTS_CONFIGMAP,
      namespace,
      // The read object's resourceVersion: a concurrent write makes the update a 409.
      ...(current?.metadata?.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}),
      labels: { ...(current?.metadata?.labels ?? {}), "app.kubernetes.io/part-of": "gatehouse" },
      ...(current?.metadata?.annotations ? { annotations: current.metadata.annotations } : {}),
    },
    data: { ...(current?.data ?? {}), [CHECKPOINTS_KEY]: encodeCheckpoints(checkpoints) },
  });

  return {
    async publish(checkpoint) {
      if (options.isLeader && !options.isLeader()) return;
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        const read = await readCheckpointConfigMap(core, namespace);
        const current = read?.configMap;
        const merged = mergeCheckpoints(read?.checkpoints ?? [], checkpoint, keep);
        if (merged.disagreement) {
          options.log?.error(
            { seq: checkpoint.seq, configMap: merged.disagreement.headHash, postgres: checkpoint.headHash },
            `${where} holds a different hash for this seq than Postgres: one of them was rewritten; keeping the ConfigMap's (gatehouse-audit verify reports it)`,
          );
        }
        if (!merged.changed) return;
        try {
          if (current) {
            await core.replaceNamespacedConfigMap({
              name: CHECKPOINTS_CONFIGMAP,
              namespace,
              body: body(merged.checkpoints, current),
            });
          } else {
            await core.createNamespacedConfigMap({ namespace, body: body(merged.checkpoints, undefined) });
          }
          return;
        } catch (error) {
          if (!isConflict(error)) throw error;
          options.log?.info({ seq: checkpoint.seq, attempt }, `${where} changed meanwhile; merging again`);
        }
      }
      throw new GatehouseError(
        "conflict",
        `${where}: ${MAX_ATTEMPTS} writes of checkpoint ${checkpoint.seq} met a concurrent change`,
      );
    },
    async list() {
      try {
        return (await readCheckpointConfigMap(core, namespace))?.checkpoints ?? [];
      } catch (error) {
        if (error instanceof GatehouseError) throw error;
        throw new GatehouseError("unavailable", `cannot read ${where}: ${describeApiError(error)}`, {
          cause: error,
        });
      }
    },
  };
}
