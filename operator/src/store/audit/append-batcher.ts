/**
 * Group commit for audit appends (DESIGN §6 "appends batch under load"). An append on an idle batcher
 * starts its transaction at once; appends arriving while a transaction is in flight wait for it and
 * then go together, in arrival order and up to `maxBatch` at a time, in the next one. A lone caller
 * therefore pays one transaction per append, and many callers share transactions instead of queueing
 * on the chain lock one by one.
 *
 * A failed transaction rejects exactly the appends it carried (none of them is stored); the batcher
 * carries on with the next batch.
 */
import type { AppendedRecord, AuditEntry } from "../../core/ports.ts";

/** Writes `entries` in one transaction and returns their seqs (see `append.ts`). */
export type BatchWriter = (entries: AuditEntry[]) => Promise<AppendedRecord[]>;

interface Pending {
  entry: AuditEntry;
  resolve: (value: AppendedRecord) => void;
  reject: (error: unknown) => void;
}

/** Queues appends and writes them in batches, one transaction at a time. */
export class AppendBatcher {
  private readonly queue: Pending[] = [];
  private flushing = false;
  private readonly write: BatchWriter;
  private readonly maxBatch: number;

  /** `maxBatch`: most entries per transaction (≥ 1). */
  constructor(write: BatchWriter, maxBatch: number) {
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch ${maxBatch} must be ≥ 1`);
    this.write = write;
    this.maxBatch = maxBatch;
  }

  /** Queues `entry`; resolves with its seq once its transaction committed, rejects if it failed. */
  append(entry: AuditEntry): Promise<AppendedRecord> {
    return new Promise((resolve, reject) => {
      this.queue.push({ entry, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  /** Queues `entries` together, in order: one transaction carries them all when they fit in a batch. */
  appendAll(entries: readonly AuditEntry[]): Promise<AppendedRecord[]> {
    const appended = entries.map(
      (entry) =>
        new Promise<AppendedRecord>((resolve, reject) => {
          this.queue.push({ entry, resolve, reject });
        }),
    );
    if (!this.flushing && entries.length > 0) void this.flush();
    return Promise.all(appended);
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const seqs = await this.write(batch.map((p) => p.entry));
          batch.forEach((p, i) => {
            p.resolve(seqs[i] as AppendedRecord);
          });
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
