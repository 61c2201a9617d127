#!/usr/bin/env node
/**
 * `gatehouse-audit verify [--from SEQ] [--json]` — verifies the audit chain in the Postgres named by
 * `DATABASE_URL` (DESIGN §6): every hash recomputed from the stored bytes, every link, every column
 * against the hashed bytes, sequence gaps, and the head against the last checkpoint. A progress bar
 * is drawn on stderr when it is a terminal; the verdict goes to stdout (`--json`: the whole report).
 *
 * Exit codes: 0 the chain is intact; 1 it is broken (tampering or loss detected); 2 usage error,
 * missing `DATABASE_URL`, or the database could not be read.
 *
 * `DATABASE_URL` needs SELECT on `audit_log` and `audit_checkpoints` (the operator role has it).
 */
import { parseArgs } from "node:util";
import { createPostgresAuditLog } from "../store/audit-log.ts";
import { createPool } from "../store/connection.ts";
import { ProgressBar } from "./progress-bar.ts";
import { verifyReportLines } from "./verify-report-text.ts";

const USAGE = "usage: gatehouse-audit verify [--from SEQ] [--json]   (reads DATABASE_URL)";

/** Exit codes of the command. */
const EXIT = { intact: 0, broken: 1, error: 2 } as const;

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed: ReturnType<typeof parseCommand>;
  try {
    parsed = parseCommand(argv);
  } catch (error) {
    process.stderr.write(`gatehouse-audit: ${(error as Error).message}\n${USAGE}\n`);
    return EXIT.error;
  }
  if (parsed.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.intact;
  }
  const url = env.DATABASE_URL;
  if (!url) {
    process.stderr.write(`gatehouse-audit: DATABASE_URL is not set\n${USAGE}\n`);
    return EXIT.error;
  }

  const pool = createPool(url, { max: 2 });
  const bar = new ProgressBar(process.stderr, "verify");
  try {
    const report = await createPostgresAuditLog(pool).verify({
      fromSeq: parsed.fromSeq,
      onProgress: (p) => bar.update(p.verified, Math.max(p.headSeq - p.fromSeq + 1, p.verified)),
    });
    bar.finish();
    const text = parsed.json ? JSON.stringify(report, null, 2) : verifyReportLines(report).join("\n");
    process.stdout.write(`${text}\n`);
    return report.ok ? EXIT.intact : EXIT.broken;
  } catch (error) {
    bar.finish();
    const where = new URL(url).host || "DATABASE_URL";
    process.stderr.write(
      `gatehouse-audit: cannot verify the audit log at ${where}: ${(error as Error).message}\n`,
    );
    return EXIT.error;
  } finally {
    await pool.end();
  }
}

/** Parses `verify [--from SEQ] [--json]`. Errors: throws with a message for anything else. */
function parseCommand(argv: string[]): { help: boolean; fromSeq: number; json: boolean } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      from: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return { help: true, fromSeq: 1, json: false };
  if (positionals.length !== 1 || positionals[0] !== "verify") {
    throw new Error(
      positionals.length === 0 ? "missing command" : `unknown command ${positionals.join(" ")}`,
    );
  }
  const fromSeq = values.from === undefined ? 1 : Number(values.from);
  if (!/^\d+$/.test(values.from ?? "1") || !Number.isSafeInteger(fromSeq) || fromSeq < 1) {
    throw new Error(`--from must be a positive integer, not ${JSON.stringify(values.from)}`);
  }
  return { help: false, fromSeq, json: values.json };
}

process.exitCode = await main(process.argv.slice(2), process.env);
