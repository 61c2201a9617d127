/**
 * One Approval's history as `gatehouse-audit show` prints it, computed from its audit records alone:
 * records → a history object (the `--json` form) → lines (the text form). Pure; the records come from
 * `store/approval-records.ts`.
 *
 * Each record becomes one step: the request, each decision, the end of the decision, a dispatch
 * refusal, the execution's start, recovery and finish, and any ignored decision or conflict — the
 * records that name this Approval, and the execution's own, not those of another Approval under its
 * execution id (`store/approval-records.ts`). A kind
 * this version does not know is kept as `other` with its payload, so a newer chain still reads.
 */
import { z } from "zod";
import { END_KINDS } from "../core/approval-lifecycle.ts";
import { AuditKind } from "../core/audit.ts";
import type { JsonObject } from "../core/canonical.ts";
import type { AuditOutcome, ChainedRecord } from "../core/ports.ts";
import type { ApprovalRecords } from "../store/approval-records.ts";

/** The kinds that end an Approval's decision, or (with `payload.atDispatch`) refuse its dispatch for good. */
const ENDING_KINDS: ReadonlySet<string> = END_KINDS;

const text = z.string();
const count = z.number().int();
const approvalRecordRef = z.object({ seq: count, hash: text });

const requestedPayload = z.object({
  tool: text.optional(),
  capability: text.optional(),
  argumentsDigest: text.optional(),
  target: z.object({ kind: text, id: text, version: text.optional() }).optional(),
  approvers: z
    .object({ users: z.array(text), groups: z.array(text) })
    .partial()
    .optional(),
  requiredApprovals: count.optional(),
  expiresAt: text.optional(),
});

const decidedPayload = z.object({
  index: count.optional(),
  approver: text.optional(),
  verdict: text.optional(),
  reason: text.optional(),
  counted: z.boolean().optional(),
  ignoredReason: text.optional(),
  rulesEnforced: z.boolean().optional(),
});

const ignoredPayload = z.object({
  index: count.optional(),
  approver: text.optional(),
  verdict: text.optional(),
  phase: text.optional(),
});

const endingPayload = z.object({
  phase: text.optional(),
  reason: text.optional(),
  message: text.optional(),
  decisions: z.array(z.object({ index: count, approver: text, verdict: text })).optional(),
  approvedBy: z.array(text).optional(),
  rejectedBy: text.optional(),
  backfilled: z.boolean().optional(),
  atDispatch: z.boolean().optional(),
  approvalRecord: approvalRecordRef.optional(),
});

const refusedPayload = z.object({
  phase: text.optional(),
  reason: text.optional(),
  message: text.optional(),
});

const conflictPayload = z.object({ tool: text.optional(), message: text.optional() });

const startedPayload = z.object({
  capability: text.optional(),
  provider: text.optional(),
  argumentsDigest: text.optional(),
  idempotencyKey: text.optional(),
  approvalRecord: approvalRecordRef.optional(),
});

const recoveringPayload = z.object({
  reason: text.optional(),
  idempotency: text.optional(),
  reinvoke: z.boolean().optional(),
});

const finishedPayload = z.object({
  state: text.optional(),
  attempts: count.optional(),
  errorKind: text.optional(),
  message: text.optional(),
  resultDigest: text.nullable().optional(),
  evidence: z.object({ system: text, reference: text }).optional(),
  late: z.boolean().optional(),
});

/** What one record says, by what it is. */
export type HistoryStep =
  | ({ step: "requested" } & z.infer<typeof requestedPayload>)
  | ({ step: "decision" } & z.infer<typeof decidedPayload>)
  | ({ step: "decision_ignored" } & z.infer<typeof ignoredPayload>)
  | ({ step: "decided" } & z.infer<typeof endingPayload>)
  | ({ step: "not_run" } & z.infer<typeof endingPayload>)
  | ({ step: "dispatch_refused" } & z.infer<typeof refusedPayload>)
  | ({ step: "conflict" } & z.infer<typeof conflictPayload>)
  | ({ step: "execution_started" } & z.infer<typeof startedPayload>)
  | ({ step: "execution_recovering" } & z.infer<typeof recoveringPayload>)
  | ({ step: "execution_finished" } & z.infer<typeof finishedPayload>)
  | { step: "other"; payload: JsonObject };

