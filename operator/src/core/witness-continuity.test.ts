import { describe, expect, it } from "vitest";
import type { AuditCheckpoint, AuditVerifyReport } from "./audit.ts";
import { type ChainEvidence, planPublication, type WitnessPlan } from "./witness-continuity.ts";
import type { SignatureCheck, WitnessCheckpoint } from "./witness-signature.ts";

const AT = 1_795_000_000_000_000;
const hash = (seq: number, variant = "0") => `${variant}${seq.toString(16).padStart(63, "0")}`;
const cp = (seq: number, variant = "0"): WitnessCheckpoint => ({
  seq,
  headHash: hash(seq, variant),
  atMicros: AT + seq * 60_000_000,
  kid: "k",
  sig: "s",
});
const valid = (kept: WitnessCheckpoint[]): SignatureCheck[] =>
  kept.map((c) => ({ seq: c.seq, status: "valid", kid: "k", message: "signed by key k" }));

/** A stretch report: intact, or with a problem. */
function stretch(
  fromSeq: number,
  candidate: AuditCheckpoint,
  problem: Partial<AuditVerifyReport> = {},
): ChainEvidence["stretch"] {
  return {
    fromSeq,
    toSeq: candidate.seq,
    report: {
      ok: true,
      records: candidate.seq - fromSeq + 1,
      head: { seq: candidate.seq, hash: candidate.headHash },
      badRows: 0,
      gaps: [],
      checkpoints: [{ checkpoint: candidate, status: "ok", message: "matches" }],
      ...problem,
    },
  };
}

/** The chain as it is: every kept seq with its original hash, except where `changed` says. */
function chain(
  kept: WitnessCheckpoint[],
  changed: Record<number, string | undefined> = {},
): Map<number, string> {
  const hashes = new Map<number, string>();
  for (const c of kept) {
    const value = c.seq in changed ? changed[c.seq] : c.headHash;
    if (value !== undefined) hashes.set(c.seq, value);
  }
  return hashes;
}

const kept = [cp(10), cp(20), cp(30)];
const candidate = cp(40);

interface Expected {
  action: WitnessPlan["action"];
  seq?: number;
  reason?: string;
}

const cases: Array<[string, Parameters<typeof planPublication>[0], Expected]> = [
  [
    "publishes when every kept hash matches and the stretch verifies",
    {
      kept,
      signatures: valid(kept),
      evidence: { hashes: chain(kept), stretch: stretch(31, candidate) },
      candidate,
    },
    { action: "publish" },
  ],
  [
    "publishes the first checkpoint of an empty witness after verifying from the genesis",
    { kept: [], signatures: [], evidence: { hashes: new Map(), stretch: stretch(1, candidate) }, candidate },
    { action: "publish" },
  ],
  [
    "refuses at the first kept seq whose hash the chain changed",
    {
      kept,
      signatures: valid(kept),
      evidence: {
        hashes: chain(kept, { 20: hash(20, "f"), 30: hash(30, "f") }),
        stretch: stretch(31, candidate),
      },
      candidate,
    },
    { action: "refuse", seq: 20, reason: "rewritten" },
  ],
  [
    "refuses when the chain no longer holds a kept seq (truncated)",
    {
      kept,
      signatures: valid(kept),
      evidence: { hashes: chain(kept, { 30: undefined }) },
      candidate: cp(25),
    },
    { action: "refuse", seq: 30, reason: "removed" },
  ],
  [
    "refuses when the records after the last kept checkpoint do not link to it",
    {
      kept,
      signatures: valid(kept),
      evidence: {
        hashes: chain(kept),
        stretch: stretch(31, candidate, {
          ok: false,
          badRows: 1,
          firstBadRow: { seq: 31, reason: "broken_link", message: "prev_hash is not the hash of record 30" },
        }),
      },
      candidate,
    },
    { action: "refuse", seq: 31, reason: "broken" },
  ],
  [
    "refuses when the stretch has a gap",
    {
      kept,
      signatures: valid(kept),
      evidence: {
        hashes: chain(kept),
        stretch: stretch(31, candidate, { ok: false, gaps: [{ from: 33, to: 34 }] }),
      },
      candidate,
    },
    { action: "refuse", seq: 33, reason: "broken" },
  ],
  [
    "refuses when the stretch was not verified up to the candidate",
    {
      kept,
      signatures: valid(kept),
      evidence: { hashes: chain(kept), stretch: stretch(31, cp(39)) },
      candidate,
    },
    { action: "refuse", seq: 31, reason: "broken" },
  ],
  [
    "refuses at a kept checkpoint that is not signed by the witness's keys",
    {
      kept,
      signatures: [
        ...valid(kept).slice(0, 1),
        { seq: 20, status: "unknown_kid", kid: "x", message: "signed by kid x" },
        ...valid(kept).slice(2),
      ],
      evidence: { hashes: chain(kept), stretch: stretch(31, candidate) },
      candidate,
    },
    { action: "refuse", seq: 20, reason: "forged" },
  ],
  [
    "names the rewritten seq when it comes before the forged one",
    {
      kept,
      signatures: [
        ...valid(kept).slice(0, 2),
        { seq: 30, status: "bad_signature", message: "does not verify" },
      ],
      evidence: { hashes: chain(kept, { 10: hash(10, "f") }), stretch: stretch(31, candidate) },
      candidate,
    },
    { action: "refuse", seq: 10, reason: "rewritten" },
  ],
  [
    "accepts legacy unsigned checkpoints below the signed ones",
    {
      kept: [{ seq: 10, headHash: hash(10), atMicros: cp(10).atMicros }, cp(20), cp(30)],
      signatures: [{ seq: 10, status: "unsigned_legacy", message: "legacy" }, ...valid(kept).slice(1)],
      evidence: { hashes: chain(kept), stretch: stretch(31, candidate) },
      candidate,
    },
    { action: "publish" },
  ],
  [
    "skips a candidate the witness already holds",
    { kept, signatures: valid(kept), evidence: { hashes: chain(kept) }, candidate: cp(30) },
    { action: "skip", reason: "already_kept" },
  ],
  [
    "skips a candidate older than the newest kept one (another leader published meanwhile)",
    { kept, signatures: valid(kept), evidence: { hashes: chain(kept) }, candidate: cp(25) },
    { action: "skip", reason: "older_than_kept" },
  ],
];

describe("the witness's continuity planner", () => {
  it.each(cases)("%s", (_name, input, expected) => {
    const plan = planPublication(input);
    expect(plan.action).toBe(expected.action);
    if (plan.action === "refuse") {
      expect(plan.disagreement).toMatchObject({ seq: expected.seq, reason: expected.reason });
      expect(plan.disagreement.message).toContain(String(expected.seq));
    }
    if (plan.action === "skip") expect(plan.reason).toBe(expected.reason);
    if (plan.action === "publish") expect(plan.checkpoints.at(-1)).toEqual(input.candidate);
  });

  it("publishes the kept checkpoints as retention keeps them, the oldest first", () => {
    const many = Array.from({ length: 200 }, (_, i) => cp(i + 1));
    const next = cp(201);
    const plan = planPublication({
      kept: many,
      signatures: valid(many),
      evidence: { hashes: chain(many), stretch: stretch(201, next) },
      candidate: { ...next, atMicros: next.atMicros + 2 * 86_400_000_000 },
    });
    expect(plan.action).toBe("publish");
    if (plan.action !== "publish") return;
    expect(plan.checkpoints[0]).toEqual(many[0]);
    expect(plan.checkpoints.length).toBeLessThan(10);
  });
});
