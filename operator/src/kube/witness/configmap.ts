/**
 * The audit witness's document in ConfigMap `gatehouse-audit-checkpoints` of the operator's namespace
 * (DESIGN §6): signed checkpoints of the audit chain head and the public keys that check them, outside
 * Postgres, so that truncating or rewriting `audit_log` (and `audit_checkpoints` with it) is detectable
 * by someone who can read the API server but does not trust the database. The witness itself
 * (continuity, retention, signing) is `core/witness.ts`; this file reads and writes its document.
 * The data's keys and encoding are `configmap-data.ts`.
 *
 * Writes are optimistic, as client-go's `retry.RetryOnConflict`: create (absent) or update carrying
 * the read resourceVersion; a 409 makes the witness read and check again. Content that does not parse
 * is never overwritten: the ConfigMap is evidence.
 */
import type { CoreV1Api, V1ConfigMap } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { CHECKPOINTS_CONFIGMAP } from "../../api/rbac.ts";
import { GatehouseError } from "../../core/errors.ts";
import {
  type CheckpointPublisher,
  type WitnessDocument,
  type WitnessDocuments,
  type WitnessMetrics,
  type WitnessSigner,
  witnessPublisher,
} from "../../core/witness.ts";
import { describeApiError, isConflict, isNotFound } from "../runtime/client.ts";
import {
  CHECKPOINTS_KEY,
  decodeWitnessDocument,
  encodeCheckpoints,
  encodeWitnessKeys,
  WITNESS_KEYS_KEY,
} from "./configmap-data.ts";

/**
 * Reads the witness document in `namespace`'s ConfigMap; undefined when the ConfigMap does not
 * exist. Errors: the API error (e.g. 403 without RBAC get); `GatehouseError("conflict")` when its
 * content does not parse.
 */
export async function readCheckpointConfigMap(
  core: CoreV1Api,
  namespace: string,
): Promise<{ configMap: V1ConfigMap; document: WitnessDocument } | undefined> {
  let configMap: V1ConfigMap;
  try {
    configMap = await core.readNamespacedConfigMap({ name: CHECKPOINTS_CONFIGMAP, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const where = `ConfigMap ${namespace}/${CHECKPOINTS_CONFIGMAP}`;
  return { configMap, document: decodeWitnessDocument(configMap.data, where) };
}

/** The {@link WitnessDocuments} of ConfigMap `gatehouse-audit-checkpoints` in `namespace`: get, create and update on it. */
export function configMapWitnessDocuments(core: CoreV1Api, namespace: string): WitnessDocuments {
  const where = `ConfigMap ${namespace}/${CHECKPOINTS_CONFIGMAP}`;
  const current = new Map<string, V1ConfigMap>();

  const body = (document: WitnessDocument, read: V1ConfigMap | undefined): V1ConfigMap => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: CHECKPOINTS_CONFIGMAP,
      namespace,
      // The read object's resourceVersion: a concurrent write makes the update a 409.
      ...(read?.metadata?.resourceVersion ? { resourceVersion: read.metadata.resourceVersion } : {}),
      labels: { ...(read?.metadata?.labels ?? {}), "app.kubernetes.io/part-of": "gatehouse" },
      ...(read?.metadata?.annotations ? { annotations: read.metadata.annotations } : {}),
    },
    data: {
      ...(read?.data ?? {}),
      [CHECKPOINTS_KEY]: encodeCheckpoints(document.checkpoints),
      [WITNESS_KEYS_KEY]: encodeWitnessKeys(document.keys),
    },
  });

  return {
    where,
    async read() {
      let read: Awaited<ReturnType<typeof readCheckpointConfigMap>>;
      try {
        read = await readCheckpointConfigMap(core, namespace);
      } catch (error) {
        if (error instanceof GatehouseError) throw error;
        throw new GatehouseError("unavailable", `cannot read ${where}: ${describeApiError(error)}`, {
          cause: error,
        });
      }
      if (!read) return undefined;
      const version = read.configMap.metadata?.resourceVersion ?? "";
      current.clear();
      current.set(version, read.configMap);
      return { document: read.document, version };
    },
    async write(document, version) {
      const read = version === undefined ? undefined : current.get(version);
      try {
        if (read) {
          await core.replaceNamespacedConfigMap({
            name: CHECKPOINTS_CONFIGMAP,
            namespace,
            body: body(document, read),
          });
        } else {
          await core.createNamespacedConfigMap({ namespace, body: body(document, undefined) });
        }
        return "written";
      } catch (error) {
        if (isConflict(error)) return "conflict";
        throw new GatehouseError("unavailable", `cannot write ${where}: ${describeApiError(error)}`, {
          cause: error,
        });
      }
    },
  };
}

/** Options of {@link configMapCheckpoints}. */
export interface ConfigMapCheckpointOptions {
  /** The operator's namespace (config.leaderElection.namespace). */
  namespace: string;
  /** The witness's keys (`kube/witness/key.ts`). */
  signer: WitnessSigner;
  /**
   * Whether this replica should write (default: always). The operator passes "holds the Lease": every
   * replica runs the checkpointer, only the leader reads its key and writes the ConfigMap.
   */
  isLeader?: () => boolean;
  metrics?: WitnessMetrics;
  log?: Pick<Logger, "info" | "warn" | "error">;
}

/**
 * The witness over ConfigMap `gatehouse-audit-checkpoints` (`core/witness.ts`). `publish` needs RBAC
 * get, create and update on the ConfigMap in `options.namespace` and what the signer needs; `list`
 * needs get. Errors: `unavailable` for API errors, `conflict` for content that does not parse (it is
 * then left alone) or after repeated conflicting writes.
 */
export function configMapCheckpoints(
  core: CoreV1Api,
  options: ConfigMapCheckpointOptions,
): CheckpointPublisher {
  return witnessPublisher({
    documents: configMapWitnessDocuments(core, options.namespace),
    signer: options.signer,
    ...(options.isLeader ? { isActive: options.isLeader } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}
