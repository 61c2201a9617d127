/**
 * The local control plane's API audit log (`--audit-log-path`, JSON lines of audit.k8s.io/v1 Events,
 * stage ResponseComplete only: test/cluster/src/audit-policy.ts) read as the benchmarks need it: who
 * sent which request about which object, when the API server received it and when it answered. The
 * timestamps have microsecond precision and come from the same host clock as `Date.now()` in every
 * process of the harness (pods are processes on this machine), so they can be subtracted from them.
 */
import { readFileSync } from "node:fs";

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

/** The requests in the audit log at `path` that completed at or after `sinceMs`, in log order. */
export function readApiRequests(path: string, sinceMs = 0): ApiRequest[] {
  const requests: ApiRequest[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
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
  return requests;
}
