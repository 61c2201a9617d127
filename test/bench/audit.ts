/**
 * Benchmark of the audit chain in Postgres (`make bench`; not part of `make test`). The machine is
 * shared and noisy, so every figure comes with a baseline measured in the same run, on the same
 * database and pool, and the ratio between them:
 *   - sequential appends (one awaited `append` at a time: lock, head, seal, insert, commit) against
 *     sequential raw single-row INSERTs of the same bytes into an unchained table;
 *   - batched appends (many concurrent `append` calls sharing transactions through the group
 *     commit) against the same number of raw single-row INSERTs issued concurrently on the pool;
 *   - verify() rows per second on a chain of `--rows` records (default 1 000 000) against merely
 *     reading the same rows with the same keyset pages.
 * Writes test/bench/results/audit.json.
 *
 *   node test/bench/audit.ts [--rows N]
 */
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { EMPTY_CHAIN_HEAD, sealAuditRecord } from "../../operator/src/core/audit.ts";
import type { AuditEntry } from "../../operator/src/core/ports.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { AUDIT_COLUMN_LIST, auditRowValues } from "../../operator/src/store/audit/row.ts";
import { freshDatabase } from "../integration/fresh-database.ts";

const RESULTS = fileURLToPath(new URL("./results/audit.json", import.meta.url));
const SEQUENTIAL = 2_000;
const BATCHED = 20_000;
const POPULATE_BATCH = 5_000;
const PAGE_SIZE = 5_000;

/** An entry shaped like Core's `execution.started` records. */
function entry(n: number): AuditEntry {
  return {
    kind: "execution.started",
    actor: "alice",
    outcome: "pending",
    sessionUid: "6f1c2a9e-4b7d-4e8a-9c3f-2d5e8a1b7c40",
    executionId: n.toString(16).padStart(40, "0"),
    atMicros: 1_700_000_000_000_000 + n,
    payload: {
      session: "plant-a/replan-week-47",
      capability: "aps.schedule.publish",
      capabilityObject: "aps-schedule-publish",
      provider: "plant-a/aps",
      argumentsDigest: "3f".repeat(32),
      idempotencyKey: `gh1.${n.toString(16).padStart(40, "0")}`,
      approval: `apr-${n.toString(16).padStart(20, "0")}`,
    },
  };
}

async function seconds(run: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;

async function main(): Promise<void> {
  const rowsFlag = process.argv.indexOf("--rows");
  const verifyRows = rowsFlag >= 0 ? Number(process.argv[rowsFlag + 1]) : 1_000_000;
  const db = await freshDatabase();
  try {
    const log = createPostgresAuditLog(db.operator);
    // The baseline table: the audit columns without the chain (no lock, no head, no hashing, no checks).
    await db.owner.query(
      `CREATE TABLE bench_raw_inserts (LIKE audit_log, PRIMARY KEY (seq));
       GRANT INSERT ON bench_raw_inserts TO gatehouse_operator;`,
    );
    const sample = auditRowValues(sealAuditRecord(EMPTY_CHAIN_HEAD, entry(0)));
    const rawInsert = (n: number) =>
      db.operator.query(
        `INSERT INTO bench_raw_inserts (${AUDIT_COLUMN_LIST}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [n, ...sample.slice(1)],
      );

    console.log(`sequential: ${SEQUENTIAL} appends vs ${SEQUENTIAL} raw INSERTs, one at a time`);
    const rawSequential = await seconds(async () => {
      for (let i = 1; i <= SEQUENTIAL; i++) await rawInsert(i);
    });
    const appendSequential = await seconds(async () => {
      for (let i = 1; i <= SEQUENTIAL; i++) await log.append(entry(i));
    });

    console.log(`batched: ${BATCHED} concurrent appends vs ${BATCHED} concurrent raw INSERTs`);
    const rawBatched = await seconds(() =>
      Promise.all(Array.from({ length: BATCHED }, (_, i) => rawInsert(SEQUENTIAL + i + 1))),
    );
    const appendBatched = await seconds(() =>
      Promise.all(Array.from({ length: BATCHED }, (_, i) => log.append(entry(SEQUENTIAL + i + 1)))),
    );

    const existing = SEQUENTIAL + BATCHED;
    console.log(`populating the chain to ${verifyRows} records (appendBatch of ${POPULATE_BATCH})`);
    const populate = await seconds(async () => {
      for (let n = existing + 1; n <= verifyRows; n += POPULATE_BATCH) {
        const count = Math.min(POPULATE_BATCH, verifyRows - n + 1);
        await log.appendBatch(Array.from({ length: count }, (_, i) => entry(n + i)));
      }
    });
    await log.checkpoint();
    await db.admin.query("VACUUM ANALYZE audit_log");

    console.log(`verify: ${verifyRows} records vs reading the same pages`);
    const readOnly = await seconds(async () => {
      for (let after = 0; ; ) {
        const page = await db.operator.query(
          `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT ${PAGE_SIZE}`,
          [after],
        );
        if (page.rows.length < PAGE_SIZE) break;
        after = page.rows[page.rows.length - 1].seq;
      }
    });
    let report: Awaited<ReturnType<typeof log.verify>> | undefined;
    const verify = await seconds(async () => {
      report = await log.verify({ pageSize: PAGE_SIZE });
    });
    if (!report?.ok || report.records !== verifyRows) {
      throw new Error(`verify did not pass on the benchmark chain: ${JSON.stringify(report)}`);
    }

    const results = {
      measuredAt: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        node: process.version,
        postgres: (await db.admin.query("SHOW server_version")).rows[0].server_version as string,
      },
      sequentialAppends: {
        count: SEQUENTIAL,
        appendsPerSecond: round(SEQUENTIAL / appendSequential),
        rawInsertsPerSecond: round(SEQUENTIAL / rawSequential),
        ratioToRawInserts: round(rawSequential / appendSequential, 3),
      },
      batchedAppends: {
        count: BATCHED,
        poolSize: 4,
        appendsPerSecond: round(BATCHED / appendBatched),
        rawInsertsPerSecond: round(BATCHED / rawBatched),
        ratioToRawInserts: round(rawBatched / appendBatched, 3),
      },
      populate: {
        count: verifyRows - existing,
        entriesPerTransaction: POPULATE_BATCH,
        appendsPerSecond: round((verifyRows - existing) / populate),
      },
      verify: {
        rows: verifyRows,
        pageSize: PAGE_SIZE,
        rowsPerSecond: round(verifyRows / verify),
        readOnlyRowsPerSecond: round(verifyRows / readOnly),
        ratioToReadOnly: round(readOnly / verify, 3),
        seconds: round(verify, 2),
      },
    };
    writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
    const s = results.sequentialAppends;
    const b = results.batchedAppends;
    const v = results.verify;
    console.log(
      `sequential appends: ${s.appendsPerSecond}/s, raw INSERTs ${s.rawInsertsPerSecond}/s (ratio ${s.ratioToRawInserts})`,
    );
    console.log(
      `batched appends:    ${b.appendsPerSecond}/s, raw INSERTs ${b.rawInsertsPerSecond}/s (ratio ${b.ratioToRawInserts})`,
    );
    console.log(`populate (appendBatch of ${POPULATE_BATCH}): ${results.populate.appendsPerSecond}/s`);
    console.log(
      `verify:             ${v.rowsPerSecond} rows/s over ${v.rows} rows, reading alone ${v.readOnlyRowsPerSecond} rows/s (ratio ${v.ratioToReadOnly})`,
    );
    console.log(`wrote ${RESULTS}`);
  } finally {
    await db.drop();
  }
}

await main();
