/**
 * Benchmark of the audit chain in Postgres (`make bench`; not part of `make test`). The machine is
 * shared and noisy, so every figure comes with a baseline measured in the same run, on the same
 * database and pool, and the ratio between them:
 *   - sequential appends (one awaited `append` at a time: lock, head, seal, insert, commit) against
 *     sequential raw single-row INSERTs of the same bytes into an unchained table;
 *   - batched appends (many concurrent `append` calls sharing transactions through the group
 *     commit) against the same number of raw single-row INSERTs issued concurrently on the pool;
 *   - verify() rows per second on a chain of `--rows` records (default 1 000 000) against merely
 *     reading the same rows with the same keyset pages as verify() reads them (and, for the record,
 *     as it read them before: every column parsed by pg into row objects), with the workers it
 *     starts by default here and with one, and what each stage costs per row (`microsecondsPerRow`).
 * Writes test/bench/results/audit.json.
 *
 *   node test/bench/audit.ts [--rows N]
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import {
  ChainVerifier,
  chainHash,
  EMPTY_CHAIN_HEAD,
  sealAuditRecord,
} from "../../operator/src/core/audit.ts";
import { UTF8 } from "../../operator/src/core/audit-record.ts";
import { checkContent } from "../../operator/src/core/audit-verifier.ts";
import { canonicalJson, isCanonicalText } from "../../operator/src/core/canonical.ts";
import type { AuditEntry } from "../../operator/src/core/ports.ts";
import { createPostgresAuditLog, type PostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { AUDIT_COLUMN_LIST, auditRowValues } from "../../operator/src/store/audit/row.ts";
import { defaultVerifyWorkers } from "../../operator/src/store/audit/verify.ts";
import {
  checkPage,
  linksOf,
  type RawAuditRow,
  readRawPage,
  recordFromRaw,
  seqOf,
} from "../../operator/src/store/audit/verify-rows.ts";
import { createPool } from "../../operator/src/store/connection.ts";
import { freshDatabase } from "../integration/fresh-database.ts";

const RESULTS = fileURLToPath(new URL("./results/audit.json", import.meta.url));
const SEQUENTIAL = 2_000;
const BATCHED = 20_000;
const POPULATE_BATCH = 5_000;
const PAGE_SIZE = 5_000;
/** Each verify-side figure is the best of this many runs: other work on the machine only slows a run down. */
const REPEATS = 2;
/** Rows held in memory for the per-stage breakdown. */
const BREAKDOWN_ROWS = 100_000;

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

/** The fastest of {@link REPEATS} runs, in seconds. */
async function best(run: () => Promise<unknown> | unknown): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < REPEATS; i++) fastest = Math.min(fastest, await seconds(async () => run()));
  return fastest;
}

/** verify() with `workers`, refusing any report but an intact chain of `rows` records. */
async function checkedVerify(log: PostgresAuditLog, rows: number, workers: number): Promise<void> {
  const report = await log.verify({ pageSize: PAGE_SIZE, workers });
  if (!report.ok || report.records !== rows) {
    throw new Error(`verify did not pass on the benchmark chain: ${JSON.stringify(report)}`);
  }
}

/**
 * What each stage of verify() costs per row on one thread, in microseconds, over the first `count`
 * rows held in memory. On the verifying thread: `fetch` (the read alone, filled in by the caller),
 * `transfer` (the structured clone postMessage makes of a page) and `walk` (linking the checked
 * rows). On a worker: `checkPage` (all of a worker's work), made of `decode` (the server's text to a
 * record), then `content` (`checkContent`): `hash`, `parse`, `canonical` and the column comparisons.
 * `canonicalFull` is the re-serialization the canonical-text shortcut spares.
 */
async function stageBreakdown(pool: pg.Pool, count: number): Promise<Record<string, number>> {
  const pages: RawAuditRow[][] = [];
  for (let after = 0, read = 0; read < count; ) {
    const page = await readRawPage(pool, after, Math.min(PAGE_SIZE, count - read));
    const last = page.at(-1);
    if (!last) break;
    pages.push(page);
    read += page.length;
    after = seqOf(last);
  }
  const rows = pages.flat();
  const records = rows.map(recordFromRaw);
  const texts = records.map((record) => UTF8.decode(record.canonical));
  const parsed = texts.map((text) => JSON.parse(text));
  const checked = pages.map(checkPage);
  const perRow = async (run: () => void) => round(((await best(run)) / rows.length) * 1e6, 2);
  return {
    fetch: 0,
    transfer: await perRow(() => pages.map((page) => structuredClone(page))),
    walk: await perRow(() => {
      const verifier = new ChainVerifier();
      for (const page of checked) for (const link of linksOf(page)) verifier.pushChecked(link, undefined);
    }),
    checkPage: await perRow(() => pages.map(checkPage)),
    decode: await perRow(() => rows.map(recordFromRaw)),
    hash: await perRow(() => records.map((r) => chainHash(r.prevHash, r.canonical))),
    parse: await perRow(() => records.map((r) => JSON.parse(UTF8.decode(r.canonical)))),
    canonical: await perRow(() => texts.map((text, i) => isCanonicalText(text, parsed[i]))),
    canonicalFull: await perRow(() => texts.map((text, i) => canonicalJson(parsed[i]) === text)),
    content: await perRow(() => records.map(checkContent)),
  };
}

