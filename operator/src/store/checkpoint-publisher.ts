/**
 * The port through which audit checkpoints leave Postgres (DESIGN §6). A checkpoint stored only in
 * the database it vouches for proves nothing against someone who can rewrite that database; a copy
 * elsewhere does. The operator implements this port as the ConfigMap `gatehouse-audit-checkpoints`
 * keeping the last N checkpoints; `verify({ checkpoints: await publisher.list() })` then compares the
 * chain with them.
 */
import type { AuditCheckpoint } from "../core/audit.ts";

/** Publishes checkpoints of the audit chain head outside Postgres and lists those it keeps. */
export interface CheckpointPublisher {
  /**
   * Records `checkpoint` outside Postgres. Idempotent per `seq`; may drop old checkpoints (keeping
   * the most recent ones). Errors: throws when the outside store is unavailable; the checkpointer
   * logs it and publishes again at its next period.
   */
  publish(checkpoint: AuditCheckpoint): Promise<void>;
  /** The checkpoints kept outside Postgres, in any order (empty when none). */
  list(): Promise<AuditCheckpoint[]>;
}
