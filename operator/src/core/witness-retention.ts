/**
 * Which checkpoints the witness keeps (DESIGN §6, docs/audit.md "Retention"): bounded, and never
 * forgetting a stretch of time. By a checkpoint's age at the newest one's time:
 *   younger than 1 hour   every checkpoint
 *   younger than 1 day    the first of each UTC hour
 *   younger than 1 year   the first of each UTC day
 *   older                 the first of each week (weeks counted from the epoch)
 * and the oldest checkpoint always. "First" is the lowest seq in its bucket. The buckets nest (a week
 * holds whole days, a day whole hours), so the first of a day was also kept as the first of its hour:
 * a checkpoint dropped once is never needed again, and keeping checkpoints one at a time keeps the same
 * set as choosing from all of them at once. At one checkpoint a minute that is at most 60 + 24 + 365 +
 * 52 per further year + 1 entries (about 660 after 5 years, 180 KB signed; docs/audit.md).
 */
import type { AuditCheckpoint } from "./audit.ts";

const HOUR_MICROS = 3_600_000_000;
const DAY_MICROS = 24 * HOUR_MICROS;
const WEEK_MICROS = 7 * DAY_MICROS;
const YEAR_MICROS = 365 * DAY_MICROS;

/** One tier: checkpoints younger than `youngerThanMicros` keep the first of each `bucketMicros` (every one when 0). */
export interface RetentionTier {
  youngerThanMicros: number;
  bucketMicros: number;
}

/** The tiers, youngest first (see the file comment). */
export const RETENTION_TIERS: readonly RetentionTier[] = [
  { youngerThanMicros: HOUR_MICROS, bucketMicros: 0 },
  { youngerThanMicros: DAY_MICROS, bucketMicros: HOUR_MICROS },
  { youngerThanMicros: YEAR_MICROS, bucketMicros: DAY_MICROS },
  { youngerThanMicros: Number.POSITIVE_INFINITY, bucketMicros: WEEK_MICROS },
];

/**
 * The checkpoints of `checkpoints` to keep at `nowMicros` (the newest checkpoint's time), ascending by
 * seq. A checkpoint from the future (clock skew) counts as young. Pure.
 */
export function retainedCheckpoints<T extends AuditCheckpoint>(
  checkpoints: readonly T[],
  nowMicros: number,
  tiers: readonly RetentionTier[] = RETENTION_TIERS,
): T[] {
  const sorted = [...checkpoints].sort((a, b) => a.seq - b.seq);
  // The first of each bucket among all of them, whatever tier its fellows are in: a bucket that
  // straddles a tier's age limit still has one first, which every finer tier kept too.
  const firsts = new Map<number, Map<number, T>>();
  for (const { bucketMicros } of tiers) if (bucketMicros > 0) firsts.set(bucketMicros, new Map());
  for (const checkpoint of sorted) {
    for (const [bucketMicros, first] of firsts) {
      const bucket = Math.floor(checkpoint.atMicros / bucketMicros);
      if (!first.has(bucket)) first.set(bucket, checkpoint);
    }
  }
  return sorted.filter((checkpoint, index) => {
    if (index === 0) return true; // the oldest is never dropped
    const age = nowMicros - checkpoint.atMicros;
    const tier = tiers.find((t) => age < t.youngerThanMicros) ?? tiers[tiers.length - 1]!;
    if (tier.bucketMicros === 0) return true;
    return (
      firsts.get(tier.bucketMicros)?.get(Math.floor(checkpoint.atMicros / tier.bucketMicros)) === checkpoint
    );
  });
}
