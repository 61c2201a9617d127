import { describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "./audit.ts";
import { retainedCheckpoints } from "./witness-retention.ts";

const MINUTE = 60_000_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** 2026-01-01T00:00:00Z in µs: a UTC midnight, so buckets are easy to read. */
const START = Date.UTC(2026, 0, 1) * 1000;

/** `count` checkpoints, one every `everyMicros` from `START`, seqs 10, 20, … */
function series(count: number, everyMicros = MINUTE): AuditCheckpoint[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: (i + 1) * 10,
    headHash: "0".repeat(64),
    atMicros: START + i * everyMicros,
  }));
}

describe("the witness's retention", () => {
  it("keeps every checkpoint of the last hour", () => {
    const all = series(60);
    expect(retainedCheckpoints(all, all.at(-1)!.atMicros)).toEqual(all);
  });

  it("keeps the first of each hour for the last day and of each day before that", () => {
    const all = series(3 * 24 * 60); // three days at one a minute
    const now = all.at(-1)!.atMicros;
    const kept = retainedCheckpoints(all, now);
    const ages = kept.map((c) => now - c.atMicros);
    // Last hour: 60; older than an hour but younger than a day: one per hour; then the first of each day.
    expect(ages.filter((a) => a < HOUR)).toHaveLength(60);
    const hourly = kept.filter((c) => now - c.atMicros >= HOUR && now - c.atMicros < DAY);
    expect(hourly.every((c) => (c.atMicros - START) % HOUR === 0)).toBe(true);
    expect(hourly.length).toBeGreaterThanOrEqual(22);
    expect(hourly.length).toBeLessThanOrEqual(24);
    const daily = kept.filter((c) => now - c.atMicros >= DAY);
    expect(daily.map((c) => (c.atMicros - START) / DAY)).toEqual([0, 1]);
  });

  it("never drops the oldest checkpoint, even one that is not the first of its bucket", () => {
    const all = series(3000).slice(7); // starts at 00:07, not on an hour
    const later = [...all, { seq: 99_999_990, headHash: "0".repeat(64), atMicros: START + 4000 * DAY }];
    const kept = retainedCheckpoints(later, later.at(-1)!.atMicros);
    expect(kept[0]).toEqual(all[0]);
    expect(kept.at(-1)).toEqual(later.at(-1));
  });

  it("keeps the same checkpoints whether they arrive one at a time or are chosen from all at once", () => {
    const all = series(4 * 24 * 60 + 17);
    let kept: AuditCheckpoint[] = [];
    for (const checkpoint of all) kept = retainedCheckpoints([...kept, checkpoint], checkpoint.atMicros);
    expect(kept).toEqual(retainedCheckpoints(all, all.at(-1)!.atMicros));
  });

  it("keeps at most 60 + 24 + 365 + 53 a year later entries over 5 years of one checkpoint a minute", () => {
    // One an hour until the last day, then one a minute: every bucket older than an hour keeps its
    // first, which falls on an hour either way, so the kept set is that of 5 years at one a minute —
    // without building 2.6 million checkpoints (4 s, near the test timeout on a loaded machine).
    const hourly = series(5 * 365 * 24 - 24, HOUR);
    const lastDayStart = hourly.at(-1)!.atMicros + HOUR;
    const lastDay = series(24 * 60).map((c) => ({
      ...c,
      seq: hourly.at(-1)!.seq + c.seq,
      atMicros: lastDayStart + (c.atMicros - START),
    }));
    const all = [...hourly, ...lastDay];
    const kept = retainedCheckpoints(all, all.at(-1)!.atMicros);
    expect(kept[0]).toEqual(all[0]);
    expect(kept.length).toBeLessThanOrEqual(60 + 24 + 365 + 4 * 53 + 2);
    expect(kept.length).toBeGreaterThan(600);
  });
});