/** One record of the history: where it sits in the chain, when, who, and what it says. */
export type HistoryEvent = {
  seq: number;
  hash: string;
  /** RFC 3339 UTC with microseconds. */
  at: string;
  kind: string;
  actor: string;
  outcome?: AuditOutcome;
} & HistoryStep;

/** One Approval's history (one execution of it): the `--json` form. */
export interface ApprovalHistory {
  approval: { namespace: string; name: string };
  executionId: string;
  /** `namespace/name` of the AgentSession that proposed the call, when a record names it. */
  session?: string;
  sessionUid?: string;
  /** Phase the decision ended in (or dispatch left it in), from the last ending record. */
  phase?: string;
  /** State of the execution, from the last `execution.finished` record. */
  executionState?: string;
  events: HistoryEvent[];
  /** What is missing, and why (e.g. records written before decisions were audited). */
  notes: string[];
}

/** The note for a request written by a version that did not audit decisions. */
export const BEFORE_DECISIONS_NOTE = "(no decision records: written before decisions were audited)";

/** RFC 3339 UTC of `atMicros`, to the microsecond. */
export function rfc3339Micros(atMicros: number): string {
  const millis = Math.floor(atMicros / 1000);
  const micros = String(atMicros - millis * 1000).padStart(3, "0");
  return new Date(millis).toISOString().replace("Z", `${micros}Z`);
}

/**
 * What `record` says, by its kind: the payload fields the history names (others, such as the
 * `approval` every record repeats, are left out); `other` with the whole payload when the kind is
 * unknown or its payload is not the shape its kind has.
 */
export function stepOf(record: ChainedRecord): HistoryStep {
  const { kind, payload } = record;
  const as = <T extends z.ZodType>(schema: T, build: (parsed: z.infer<T>) => HistoryStep): HistoryStep => {
    const parsed = schema.safeParse(payload);
    return parsed.success ? build(parsed.data) : { step: "other", payload };
  };
  switch (kind) {
    case AuditKind.approvalRequested:
      return as(requestedPayload, (p) => ({ step: "requested", ...p }));
    case AuditKind.approvalDecided:
      return as(decidedPayload, (p) => ({ step: "decision", ...p }));
    case AuditKind.decisionIgnored:
      return as(ignoredPayload, (p) => ({ step: "decision_ignored", ...p }));
    case AuditKind.approvalRefused:
      return as(refusedPayload, (p) => ({ step: "dispatch_refused", ...p }));
    case AuditKind.approvalConflict:
      return as(conflictPayload, (p) => ({ step: "conflict", ...p }));
    case AuditKind.executionStarted:
      return as(startedPayload, (p) => ({ step: "execution_started", ...p }));
    case AuditKind.executionRecovering:
      return as(recoveringPayload, (p) => ({ step: "execution_recovering", ...p }));
    case AuditKind.executionFinished:
      return as(finishedPayload, (p) => ({ step: "execution_finished", ...p }));
    default:
      if (ENDING_KINDS.has(kind)) {
        return as(endingPayload, (p) => ({ step: p.atDispatch ? "not_run" : "decided", ...p }));
      }
      return { step: "other", payload };
  }
}

/**
 * The history of `found` (one execution's records for one Approval). `lifecycleMarkerSeq`: seq of
 * the `audit.lifecycle_marker` record, if the chain has one — requests before it predate audited
 * decisions.
 */
