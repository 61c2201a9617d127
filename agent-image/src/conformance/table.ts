/**
 * Writes docs/engines.md's engine × case table from the conformance suite's last run (vitest's JSON
 * reporter): `node agent-image/src/conformance/table.ts <results.json> [docs/engines.md]`, run by
 * `make engines-table`. The table goes between the two markers; the rest of the page is left as is.
 */
import { readFileSync, writeFileSync } from "node:fs";

export const START = "<!-- engines-table:start (make engines-table writes this table) -->";
export const END = "<!-- engines-table:end -->";

/** The parts of vitest's JSON report the table reads. */
interface Report {
  testResults: Array<{
    assertionResults: Array<{ ancestorTitles: string[]; title: string; status: string }>;
  }>;
}

const KNOWN = / \(known failure: .*\)$/;

function cell(status: string, title: string): string {
  if (KNOWN.test(title))
    return status === "passed" ? "known failure" : "✗ (known failure passes: update engines.ts)";
  if (status === "passed") return "✓";
  if (status === "failed") return "✗";
  return status; // todo, skipped
}

/**
 * The markdown table: one row per case (group, title), one column per engine — in `order` (the
 * registry's), then any other in the run's order, since the run's order depends on which file ended first.
 */
export function engineTable(report: Report, order: readonly string[] = []): string {
  const engines: string[] = [];
  const rows = new Map<string, { group: string; title: string; cells: Map<string, string> }>();
  for (const file of report.testResults) {
    for (const result of file.assertionResults) {
      const [suite = "", group = "", ...rest] = result.ancestorTitles;
      const engine = suite.replace(/^engine /, "");
      if (!suite.startsWith("engine ")) continue;
      if (!engines.includes(engine)) engines.push(engine);
      const title = [...rest, result.title.replace(KNOWN, "")].join(" › ");
      const key = `${group}\u0000${title}`;
      const row = rows.get(key) ?? { group, title, cells: new Map() };
      row.cells.set(engine, cell(result.status, result.title));
      rows.set(key, row);
    }
  }
  if (rows.size === 0) throw new Error("the report holds no conformance case (was the suite run?)");
  const rank = (engine: string) => (order.includes(engine) ? order.indexOf(engine) : order.length);
  engines.sort((a, b) => rank(a) - rank(b));
  const escapeCell = (text: string) => text.replaceAll("|", "\\|");
  const lines = [
    `| group | case | ${engines.join(" | ")} |`,
    `| --- | --- | ${engines.map(() => "---").join(" | ")} |`,
    ...[...rows.values()].map(
      (row) =>
        `| ${row.group} | ${escapeCell(row.title)} | ${engines.map((e) => row.cells.get(e) ?? "not run").join(" | ")} |`,
    ),
  ];
  const passed = (engine: string) => [...rows.values()].filter((row) => row.cells.get(engine) === "✓").length;
  const totals = engines.map((engine) => `${engine} ${passed(engine)} of ${rows.size}`).join(", ");
  return `${lines.join("\n")}\n\nPassed: ${totals}.`;
}

/** `page` with the text between the markers replaced by `table`. */
export function withTable(page: string, table: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`the page lacks the markers ${START} … ${END}`);
  return `${page.slice(0, start + START.length)}\n\n${table}\n\n${page.slice(end)}`;
}

if (import.meta.main) {
  const [results, page = "docs/engines.md"] = process.argv.slice(2);
  if (!results) {
    console.error("usage: node agent-image/src/conformance/table.ts <vitest-results.json> [docs/engines.md]");
    process.exit(64);
  }
  const report = JSON.parse(readFileSync(results, "utf8")) as Report;
  const { engines } = await import("./engines.ts");
  const order = engines.map((engine) => engine.name);
  writeFileSync(page, withTable(readFileSync(page, "utf8"), engineTable(report, order)));
  console.log(`wrote the engine table of ${page}`);
}
