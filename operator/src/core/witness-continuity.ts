/**
 * Whether the witness may publish a new checkpoint (DESIGN §6): only while the chain in Postgres still
 * holds every checkpoint the witness kept — the same hash at each kept seq — and the records from the
 * last kept checkpoint to the new head link up and verify. Otherwise nothing is published, and the
 * first checkpoint that disagrees is named. Pure: the chain's side arrives as {@link ChainEvidence}.
 */
import type { AuditVerifyReport } from "./audit.ts";
import { retainedCheckpoints } from "./witness-retention.ts";
import { type SignatureCheck, signatureAcceptable, type WitnessCheckpoint } from "./witness-signature.ts";

/** What the chain in Postgres says about the kept checkpoints and the stretch after them. */
export interface ChainEvidence {
  /** The hash (hex) of the record at each kept seq the chain holds; a seq it lacks is absent. */
  hashes: ReadonlyMap<number, string>;
  /**
   * The records after the last kept checkpoint up to the candidate, verified from the witness's own
   * hash of that checkpoint (or from the genesis when none is kept), the candidate its only checkpoint.
   * Absent when the candidate is not past the last kept checkpoint.
   */
  stretch?: { fromSeq: number; toSeq: number; report: AuditVerifyReport };
}

/** Why the witness refuses: its first kept checkpoint the chain disagrees with, or a broken stretch. */
export interface WitnessDisagreement {
  /** The first seq that disagrees (0: the witness's document itself does not parse). */
  seq: number;
  /**
   * `rewritten`: the chain holds another hash at a kept seq; `removed`: it no longer holds that record;
   * `forged`: a kept checkpoint is not signed by the witness's keys; `broken`: the records after the
   * last kept checkpoint do not verify or do not link to it.
   */
  reason: "rewritten" | "removed" | "forged" | "broken";
  message: string;
}

/** What to do with a candidate checkpoint. */
export type WitnessPlan =
  | { action: "publish"; checkpoints: WitnessCheckpoint[] }
  | { action: "skip"; reason: "already_kept" | "older_than_kept" }
  | { action: "refuse"; disagreement: WitnessDisagreement };

/** Inputs of {@link planPublication}. */
export interface PublicationInput {
  /** The checkpoints the witness keeps now. */
  kept: readonly WitnessCheckpoint[];
  /** Their signature checks against the witness's own keys ({@link checkSignatures}). */
  signatures: readonly SignatureCheck[];
  evidence: ChainEvidence;
  /** The signed checkpoint of the chain's head to publish. */
  candidate: WitnessCheckpoint;
}

/**
 * The plan for `input.candidate`: refuse at the first kept checkpoint (by seq) that is forged or that
 * the chain disagrees with, or when the stretch to the candidate is broken; skip a candidate the
 * witness already holds or that is older than its newest; else publish, keeping what
 * {@link retainedCheckpoints} keeps at the candidate's time.
 */
export function planPublication(input: PublicationInput): WitnessPlan {
  const { evidence, candidate } = input;
  const kept = [...input.kept].sort((a, b) => a.seq - b.seq);
  const forged = [...input.signatures]
    .sort((a, b) => a.seq - b.seq)
    .find((check) => !signatureAcceptable(check.status));
  for (const checkpoint of kept) {
    if (forged && forged.seq <= checkpoint.seq) {
      return refuse(
        forged.seq,
        "forged",
        `kept checkpoint ${forged.seq} is not the witness's: ${forged.message}`,
      );
    }
    const actual = evidence.hashes.get(checkpoint.seq);
    if (actual === undefined) {
      return refuse(
        checkpoint.seq,
        "removed",
        `the witness holds checkpoint ${checkpoint.seq} but the chain has no record ${checkpoint.seq}: records were removed`,
      );
    }
    if (actual !== checkpoint.headHash) {
      return refuse(
        checkpoint.seq,
        "rewritten",
        `record ${checkpoint.seq} hashes to ${actual}, the witness's checkpoint says ${checkpoint.headHash}: the chain was rewritten`,
      );
    }
  }
  if (forged)
    return refuse(forged.seq, "forged", `checkpoint ${forged.seq} is not the witness's: ${forged.message}`);

  const last = kept.at(-1);
  if (last && candidate.seq === last.seq) return { action: "skip", reason: "already_kept" };
  if (last && candidate.seq < last.seq) {
    return kept.some((c) => c.seq === candidate.seq)
      ? { action: "skip", reason: "already_kept" }
      : { action: "skip", reason: "older_than_kept" };
  }
  const stretch = evidence.stretch;
  const from = (last?.seq ?? 0) + 1;
  if (!stretch || stretch.fromSeq !== from || stretch.toSeq !== candidate.seq) {
    return refuse(from, "broken", `records ${from}..${candidate.seq} were not verified`);
  }
  const { report } = stretch;
  if (report.firstBadRow) {
    const bad = report.firstBadRow;
    const link =
      bad.reason === "broken_link" && bad.seq === from && last
        ? ` (it does not link to checkpoint ${last.seq})`
        : "";
    return refuse(
      bad.seq,
      "broken",
      `record ${bad.seq} fails verification (${bad.reason}${link}): ${bad.message}`,
    );
  }
  const gap = report.gaps[0];
  if (gap) return refuse(gap.from, "broken", `records ${gap.from}..${gap.to} are missing`);
  const head = report.checkpoints.find((c) => c.checkpoint.seq === candidate.seq);
  if (head?.status !== "ok") {
    return refuse(candidate.seq, "broken", head?.message ?? `record ${candidate.seq} was not verified`);
  }
  return { action: "publish", checkpoints: retainedCheckpoints([...kept, candidate], candidate.atMicros) };
}

function refuse(seq: number, reason: WitnessDisagreement["reason"], message: string): WitnessPlan {
  return { action: "refuse", disagreement: { seq, reason, message } };
}