export function approvalHistoryOf(found: ApprovalRecords, lifecycleMarkerSeq?: number): ApprovalHistory {
  const events: HistoryEvent[] = found.records.map((record) => ({
    seq: record.seq,
    hash: record.hash,
    at: rfc3339Micros(record.atMicros),
    kind: record.kind,
    actor: record.actor,
    ...(record.outcome !== undefined ? { outcome: record.outcome } : {}),
    ...stepOf(record),
  }));
  const session = found.records.map((r) => r.payload.session).find((s): s is string => typeof s === "string");
  const sessionUid = found.records.find((r) => r.sessionUid !== undefined)?.sessionUid;
  const endings = events.filter((e) => e.step === "decided" || e.step === "not_run");
  const phase = endings.at(-1)?.phase;
  const finished = events.filter((e) => e.step === "execution_finished");
  const executionState = finished.at(-1)?.state;
  return {
    approval: { namespace: found.namespace, name: found.name },
    executionId: found.executionId,
    ...(session !== undefined ? { session } : {}),
    ...(sessionUid !== undefined ? { sessionUid } : {}),
    ...(phase !== undefined ? { phase } : {}),
    ...(executionState !== undefined ? { executionState } : {}),
    events,
    notes: notesOf(events, lifecycleMarkerSeq),
  };
}

/** The note for an Approval that ran with no request in its history. */
export const UNREQUESTED_NOTE =
  "(no approval.requested: no tool call asked for this Approval, yet its execution started)";

/** What the records do not say, and why. */
function notesOf(events: HistoryEvent[], lifecycleMarkerSeq: number | undefined): string[] {
  const requested = events.find((e) => e.step === "requested");
  if (!requested && events.some((e) => e.step === "execution_started")) return [UNREQUESTED_NOTE];
  if (!requested || events.some((e) => e.step === "decision")) return [];
  const ended = events.some((e) => e.step === "decided");
  if (lifecycleMarkerSeq !== undefined) {
    if (requested.seq < lifecycleMarkerSeq) return [BEFORE_DECISIONS_NOTE];
    return ended ? [] : ["(no decision recorded yet: the Approval was Pending at the last record)"];
  }
  // No marker: the chain began with this version (every request has its decisions), or it was never
  // migrated to it. Only a request with nothing after it leaves both possible.
  if (ended) return [];
  const anything = events.some((e) => e.seq > requested.seq);
  return [
    anything
      ? BEFORE_DECISIONS_NOTE
      : "(no decision records yet: still Pending, or written before decisions were audited)",
  ];
}

/** The text of a history: a heading naming the Approval, then one line per record with seq and time. */
export function approvalHistoryLines(history: ApprovalHistory): string[] {
  const { namespace, name } = history.approval;
  const session =
    history.session !== undefined
      ? `, session ${history.session}${history.sessionUid ? ` (uid ${history.sessionUid})` : ""}`
      : "";
  const started = history.events.some((e) => e.step === "execution_started");
  const outcome = [
    history.phase !== undefined ? `Approval ${history.phase}` : "no end of the decision recorded",
    history.executionState !== undefined
      ? `execution ${history.executionState}`
      : started
        ? "execution started, no finish recorded"
        : "not executed",
  ].join(", ");
  const width = String(history.events.at(-1)?.seq ?? 0).length;
  return [
    `Approval ${namespace}/${name} — execution ${history.executionId}${session}`,
    `  ${outcome}`,
    ...history.events.map((e) => `  seq ${String(e.seq).padStart(width)}  ${e.at}  ${describe(e)}`),
    ...history.notes.map((note) => `  ${note}`),
  ];
}

