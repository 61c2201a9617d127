/**
 * The human-readable form of an audit verification report, as `gatehouse-audit verify` prints it:
 * a verdict line, the first checkpoint that disagrees, then one line per problem (first bad row, gaps)
 * and per checkpoint, an outside one with its signature: `signed by key …`, `unsigned (legacy)`, or
 * `SIGNATURE FAILED (status): …`.
 */
import type { SignatureCheck } from "../core/witness-signature.ts";
import type { ChainVerifyReport } from "../store/audit/verify.ts";

/**
 * Lines describing `report`, the verdict first, checkpoint lines by seq. `outsideName` names where the
 * outside checkpoints came from (e.g. `ConfigMap gatehouse-system/gatehouse-audit-checkpoints`) in each
 * checkpoint line.
 */
export function verifyReportLines(report: ChainVerifyReport, outsideName = "outside copy"): string[] {
  const range = report.records === 0 ? "no records" : `${report.records} records from seq ${report.fromSeq}`;
  const head = `head seq ${report.head.seq} (${report.head.hash.slice(0, 16)}…)`;
  const lines = [`${report.ok ? "audit chain intact" : "AUDIT CHAIN BROKEN"}: ${range}, ${head}`];
  const first = report.firstDisagreement;
  if (first) {
    const source = first.source === "postgres" ? "Postgres audit_checkpoints" : outsideName;
    const way =
      first.problem === "hash_mismatch"
        ? "the chain holds another hash there"
        : first.problem === "missing"
          ? "the chain no longer holds that record"
          : "its signature fails";
    lines.push(`first checkpoint that disagrees: seq ${first.seq} (${source}): ${way}`);
  }
  if (report.firstBadRow) {
    const bad = report.firstBadRow;
    lines.push(`first bad row: seq ${bad.seq} (${bad.reason}): ${bad.message}`);
    if (report.badRows > 1) lines.push(`bad rows: ${report.badRows} in all`);
  }
  for (const gap of report.gaps) {
    lines.push(
      gap.from === gap.to ? `gap: seq ${gap.from} is missing` : `gap: seq ${gap.from}..${gap.to} are missing`,
    );
  }
  // In seq order, Postgres's own before the outside copy's at the same seq.
  const ordered = [...report.checkpoints].sort(
    (a, b) =>
      a.checkpoint.seq - b.checkpoint.seq ||
      Number(a.source !== "postgres") - Number(b.source !== "postgres"),
  );
  const signatures = new Map<number, SignatureCheck>();
  for (const check of report.signatures) if (!signatures.has(check.seq)) signatures.set(check.seq, check);
  for (const check of ordered) {
    const source = check.source === "postgres" ? "Postgres audit_checkpoints" : outsideName;
    const signature = check.source === "outside" ? signatures.get(check.checkpoint.seq) : undefined;
    lines.push(
      `checkpoint seq ${check.checkpoint.seq} (${source}): ${check.status} — ${check.message}${signature ? `; ${signatureText(signature)}` : ""}`,
    );
  }
  // A signature check without a chain comparison: its checkpoint lies below --from.
  const compared = new Set(
    report.checkpoints.filter((c) => c.source === "outside").map((c) => c.checkpoint.seq),
  );
  for (const check of report.signatures) {
    if (!compared.has(check.seq))
      lines.push(`checkpoint seq ${check.seq} (${outsideName}): ${signatureText(check)}`);
  }
  if (report.checkpoints.length === 0) lines.push("no checkpoint to compare the head with");
  return lines;
}

/** One signature check as a phrase. */
function signatureText(check: SignatureCheck): string {
  if (check.status === "valid") return `signed by key ${check.kid}`;
  if (check.status === "unsigned_legacy") return "unsigned (legacy)";
  return `SIGNATURE FAILED (${check.status}): ${check.message}`;
}