async function main(): Promise<void> {
  const rowsFlag = process.argv.indexOf("--rows");
  const verifyRows = rowsFlag >= 0 ? Number(process.argv[rowsFlag + 1]) : 1_000_000;
  const db = await freshDatabase();
  const pools: pg.Pool[] = [];
  try {
    // Waits for a free connection unbounded: 20 000 concurrent INSERTs queue longer than the store's 5 s.
    const pool = createPool(db.operatorUrl, { max: 4, connectTimeoutMs: 0 });
    pools.push(pool);
    const log = createPostgresAuditLog(pool);
    // The baseline table: the audit columns without the chain (no lock, no head, no hashing, no checks).
    await db.owner.query(
      `CREATE TABLE bench_raw_inserts (LIKE audit_log, PRIMARY KEY (seq));
       GRANT INSERT ON bench_raw_inserts TO gatehouse_operator;`,
    );
    const sample = auditRowValues(sealAuditRecord(EMPTY_CHAIN_HEAD, entry(0)));
    const rawInsert = (n: number) =>
      pool.query(
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

    console.log(`verify: ${verifyRows} records vs reading the same pages (best of ${REPEATS})`);
    const loadBefore = loadavg();
    // The plain read as verify() did it before: objects with every column parsed by pg.
    const parsedRead = await best(async () => {
      for (let after = 0; ; ) {
        const page = await pool.query(
          `SELECT ${AUDIT_COLUMN_LIST} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT ${PAGE_SIZE}`,
          [after],
        );
        if (page.rows.length < PAGE_SIZE) break;
        after = page.rows[page.rows.length - 1].seq;
      }
    });
    // The plain read as verify() reads: the same pages, the server's text left unparsed.
    const rawRead = await best(async () => {
      for (let after = 0; ; ) {
        const rows = await readRawPage(pool, after, PAGE_SIZE);
        const last = rows.at(-1);
        if (rows.length < PAGE_SIZE || !last) break;
        after = seqOf(last);
      }
    });
    // verify() as it runs by default on this machine, and with one content-checking worker.
    const workers = defaultVerifyWorkers();
    const verify = await best(() => checkedVerify(log, verifyRows, workers));
    const verifyOneWorker = await best(() => checkedVerify(log, verifyRows, 1));
    const breakdown = await stageBreakdown(pool, Math.min(verifyRows, BREAKDOWN_ROWS));
    breakdown.fetch = round((rawRead / verifyRows) * 1e6, 2);

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
        workers,
        // 1-, 5- and 15-minute load averages when the verify runs started and when they ended.
        loadAverage: { start: loadBefore.map((n) => round(n, 2)), end: loadavg().map((n) => round(n, 2)) },
        rowsPerSecond: round(verifyRows / verify),
        readOnlyRowsPerSecond: round(verifyRows / rawRead),
        ratioToReadOnly: round(rawRead / verify, 3),
        seconds: round(verify, 2),
        oneWorker: {
          rowsPerSecond: round(verifyRows / verifyOneWorker),
          ratioToReadOnly: round(rawRead / verifyOneWorker, 3),
        },
        parsedReadRowsPerSecond: round(verifyRows / parsedRead),
        ratioToParsedRead: round(parsedRead / verify, 3),
        microsecondsPerRow: breakdown,
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
      `verify:             ${v.rowsPerSecond} rows/s over ${v.rows} rows with ${v.workers} workers, reading alone ${v.readOnlyRowsPerSecond} rows/s (ratio ${v.ratioToReadOnly}); with 1 worker ${v.oneWorker.rowsPerSecond} rows/s (ratio ${v.oneWorker.ratioToReadOnly}); reading with pg's parsing ${v.parsedReadRowsPerSecond} rows/s (ratio ${v.ratioToParsedRead})`,
    );
    console.log(`verify stages (µs per row, one thread): ${JSON.stringify(v.microsecondsPerRow)}`);
    console.log(`wrote ${RESULTS}`);
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    await db.drop();
  }
}

await main();
