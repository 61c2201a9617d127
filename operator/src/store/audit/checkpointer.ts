/**
 * Periodic checkpoints of the audit chain (DESIGN §6): every `intervalMs`, if the head moved since
 * the last checkpoint this process took, store a checkpoint (seq, head hash, time) in Postgres; and
 * offer the head's checkpoint to the `CheckpointPublisher` (the witness), when one is given, answering
 * its questions about the chain from Postgres (`chain-evidence.ts`). Replicas may all run one: a
 * checkpoint is stored once per seq, whoever writes it first. A failure is logged and retried at the
 * next period; it never stops the loop. A refused publication (the chain no longer holds what the
 * witness kept) is not a failure of the loop: the witness logs it, and it is checked — and refused —
 * again at every period.
 */
import type { AuditCheckpoint } from "../../core/audit.ts";
import type { StoreLogger } from "../pool.ts";
import type { CheckpointPublisher, PublicationOutcome } from "./checkpoint-publisher.ts";
import type { PostgresAuditLog } from "./log.ts";

/** Options of {@link startCheckpointer}. */
export interface CheckpointerOptions {
  /** Period between checkpoints, in milliseconds (default 60 000). */
  intervalMs?: number;
  /** Where checkpoints are published outside Postgres; none → Postgres only. */
  publisher?: CheckpointPublisher;
  logger?: StoreLogger;
}

/** A running checkpointer. */
export interface Checkpointer {
  /**
   * Checkpoints now (what every period does): stores a checkpoint when the head moved, and offers the
   * head's checkpoint to the publisher (moved or not). Returns it and how its publication ended, or
   * undefined when the chain is empty, or its head did not move and there is no publisher. Errors:
   * those of the store and the publisher.
   */
  checkpointNow(): Promise<CheckpointResult | undefined>;
  /** Stops the timer and waits for a checkpoint in progress. */
  stop(): Promise<void>;
}

/** A checkpoint of the head, and how its publication ended. */
export interface CheckpointResult {
  checkpoint: AuditCheckpoint;
  /** True when the head moved and this checkpoint was stored in Postgres now; false when it was offered again. */
  stored: boolean;
  /** Absent without a publisher. */
  publication?: PublicationOutcome;
}

const DEFAULT_INTERVAL_MS = 60_000;

/** Starts checkpointing `audit` every `options.intervalMs`; the timer does not keep the process alive. */
export function startCheckpointer(
  audit: Pick<PostgresAuditLog, "head" | "checkpoint" | "chainEvidence">,
  options: CheckpointerOptions = {},
): Checkpointer {
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  let last: AuditCheckpoint | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;

  async function checkpointNow(): Promise<CheckpointResult | undefined> {
    const head = await audit.head();
    if (head.seq === 0) return undefined;
    const moved = head.seq !== last?.seq;
    if (!moved && !options.publisher) return undefined;
    // An unmoved head is offered again: the witness re-checks the chain every period, so tampering
    // is noticed (and a person's repair seen) without waiting for the next append.
    const checkpoint = moved || !last ? await audit.checkpoint() : last;
    last = checkpoint;
    if (!options.publisher) return { checkpoint, stored: true };
    const publication = await options.publisher.publish(checkpoint, (kept) =>
      audit.chainEvidence(kept, checkpoint),
    );
    return { checkpoint, stored: moved, publication };
  }

  const timer = setInterval(() => {
    if (stopped) return;
    running = running.then(() =>
      checkpointNow().catch((error: unknown) =>
        options.logger?.warn({ err: error }, "audit checkpoint failed; retrying at the next period"),
      ),
    );
  }, intervalMs);
  timer.unref();

  return {
    checkpointNow: () => {
      const next = running.then(checkpointNow);
      running = next.catch(() => {});
      return next;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