/** One line of what `event` says. */
function describe(event: HistoryEvent): string {
  switch (event.step) {
    case "requested": {
      const parts = [event.capability ?? event.tool ?? "a call"];
      if (event.argumentsDigest) parts.push(`arguments sha256 ${event.argumentsDigest}`);
      if (event.target) {
        const version = event.target.version !== undefined ? ` at version ${event.target.version}` : "";
        parts.push(`target ${event.target.kind} ${event.target.id}${version}`);
      }
      const approvers = [
        ...(event.approvers?.users?.length ? [`users ${event.approvers.users.join(", ")}`] : []),
        ...(event.approvers?.groups?.length ? [`groups ${event.approvers.groups.join(", ")}`] : []),
      ];
      if (approvers.length) parts.push(`approvers ${approvers.join("; ")}`);
      if (event.requiredApprovals !== undefined) {
        parts.push(`${event.requiredApprovals} approval${event.requiredApprovals === 1 ? "" : "s"} required`);
      }
      if (event.expiresAt) parts.push(`expires ${event.expiresAt}`);
      return `requested by ${event.actor}: ${parts.join(", ")}`;
    }
    case "decision": {
      const index = event.index !== undefined ? ` ${event.index}` : "";
      const reason = event.reason ? ` ${JSON.stringify(event.reason)}` : "";
      const counted =
        event.counted === undefined
          ? ""
          : event.counted
            ? " — counted"
            : ` — not counted: ${event.ignoredReason ?? "no reason recorded"}`;
      const rules = event.rulesEnforced === false ? " (decision rules were not enforced)" : "";
      return `decision${index} by ${event.approver ?? event.actor}: ${event.verdict ?? "?"}${reason}${counted}${rules}`;
    }
    case "decision_ignored": {
      const index = event.index !== undefined ? ` ${event.index}` : "";
      const when = event.phase ? ` appended when the Approval was already ${event.phase}` : "";
      return `decision${index} ignored: ${event.verdict ?? "?"} by ${event.approver ?? "?"}${when}`;
    }
    case "decided": {
      const by = [
        ...(event.approvedBy?.length ? [`approved by ${event.approvedBy.join(", ")}`] : []),
        ...(event.rejectedBy ? [`rejected by ${event.rejectedBy}`] : []),
      ];
      const backfilled = event.backfilled
        ? " (written at dispatch: decided by an earlier version of Gatehouse)"
        : "";
      // The message says who decided, for people; the lists say it when there is no message.
      const who = !event.message && by.length ? `: ${by.join("; ")}` : "";
      return `${verbOf(event.kind)}${because(event)}${who}${backfilled}`;
    }
    case "not_run":
      return `not run, ${verbOf(event.kind)} at dispatch${because(event)}${recordRef(event.approvalRecord)}`;
    case "dispatch_refused":
      return `dispatch refused${because(event)}`;
    case "conflict":
      return `conflict: the Approval already existed but was not created for this call; refused${event.message ? `: ${event.message}` : ""}`;
    case "execution_started": {
      const parts = [
        ...(event.capability ? [event.capability] : []),
        ...(event.provider ? [`provider ${event.provider}`] : []),
      ];
      return `execution started by ${event.actor}${parts.length ? `: ${parts.join(", ")}` : ""}${recordRef(event.approvalRecord)}`;
    }
    case "execution_recovering":
      return `execution recovering: ${event.reason ?? "no reason recorded"}${event.reinvoke === undefined ? "" : event.reinvoke ? " (the provider is called again)" : " (its status is asked, the call is not repeated)"}`;
    case "execution_finished": {
      const parts: string[] = [];
      if (event.attempts !== undefined)
        parts.push(`after ${event.attempts} attempt${event.attempts === 1 ? "" : "s"}`);
      if (event.errorKind) parts.push(`error ${event.errorKind}`);
      if (event.message) parts.push(JSON.stringify(event.message));
      if (event.evidence) parts.push(`evidence ${event.evidence.system} ${event.evidence.reference}`);
      if (event.resultDigest) parts.push(`result sha256 ${event.resultDigest}`);
      if (event.late) parts.push("appended late by the outbox");
      return `execution finished: ${event.state ?? "?"}${parts.length ? `, ${parts.join(", ")}` : ""}`;
    }
    case "other":
      return `${event.kind} by ${event.actor}${event.outcome ? ` (${event.outcome})` : ""}: ${JSON.stringify(event.payload)}`;
  }
}

/** `approval.approved` → `approved`. */
function verbOf(kind: string): string {
  return kind.slice(kind.indexOf(".") + 1);
}

/** ` (Phase, Reason): message` from whichever of them the record has. */
function because(event: {
  phase?: string | undefined;
  reason?: string | undefined;
  message?: string | undefined;
}): string {
  const labels = [event.phase, event.reason].filter((l, i, all): l is string => !!l && all.indexOf(l) === i);
  return `${labels.length ? ` (${labels.join(", ")})` : ""}${event.message ? `: ${event.message}` : ""}`;
}

/** ` — approved record seq N (hash …)`, naming the record the step relies on. */
function recordRef(ref: { seq: number; hash: string } | undefined): string {
  return ref ? ` — approved record seq ${ref.seq} (hash ${ref.hash.slice(0, 16)}…)` : "";
}
