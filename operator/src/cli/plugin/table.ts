/**
 * Text output in kubectl's style: a table of left-aligned columns separated by three spaces (as
 * kubectl's printers do with text/tabwriter), and ages as kubectl prints them.
 */

/** Rows under upper-case headers, each column as wide as its widest cell; no trailing spaces. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/**
 * A duration as kubectl prints ages: `45s`, `12m`, `3h20m`, `5d`… — the rules of
 * k8s.io/apimachinery/pkg/util/duration.HumanDuration, for ≥ 0 milliseconds (negative ones print as 0s).
 */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 ? `${seconds % 60}s` : ""}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return `${hours}h${minutes % 60 ? `${minutes % 60}m` : ""}`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 192) return `${days}d${hours % 24 ? `${hours % 24}h` : ""}`;
  if (days < 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (years < 8) return `${years}y${days % 365 ? `${days % 365}d` : ""}`;
  return `${years}y`;
}
