/**
 * Verification of the audit chain in Postgres (DESIGN §6). The chain is streamed in keyset pages
 * (`WHERE seq > last ORDER BY seq LIMIT n`, the next page fetched while the current one is checked),
 * so memory stays flat on a chain of any length. Every record's content is checked (`checkContent`,
 * `core/audit-verifier.ts`: its hash recomputed from the stored bytes, its bytes being their own RFC
 * 8785 form, every queryable column against the hashed bytes) — on worker threads when there are any
 * (`verify-checkers.ts`), as it needs no other record — and the records are then linked in seq order
 * by `ChainVerifier.pushChecked`, which gives the report a one-record-at-a-time walk gives. Sequence
 * gaps are reported, and the head is compared with the last stored checkpoint plus any checkpoints
 * kept outside Postgres; the outside checkpoints' signature checks (`core/witness-signature.ts`), when
 * given, count towards the verdict too.
 */
import { availableParallelism } from "node:os";
import type pg from "pg";
import {
  type AuditCheckpoint,
  type AuditVerifyReport,
  type ChainHead,
  ChainVerifier,
  type CheckpointCheck,
  EMPTY_CHAIN_HEAD,
} from "../../core/audit.ts";
import { GatehouseError } from "../../core/errors.ts";
import { type SignatureCheck, signatureAcceptable } from "../../core/witness-signature.ts";
import { toBytes, toSafeInteger } from "../sql-values.ts";
import { readLastCheckpoint } from "./checkpoints.ts";
import { ContentCheckers } from "./verify-checkers.ts";
import { type CheckedPage, checkPage, linksOf, readRawPage, seqOf } from "./verify-rows.ts";

/** Where a verification is, reported after every page. */
export interface VerifyProgress {
  /** First seq verified. */
  fromSeq: number;
  /** The head's seq when verification started (appends made since are verified too). */
  headSeq: number;
  /** Seq of the last record checked so far (`fromSeq - 1` before the first page). */
  seq: number;
  /** Records checked so far. */
  verified: number;
}

/** Options of {@link verifyAuditChain}. */
export interface VerifyOptions {
  /**
   * First seq to verify (default 1). Its predecessor's stored hash is taken on trust as the anchor;
   * checkpoints below the anchor are not checked.
   */
  fromSeq?: number;
  /** Checkpoints kept outside Postgres (the ConfigMap copy), compared as well as the last stored one. */
  checkpoints?: AuditCheckpoint[];
  /**
   * The signature checks of `checkpoints` (`checkSignatures` against the published keys); a failing
   * one makes the chain's verdict broken, `unsigned_legacy` does not.
   */
  signatures?: SignatureCheck[];
  /** Rows per page (default 5000). */
  pageSize?: number;
  /**
   * Worker threads checking records' content beside the thread that reads and links them; 0 checks
   * on this thread. Default: 0 for a range of at most one page, else one per core beyond two (at most
   * 4) — the reading thread and the Postgres backend serving it each keep a core busy; on two cores
   * a worker gained in some benchmark runs and lost in others (`test/bench/audit.ts`).
   */
  workers?: number;
  /** Called after every page. */
  onProgress?: (progress: VerifyProgress) => void;
}

/** A checkpoint comparison and where that checkpoint was kept. */
export interface SourcedCheckpointCheck extends CheckpointCheck {
  /** `postgres`: the last row of `audit_checkpoints`; `outside`: one of `options.checkpoints` (the ConfigMap copy). */
  source: "postgres" | "outside";
}

/** The first kept checkpoint that disagrees with the chain or whose signature fails, by seq. */
export interface CheckpointDisagreement {
  seq: number;
  source: "postgres" | "outside";
  /** `hash_mismatch`: the chain holds another hash there; `missing`: the chain lacks that record; `signature`: its signature fails. */
  problem: "hash_mismatch" | "missing" | "signature";
  message: string;
}

/** The report of `core/audit.ts` plus the first seq verified, each checkpoint labelled with its source. */
export interface ChainVerifyReport extends AuditVerifyReport {
  fromSeq: number;
  checkpoints: SourcedCheckpointCheck[];
  /** The outside checkpoints' signature checks (empty when none were given). */
  signatures: SignatureCheck[];
  firstDisagreement?: CheckpointDisagreement;
}

const DEFAULT_PAGE_SIZE = 5000;

/**
 * Verifies the chain on `pool` from `options.fromSeq` to the end. Resolves with the report whether
 * or not the chain is intact (`report.ok`). Errors: `invalid_arguments` for a `fromSeq` or `pageSize`
 * that is not a positive safe integer, a `workers` that is not 0 or one, or a `fromSeq` past the head (head seq + 1, an empty range, is
 * allowed); pg errors (connection, permission) propagate.
 */
