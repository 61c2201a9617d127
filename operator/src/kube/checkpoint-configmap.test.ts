import { describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "../core/audit.ts";
import {
  decodeCheckpoints,
  encodeCheckpoints,
  mergeCheckpoints,
  microsOf,
  microTimeOf,
} from "./checkpoint-configmap.ts";

const hash = (n: number) => n.toString(16).padStart(64, "0");
const checkpoint = (seq: number, h = hash(seq)): AuditCheckpoint => ({
  seq,
  headHash: h,
  atMicros: 1_795_000_000_000_000 + seq,
});

describe("checkpoints in the ConfigMap", () => {
  it("writes times as RFC 3339 with microseconds and reads them back exactly", () => {
    expect(microTimeOf(1_795_000_000_123_456)).toBe("2026-11-18T11:06:40.123456Z");
    expect(microsOf("2026-11-18T11:06:40.123456Z")).toBe(1_795_000_000_123_456);
    expect(microsOf(microTimeOf(1_795_000_000_000_007))).toBe(1_795_000_000_000_007);
  });

  it("round-trips checkpoints through checkpoints.json, ascending by seq", () => {
    const text = encodeCheckpoints([checkpoint(9), checkpoint(3)]);
    expect(JSON.parse(text).map((c: { seq: number }) => c.seq)).toEqual([3, 9]);
    expect(decodeCheckpoints(text, "cm")).toEqual([checkpoint(3), checkpoint(9)]);
    expect(decodeCheckpoints(undefined, "cm")).toEqual([]);
  });

  it("refuses content that is not a list of checkpoints, naming the ConfigMap", () => {
    expect(() => decodeCheckpoints('[{"seq":1,"hash":"xyz","at":"now"}]', "ConfigMap a/b")).toThrow(
      /ConfigMap a\/b checkpoints.json is not a JSON list/,
    );
    expect(() => decodeCheckpoints("{", "cm")).toThrow(/not a JSON list/);
  });

  it("adds a new seq and keeps only the most recent ones", () => {
    const merged = mergeCheckpoints([checkpoint(1), checkpoint(2), checkpoint(3)], checkpoint(4), 3);
    expect(merged.changed).toBe(true);
    expect(merged.checkpoints.map((c) => c.seq)).toEqual([2, 3, 4]);
    expect(merged.disagreement).toBeUndefined();
  });

  it("changes nothing when the seq is kept already (idempotent per seq)", () => {
    const merged = mergeCheckpoints([checkpoint(1), checkpoint(2)], checkpoint(2), 50);
    expect(merged.changed).toBe(false);
    expect(merged.checkpoints).toEqual([checkpoint(1), checkpoint(2)]);
  });

  it("keeps the ConfigMap's hash for a seq it holds and reports the disagreement", () => {
    const forged = checkpoint(2, "f".repeat(64));
    const merged = mergeCheckpoints([checkpoint(1), forged], checkpoint(2), 50);
    expect(merged.changed).toBe(false);
    expect(merged.checkpoints).toEqual([checkpoint(1), forged]);
    expect(merged.disagreement).toEqual(forged);
  });

  it("does not write a seq older than every kept one when the ConfigMap is full", () => {
    const merged = mergeCheckpoints([checkpoint(5), checkpoint(6)], checkpoint(1), 2);
    expect(merged.changed).toBe(false);
    expect(merged.checkpoints.map((c) => c.seq)).toEqual([5, 6]);
  });
});
