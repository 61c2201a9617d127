/**
 * The audit witness (DESIGN §6): keeps signed checkpoints of the audit chain outside Postgres, and
 * never publishes over a chain that no longer holds what it kept. One publication:
 *   read the witness document (checkpoints + published keys)
 *   check the kept checkpoints' signatures against the witness's own keys (its Secret, not the document)
 *   ask the chain about the kept seqs and the stretch after the last one (ChainEvidence)
 *   plan (witness-continuity.ts): publish, skip, or refuse naming the first seq that disagrees
 *   write the retained checkpoints and the public keys, carrying the read version (a conflict re-reads)
 * A refusal is logged as an error and reported to {@link WitnessMetrics} at every period until a person
 * intervenes (docs/audit.md "When the witness refuses").
 */
import type { AuditCheckpoint } from "./audit.ts";
import { GatehouseError, isGatehouseError } from "./errors.ts";
import type { CoreLogger } from "./ports.ts";
import { type ChainEvidence, planPublication, type WitnessDisagreement } from "./witness-continuity.ts";
import {
  checkSignatures,
  signCheckpoint,
  type WitnessCheckpoint,
  type WitnessPublicKey,
  type WitnessSigningKey,
} from "./witness-signature.ts";

/** What the witness keeps: its checkpoints and the public keys that check them. */
export interface WitnessDocument {
  checkpoints: WitnessCheckpoint[];
  keys: WitnessPublicKey[];
}

/** Where the witness document lives (the operator's: ConfigMap gatehouse-audit-checkpoints). */
export interface WitnessDocuments {
  /**
   * The document and an opaque version for the write after it; undefined when there is none yet.
   * Errors: `unavailable`; `conflict` when its content does not parse (the witness then refuses, seq 0).
   */
  read(): Promise<{ document: WitnessDocument; version: string } | undefined>;
  /** Writes `document` if it is still at `version` (undefined: create). `"conflict"` when it changed meanwhile. */
  write(document: WitnessDocument, version: string | undefined): Promise<"written" | "conflict">;
  /** Names the document in messages, e.g. `ConfigMap gatehouse-system/gatehouse-audit-checkpoints`. */
  where: string;
}

/** The witness's keys (the operator's: Secret gatehouse-audit-witness-key). */
export interface WitnessSigner {
  /** The key to sign with and every public key of the witness, retired ones included. Errors: unavailable. */
  keys(): Promise<{ signing: WitnessSigningKey; published: WitnessPublicKey[] }>;
}

/** What the witness reports for the metrics. */
export interface WitnessMetrics {
  /** The witness checked the chain and agrees with it (it published, or already held the head). */
  agreed(seq: number): void;
  /** A publication was refused at `disagreement.seq`. */
  refused(disagreement: WitnessDisagreement): void;
}

/** How one publication ended. */
export type PublicationOutcome =
  | { outcome: "published"; checkpoint: WitnessCheckpoint; kept: number }
  | { outcome: "skipped"; reason: "standby" | "already_kept" | "older_than_kept" }
  | { outcome: "refused"; disagreement: WitnessDisagreement };

/** Publishes checkpoints outside Postgres and lists those it keeps. */
export interface CheckpointPublisher {
  /**
   * Publishes `checkpoint` unless the chain disagrees with what is kept; `evidenceOf` asks the chain
   * about the kept checkpoints (seqs and the stretch to `checkpoint`). Errors: the document's and the
   * signer's (unavailable), `conflict` after repeated concurrent writes.
   */
  publish(
    checkpoint: AuditCheckpoint,
    evidenceOf: (kept: WitnessCheckpoint[]) => Promise<ChainEvidence>,
  ): Promise<PublicationOutcome>;
  /** The checkpoints kept, ascending by seq (empty when none). */
  list(): Promise<WitnessCheckpoint[]>;
}

/** Options of {@link witnessPublisher}. */
export interface WitnessOptions {
  documents: WitnessDocuments;
  signer: WitnessSigner;
  /** Whether this replica publishes (default: always); a standby's publish reads and writes nothing. */
  isActive?: () => boolean;
  metrics?: WitnessMetrics;
  log?: CoreLogger;
}

/** Read-check-write rounds before a publication gives up on repeated conflicts. */
const MAX_ATTEMPTS = 5;

/** The witness over `options.documents`, signing with `options.signer` (see the file comment). */
export function witnessPublisher(options: WitnessOptions): CheckpointPublisher {
  const { documents, signer, log } = options;
  const refused = (checkpoint: AuditCheckpoint, disagreement: WitnessDisagreement): PublicationOutcome => {
    log?.error(
      { seq: disagreement.seq, reason: disagreement.reason, candidate: checkpoint.seq },
      `${documents.where}: not publishing checkpoint ${checkpoint.seq}: ${disagreement.message} (the witness keeps refusing until a person intervenes; see docs/audit.md)`,
    );
    options.metrics?.refused(disagreement);
    return { outcome: "refused", disagreement };
  };
  return {
    async publish(checkpoint, evidenceOf) {
      if (options.isActive && !options.isActive()) return { outcome: "skipped", reason: "standby" };
      const { signing, published } = await signer.keys();
      const candidate = signCheckpoint(checkpoint, signing);
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        let read: Awaited<ReturnType<WitnessDocuments["read"]>>;
        try {
          read = await documents.read();
        } catch (error) {
          if (!isGatehouseError(error, "conflict")) throw error;
          // Content that does not parse was edited by hand: evidence to keep, and a refusal to raise.
          return refused(checkpoint, { seq: 0, reason: "forged", message: error.message });
        }
        const kept = read?.document.checkpoints ?? [];
        const plan = planPublication({
          kept,
          // The witness trusts its own keys, never the document's: someone who can write the document can add keys to it.
          signatures: checkSignatures(kept, published, (read?.document.keys.length ?? 0) > 0),
          evidence: await evidenceOf(kept),
          candidate,
        });
        if (plan.action === "refuse") return refused(checkpoint, plan.disagreement);
        if (plan.action === "skip") {
          options.metrics?.agreed(checkpoint.seq);
          return { outcome: "skipped", reason: plan.reason };
        }
        const written = await documents.write(
          { checkpoints: plan.checkpoints, keys: published },
          read?.version,
        );
        if (written === "written") {
          options.metrics?.agreed(candidate.seq);
          return { outcome: "published", checkpoint: candidate, kept: plan.checkpoints.length };
        }
        log?.info({ seq: checkpoint.seq, attempt }, `${documents.where} changed meanwhile; checking again`);
      }
      throw new GatehouseError(
        "conflict",
        `${documents.where}: ${MAX_ATTEMPTS} writes of checkpoint ${checkpoint.seq} met a concurrent change`,
      );
    },
    async list() {
      const read = await documents.read();
      return [...(read?.document.checkpoints ?? [])].sort((a, b) => a.seq - b.seq);
    },
  };
}