export async function verifyAuditChain(
  pool: pg.Pool,
  options: VerifyOptions = {},
): Promise<ChainVerifyReport> {
  const fromSeq = positiveInteger(options.fromSeq ?? 1, "fromSeq");
  const pageSize = positiveInteger(options.pageSize ?? DEFAULT_PAGE_SIZE, "pageSize");
  const [anchor, headSeq, last] = await Promise.all([
    readAnchor(pool, fromSeq),
    readHeadSeq(pool),
    readLastCheckpoint(pool),
  ]);
  if (fromSeq > headSeq + 1) {
    throw new GatehouseError(
      "invalid_arguments",
      `fromSeq ${fromSeq} is past the end of the chain (head seq ${headSeq}): nothing would be verified; pass a seq from 1 to ${Math.max(1, headSeq)}`,
    );
  }
  const verifier = new ChainVerifier([...(last ? [last] : []), ...(options.checkpoints ?? [])], anchor);

  const workers = options.workers ?? (headSeq - fromSeq + 1 > pageSize ? defaultVerifyWorkers() : 0);
  positiveOrZero(workers, "workers");
  const checkers = workers > 0 ? new ContentCheckers(workers) : undefined;
  const fetchPage = (afterSeq: number) => {
    const page = readRawPage(pool, afterSeq, pageSize);
    // Fetched ahead: if checking the current page throws, this page is never awaited.
    page.catch(() => {});
    return page;
  };
  // Pages read and sent to be checked, walked in order as their checks come back (a bounded queue,
  // so memory stays flat however far the reading gets ahead of the checking).
  const inFlight: Array<Promise<CheckedPage>> = [];
  const maxInFlight = 2 * Math.max(1, workers);
  let verified = 0;
  let seq = fromSeq - 1;
  const walkOldest = async () => {
    const checked = inFlight.shift();
    if (!checked) return;
    const page = await checked;
    const links = linksOf(page);
    let next = 0;
    links.forEach((link, i) => {
      const found = page.problems[next];
      if (found?.[0] === i) next++;
      verifier.pushChecked(link, found?.[0] === i ? found[1] : undefined);
    });
    verified += links.length;
    seq = links.at(-1)?.seq ?? seq;
    options.onProgress?.({ fromSeq, headSeq, seq, verified });
  };
  try {
    let next = fetchPage(anchor.seq);
    for (;;) {
      const rows = await next;
      const lastRow = rows.at(-1);
      const full = rows.length === pageSize && lastRow !== undefined;
      if (full) next = fetchPage(seqOf(lastRow));
      const checked = checkers ? checkers.check(rows) : Promise.resolve().then(() => checkPage(rows));
      checked.catch(() => {}); // awaited in walkOldest; this keeps an abandoned one from going unhandled
      inFlight.push(checked);
      while (inFlight.length >= maxInFlight || (!full && inFlight.length > 0)) await walkOldest();
      if (!full) break;
    }
  } finally {
    await checkers?.close();
  }
  const report = verifier.finish();
  const checkpoints = report.checkpoints.map(
    (check): SourcedCheckpointCheck => ({
      ...check,
      source: check.checkpoint === last ? "postgres" : "outside",
    }),
  );
  const signatures = options.signatures ?? [];
  const firstDisagreement = firstDisagreementOf(checkpoints, signatures);
  return {
    ...report,
    ok: report.ok && signatures.every((check) => signatureAcceptable(check.status)),
    checkpoints,
    signatures,
    fromSeq,
    ...(firstDisagreement ? { firstDisagreement } : {}),
  };
}

/** The disagreement of the lowest seq; at one seq, the chain's before the signature's. */
function firstDisagreementOf(
  checkpoints: SourcedCheckpointCheck[],
  signatures: SignatureCheck[],
): CheckpointDisagreement | undefined {
  const found: CheckpointDisagreement[] = [
    ...checkpoints
      .filter((check) => check.status !== "ok")
      .map((check) => ({
        seq: check.checkpoint.seq,
        source: check.source,
        problem: check.status as "hash_mismatch" | "missing",
        message: check.message,
      })),
    ...signatures
      .filter((check) => !signatureAcceptable(check.status))
      .map((check) => ({
        seq: check.seq,
        source: "outside" as const,
        problem: "signature" as const,
        message: `${check.status}: ${check.message}`,
      })),
  ];
  return found.sort(
    (a, b) => a.seq - b.seq || Number(a.problem === "signature") - Number(b.problem === "signature"),
  )[0];
}

/** The nearest record below `fromSeq` (its hash is the anchor), or the empty chain's head. */
async function readAnchor(pool: pg.Pool, fromSeq: number): Promise<ChainHead> {
  if (fromSeq === 1) return EMPTY_CHAIN_HEAD;
  const result = await pool.query(
    "SELECT seq, hash FROM audit_log WHERE seq < $1 ORDER BY seq DESC LIMIT 1",
    [fromSeq],
  );
  const row = result.rows[0];
  return row ? { seq: toSafeInteger(row.seq, "seq"), hash: toBytes(row.hash, "hash") } : EMPTY_CHAIN_HEAD;
}

async function readHeadSeq(pool: pg.Pool): Promise<number> {
  const result = await pool.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_log");
  return toSafeInteger(result.rows[0].seq, "seq");
}

/** One per core beyond the reading thread's and the Postgres backend's, at most 4. */
export function defaultVerifyWorkers(): number {
  return Math.min(4, Math.max(0, availableParallelism() - 2));
}

function positiveOrZero(value: number, name: string): number {
  return value === 0 ? 0 : positiveInteger(value, name);
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new GatehouseError("invalid_arguments", `${name} must be a positive integer, not ${value}`);
  }
  return value;
}
