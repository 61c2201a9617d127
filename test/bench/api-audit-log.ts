/**
 * The local control plane's API audit log (`--audit-log-path`, JSON lines of audit.k8s.io/v1 Events,
 * stage ResponseComplete only: test/cluster/src/audit-policy.ts) read as the benchmarks need it: who
 * sent which request about which object, when the API server received it and when it answered. The
 * timestamps have microsecond precision and come from the same host clock as `Date.now()` in every
 * process of the harness (pods are processes on this machine), so they can be subtracted from them.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The files of the audit log at `path`, oldest first: the API server rotates it at 100 MB
 * (`--audit-log-maxsize` unset: its log library's default), keeping every earlier part beside it as
 * `<name>-<time>.<ext>` — a run of thousands of sessions writes several.
 */
export function auditLogFiles(path: string): string[] {
  const dir = dirname(path);
  const name = basename(path);
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  const rotated = readdirSync(dir)
    .filter((file) => file !== name && file.startsWith(`${stem}-`) && file.endsWith(ext))
    .sort(); // the time in the name sorts as it reads
  return [...rotated.map((file) => join(dir, file)), path];
}

/** One completed API request. Times are epoch milliseconds with a microsecond fraction. */
export interface ApiRequest {
  verb: string;
  user: string;
  resource: string;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  code: number | undefined;
  receivedMs: number;
  completedMs: number;
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** `2026-12-01T12:01:11.332703Z` → epoch ms with the microseconds kept (Date.parse keeps only ms). */
export function auditTimeMs(timestamp: string): number {
  const match = /^(.{19})(?:\.(\d+))?Z$/.exec(timestamp);
  if (!match) return Number.NaN;
  return Date.parse(`${match[1]}Z`) + Number(`0.${match[2] ?? "0"}`) * 1000;
}

/**
 * The requests in the audit log at `path`, its rotated parts included, that completed at or after
 * `sinceMs`, in log order.
 */
export function readApiRequests(path: string, sinceMs = 0): ApiRequest[] {
  const requests: ApiRequest[] = [];
  // One part at a time in memory (each up to 100 MB).
  for (const file of auditLogFiles(path)) readPart(file);
  return requests;

  function readPart(file: string) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line) continue;
      const event = JSON.parse(line) as AuditEvent;
      if (event.stage !== "ResponseComplete") continue;
      const completedMs = auditTimeMs(event.stageTimestamp);
      if (completedMs < sinceMs) continue;
      requests.push({
        verb: event.verb,
        user: event.user.username,
        resource: event.objectRef?.resource ?? "",
        subresource: event.objectRef?.subresource,
        namespace: event.objectRef?.namespace,
        name: event.objectRef?.name,
        code: event.responseStatus?.code,
        receivedMs: auditTimeMs(event.requestReceivedTimestamp),
        completedMs,
      });
    }
  }
}
