/**
 * The human-readable form of an audit verification report, as `gatehouse-audit verify` prints it:
 * a verdict line, then one line per problem (first bad row, gaps, checkpoints).
 */
import type { ChainVerifyReport } from "../store/audit-verify.ts";

/**
 * Lines describing `report`, the verdict first, checkpoint lines by seq. `outsideName` names where the
 * outside checkpoints came from (e.g. `ConfigMap gatehouse-system/gatehouse-audit-checkpoints`) in each
 * checkpoint line.
 */
export function verifyReportLines(report: ChainVerifyReport, outsideName = "outside copy"): string[] {
  const range = report.records === 0 ? "no records" : `${report.records} records from seq ${report.fromSeq}`;
  const head = `head seq ${report.head.seq} (${report.head.hash.slice(0, 16)}…)`;
  const lines = [`${report.ok ? "audit chain intact" : "AUDIT CHAIN BROKEN"}: ${range}, ${head}`];
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
  for (const check of ordered) {
    const source = check.source === "postgres" ? "Postgres audit_checkpoints" : outsideName;
    lines.push(`checkpoint seq ${check.checkpoint.seq} (${source}): ${check.status} — ${check.message}`);
  }
  if (report.checkpoints.length === 0) lines.push("no checkpoint to compare the head with");
  return lines;
}
