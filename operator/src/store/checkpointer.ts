/**
 * Periodic checkpoints of the audit chain (DESIGN §6): every `intervalMs`, if the head moved since
 * the last checkpoint this process published, store a checkpoint (seq, head hash, time) in Postgres
 * and publish it through the `CheckpointPublisher`, when one is given. Replicas may all run one:
 * a checkpoint is stored once per seq, whoever writes it first. A failure is logged and retried at
 * the next period; it never stops the loop.
 */
import type { AuditCheckpoint } from "../core/audit.ts";
import type { PostgresAuditLog } from "./audit-log.ts";
import type { CheckpointPublisher } from "./checkpoint-publisher.ts";
import type { StoreLogger } from "./pool.ts";

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
   * Checkpoints now (what every period does): returns the checkpoint stored and published, or
   * undefined when the chain is empty or its head was already published. Errors: those of the
   * store and the publisher.
   */
  checkpointNow(): Promise<AuditCheckpoint | undefined>;
  /** Stops the timer and waits for a checkpoint in progress. */
  stop(): Promise<void>;
}

const DEFAULT_INTERVAL_MS = 60_000;

/** Starts checkpointing `audit` every `options.intervalMs`; the timer does not keep the process alive. */
export function startCheckpointer(
  audit: Pick<PostgresAuditLog, "head" | "checkpoint">,
  options: CheckpointerOptions = {},
): Checkpointer {
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  let publishedSeq = 0;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;

  async function checkpointNow(): Promise<AuditCheckpoint | undefined> {
    const head = await audit.head();
    if (head.seq === 0 || head.seq === publishedSeq) return undefined;
    const checkpoint = await audit.checkpoint();
    await options.publisher?.publish(checkpoint);
    publishedSeq = checkpoint.seq;
    return checkpoint;
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
