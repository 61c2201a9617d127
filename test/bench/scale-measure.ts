/**
 * What scale.ts reads about one installation while it runs: a process's CPU seconds and peak RSS
 * (/proc), the controller's reconciles per controller (its /metrics), the database's rows and bytes per
 * table, the serialized size of cached objects as the caches keep them, and the machine it ran on.
 */
import { createReadStream, readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { createInterface } from "node:readline";
import { serialize } from "node:v8";
import type { KubernetesObject } from "@kubernetes/client-node";
import type pg from "pg";
import { CONTROLLER_USERNAME, GATEWAY_USERNAME } from "../../operator/src/api/well-known.ts";
import { stripForCache } from "../../operator/src/kube/runtime/cache-transform.ts";
import { auditLogFiles, auditTimeMs } from "./api-audit-log.ts";
import { histogramTotals } from "./stage-breakdown.ts";

const CLOCK_TICKS = 100; // USER_HZ on Linux (sysconf(_SC_CLK_TCK)), the unit of /proc/<pid>/stat times

/** utime+stime of process `pid`, in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Peak resident set (VmHWM) of process `pid`, in MiB. */
export function peakRssMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
}

/** Reconciles per controller (all results) and their summed seconds, from a /metrics page. */
export type Reconciles = Map<string, { count: number; seconds: number }>;

/** The controller's reconciles so far, from `metricsUrl`. */
export async function scrapeReconciles(metricsUrl: string): Promise<Reconciles> {
  return reconcileTotals(await (await fetch(metricsUrl)).text());
}

/** The reconciles per controller in Prometheus text `text` (see {@link scrapeReconciles}). */
export function reconcileTotals(text: string): Reconciles {
  const totals: Reconciles = new Map();
  for (const [, labels = "", value] of text.matchAll(/^gatehouse_reconcile_total\{([^}]*)\} (\S+)$/gm)) {
    const controller = /controller="([^"]*)"/.exec(labels)?.[1] ?? "";
    const entry = totals.get(controller) ?? { count: 0, seconds: 0 };
    entry.count += Number(value);
    totals.set(controller, entry);
  }
  for (const [controller, { sum }] of histogramTotals(text, "gatehouse_reconcile_time_seconds")) {
    const entry = totals.get(controller) ?? { count: 0, seconds: 0 };
    entry.seconds = sum;
    totals.set(controller, entry);
  }
  return totals;
}

/** Reconciles per controller between two scrapes, per `per` (sessions), with milliseconds each. */
export function reconcilesPer(before: Reconciles, after: Reconciles, per: number) {
  const out: Record<string, { reconciles: number; perSession: number; msPerReconcile: number }> = {};
  for (const [controller, end] of after) {
    const start = before.get(controller) ?? { count: 0, seconds: 0 };
    const count = end.count - start.count;
    if (count <= 0) continue;
    out[controller] = {
      reconciles: count,
      perSession: round(count / per, 2),
      msPerReconcile: round(((end.seconds - start.seconds) * 1000) / count, 2),
    };
  }
  return out;
}

/** Rows and bytes (pg_total_relation_size: table, indexes, TOAST) of each table of the public schema. */
export async function tableSizes(pool: pg.Pool): Promise<Map<string, { rows: number; bytes: number }>> {
  const tables = await pool.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`,
  );
  const sizes = new Map<string, { rows: number; bytes: number }>();
  for (const table of tables.rows) {
    const count = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${table.name}"`);
    sizes.set(table.name, { rows: Number(count.rows[0]?.n ?? 0), bytes: Number(table.bytes) });
  }
  return sizes;
}

/** The growth of each table between two {@link tableSizes}, per session, and the totals. */
export function growthPerSession(
  before: Map<string, { rows: number; bytes: number }>,
  after: Map<string, { rows: number; bytes: number }>,
  sessions: number,
) {
  const tables: Record<
    string,
    { rows: number; bytes: number; rowsPerSession: number; bytesPerSession: number }
  > = {};
  let rows = 0;
  let bytes = 0;
  for (const [name, end] of after) {
    const start = before.get(name) ?? { rows: 0, bytes: 0 };
    const grownRows = end.rows - start.rows;
    const grownBytes = end.bytes - start.bytes;
    if (grownRows === 0 && grownBytes === 0) continue;
    rows += grownRows;
    bytes += grownBytes;
    tables[name] = {
      rows: grownRows,
      bytes: grownBytes,
      rowsPerSession: round(grownRows / sessions, 2),
      bytesPerSession: Math.round(grownBytes / sessions),
    };
  }
  return { rowsPerSession: round(rows / sessions, 2), bytesPerSession: Math.round(bytes / sessions), tables };
}

/** Who sent a request, by the API server's username. */
function client(user: string): string {
  if (user === CONTROLLER_USERNAME) return "controller";
  if (user === GATEWAY_USERNAME) return "gateway";
  if (user.startsWith("system:node:") || user.includes("local-node")) return "node";
  if (user === "admin" || user === "alice") return "benchmark";
  if (user === "system:kube-scheduler") return "scheduler";
  return "kubernetesControllers";
}

/**
 * Completed API requests per client between `fromMs` and `toMs`, from the audit log at `path` (see
 * {@link requestsByClientIn}).
 */
export async function requestsByClient(
  path: string,
  fromMs: number,
  toMs: number,
): Promise<Record<string, number>> {
  const [counts = {}] = await requestsByClientIn(path, [{ fromMs, toMs }]);
  return counts;
}

/**
 * Completed API requests per client in each of `windows`, from the audit log at `path` and the parts
 * the API server rotated out of it (`auditLogFiles`), read once and as a stream: at thousands of
 * sessions they hold gigabytes of gatehouse.dev bodies (api-audit-log.ts reads a whole log into one
 * string), so only each line's stage, user and time are picked out.
 */
export async function requestsByClientIn(
  path: string,
  windows: readonly { fromMs: number; toMs: number }[],
): Promise<Record<string, number>[]> {
  const counts: Record<string, number>[] = windows.map(() => ({}));
  for (const file of auditLogFiles(path)) {
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) countLine(line);
  }
  return counts;

  function countLine(line: string) {
    if (!line.includes('"stage":"ResponseComplete"')) return;
    const user = /"user":\{"username":"([^"]*)"/.exec(line)?.[1];
    const at = /"stageTimestamp":"([^"]*)"/.exec(line)?.[1];
    if (user === undefined || at === undefined) return;
    const ms = auditTimeMs(at);
    windows.forEach((window, i) => {
      if (ms < window.fromMs || ms > window.toMs) return;
      const who = client(user);
      const into = counts[i]!;
      into[who] = (into[who] ?? 0) + 1;
    });
  }
}

/**
 * Mean v8.serialize size of `objects` as the caches keep them (kube/runtime/cache-transform.ts's
 * stripForCache), in bytes: the objects the API server really holds at the end of the run, where
 * bench-cache measures made-up ones (and their heap cost, about 2× this).
 */
export function serializedBytesPerObject(objects: KubernetesObject[]): number {
  if (objects.length === 0) return 0;
  let bytes = 0;
  for (const object of objects) bytes += serialize(stripForCache(structuredClone(object))).length;
  return Math.round(bytes / objects.length);
}

/** The machine: cores, memory and load averages at the time of the call. */
export function machine() {
  const [one, five, fifteen] = loadavg();
  return {
    cores: cpus().length,
    memoryMiB: Math.round(totalmem() / 2 ** 20),
    loadAverage: { one: round(one!, 2), five: round(five!, 2), fifteen: round(fifteen!, 2) },
  };
}

/** `value` rounded to `digits` decimals. */
export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
