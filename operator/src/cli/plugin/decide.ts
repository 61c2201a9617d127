/**
 * `approve NAME` and `reject NAME --reason`: append the caller's decision to an Approval as DESIGN §2
 * prescribes — a JSON patch `add /spec/decisions/-` — in the name the API server gives the caller
 * (SelfSubjectReview), never one from a flag; admission (gatehouse-approval-decide) checks it again.
 *
 * The patch first `test`s `/spec/decisions` against the list this command read (RFC 6902 §4.6), so
 * the decision is appended to exactly the state the approver was shown. When another approver
 * appended in between, the test fails (422) and the command reads again and retries; an `add` at
 * `-` never overwrites an entry either way. Then it waits (bounded) until the operator has settled
 * the Approval — a final phase, or still Pending after counting the decision — and prints the phase
 * with the reason and message of its Executed condition (else its Decided condition).
 *
 * A caller who has decided the Approval already sends nothing (each user decides once): the same
 * verdict again reports the recorded decision and how far the Approval got, and exits 0; the other
 * verdict says what is recorded and exits 1.
 */
import { ApiException, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { APPROVAL, type Approval, GROUP, VERSION } from "../../api/kinds.ts";
import { ApprovalCondition, ApprovalPhase, SETTLED_APPROVAL_PHASES } from "../../api/status/approval.ts";
import { type Connection, whoAmI } from "./connection.ts";
import type { Output } from "./output.ts";
import { oneLine } from "./terminal-text.ts";
import { EXIT } from "./usage.ts";

/** One decision entry (api/approval.ts Decision). */
export interface DecisionEntry {
  approver: string;
  verdict: "Approve" | "Reject";
  reason?: string;
}

/** A JSON patch operation (RFC 6902). */
export type PatchOperation =
  | { op: "test"; path: string; value: unknown }
  | { op: "add"; path: string; value: unknown };

/** How many times a decision is retried after another approver's append changed the decisions. */
const ATTEMPTS = 5;
const POLL_MS = 500;

/** The JSON patch appending `decision` after exactly `seen` (the decisions as read). */
export function decisionPatchOf(seen: readonly DecisionEntry[], decision: DecisionEntry): PatchOperation[] {
  return [
    { op: "test", path: "/spec/decisions", value: seen },
    { op: "add", path: "/spec/decisions/-", value: decision },
  ];
}

/** A metav1.Status as the API server sends it in an error body. */
interface ApiStatus {
  message?: string;
  details?: { causes?: Array<{ message?: string }> };
}

function statusOf(error: unknown): ApiStatus | undefined {
  if (!(error instanceof ApiException)) return undefined;
  try {
    return JSON.parse(String(error.body)) as ApiStatus;
  } catch {
    return undefined;
  }
}

/**
 * The API server's message in a client-node error (its body is a metav1.Status as a string), with the
 * causes' messages where they add to it (a failed JSON patch says why only in details.causes).
 */
export function apiMessageOf(error: unknown): string {
  const status = statusOf(error);
  if (status?.message) {
    const causes = (status.details?.causes ?? [])
      .map((c) => c.message ?? "")
      .filter((m) => m && !status.message?.includes(m));
    return causes.length > 0 ? `${status.message}: ${causes.join("; ")}` : status.message;
  }
  if (error instanceof ApiException) return `HTTP ${error.code}: ${String(error.body)}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * True when the API server could not apply a JSON patch to the object — for the decision patch, its
 * `test` of /spec/decisions failed (the `add` at `-` cannot fail on a list the CRD defaults to `[]`).
 * The API server answers 422 Invalid with only a generic message and no causes (k8s.io/apiserver
 * endpoints/handlers/patch.go, applyJSPatch → NewGenericServerResponse); a schema violation is a 422
 * too, but names the object and field.
 */
export function isUnappliedPatch(error: unknown): boolean {
  return (
    error instanceof ApiException &&
    error.code === 422 &&
    statusOf(error)?.message === "the server rejected our request due to an error in our request"
  );
}

async function getApproval(connection: Connection, name: string): Promise<Approval> {
  return (await connection.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: connection.namespace,
    plural: APPROVAL.plural,
    name,
  })) as Approval;
}

/** Options of {@link decide}. */
export interface DecideOptions {
  name: string;
  verdict: DecisionEntry["verdict"];
  reason?: string | undefined;
  /** Seconds to wait for the operator to settle the Approval; 0: do not wait. */
  waitSeconds: number;
}

/**
 * True when the operator has settled the Approval as far as decision `index` goes: a final phase, or
 * still Pending with the decision counted (status.observedDecisions > index), waiting for more votes.
 * Approved and Executing are on their way to a final phase.
 */
export function isSettled(approval: Approval, index: number): boolean {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  if (SETTLED_APPROVAL_PHASES.has(phase)) return true;
  return phase === ApprovalPhase.Pending && (approval.status?.observedDecisions ?? 0) > index;
}

/** The caller's decision already in `approval`'s spec.decisions, with its index; undefined if none. */
export function recordedDecisionOf(
  approval: Approval,
  username: string,
): { index: number; decision: DecisionEntry } | undefined {
  const index = approval.spec.decisions.findIndex((d) => d.approver === username);
  const decision = approval.spec.decisions[index];
  return decision ? { index, decision } : undefined;
}

/** What {@link decide} prints and returns instead of a second patch: lines for stdout and stderr, and the exit code. */
export interface RepeatReport {
  out: string[];
  err: string[];
  code: number;
}

/**
 * The report of `verdict` asked again by a caller whose decision `recorded` is already in `approval`:
 * the same verdict is done already (exit 0, the recorded decision, the phase and the execution's
 * state); the other verdict cannot replace it (exit 1, saying what is recorded); a recorded decision
 * the operator did not count is not done either (exit 1, saying why it did not count).
 */
export function repeatedDecisionReport(
  approval: Approval,
  recorded: { index: number; decision: DecisionEntry },
  verdict: DecisionEntry["verdict"],
): RepeatReport {
  const { index, decision } = recorded;
  const name = approval.metadata.name;
  const reason = decision.reason ? `, reason: ${decision.reason}` : "";
  const state = `${phaseSummary(approval)}; execution: ${approval.status?.execution?.state ?? "not started"}`;
  // A decision in the caller's name that the operator did not count (e.g. appended by someone else
  // while admission did not enforce the rules) is not the caller's decision done: say so, exit 1.
  const uncounted = approval.status?.ignoredDecisions?.find((i) => i.approver === decision.approver);
  if (uncounted) {
    return {
      out: [state],
      err: [
        `kubectl-gatehouse: ${verdict.toLowerCase()} ${name}: the decision recorded in your name (spec.decisions[${index}]: ${decision.verdict}) did not count: ${uncounted.reason}; each user decides once, so ask another approver`,
      ],
      code: EXIT.refused,
    };
  }
  if (decision.verdict === verdict) {
    return {
      out: [
        `approval.${GROUP}/${name}: ${decision.verdict} by ${decision.approver} is already recorded (spec.decisions[${index}]${reason}); nothing sent`,
        state,
      ],
      err: [],
      code: EXIT.ok,
    };
  }
  return {
    out: [state],
    err: [
      `kubectl-gatehouse: ${verdict.toLowerCase()} ${name} refused: ${decision.approver} has already decided Approval ${name}: ${decision.verdict} (spec.decisions[${index}]${reason}); each user decides once`,
    ],
    code: EXIT.refused,
  };
}

/**
 * The exit code of a decision appended to `approval` as it was last read: 1 when the call did not run
 * or did not succeed (Stale, Failed, Unknown, Expired, Cancelled; and Rejected after an Approve),
 * else 0 (Succeeded, Rejected after a Reject, Pending for more votes, or not settled yet).
 */
export function exitCodeOf(verdict: DecisionEntry["verdict"], approval: Approval): number {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  if (phase === ApprovalPhase.Rejected) return verdict === "Approve" ? EXIT.refused : EXIT.ok;
  return SETTLED_APPROVAL_PHASES.has(phase) && phase !== ApprovalPhase.Succeeded ? EXIT.refused : EXIT.ok;
}

/**
 * Appends the caller's decision, waits for the operator to settle the Approval (at most
 * `waitSeconds`), and reports the outcome on `output`. Returns the exit code: {@link exitCodeOf} the
 * Approval, or 1 when the API server refused the decision (its message is printed: admission names
 * the rule, RBAC the missing verb) or the Approval cannot be read. When the caller's decision is
 * already recorded, sends nothing and returns {@link repeatedDecisionReport}'s code.
 */
export async function decide(
  connection: Connection,
  options: DecideOptions,
  output: Output,
): Promise<number> {
  const where = `approval.${GROUP}/${options.name}`;
  try {
    const me = await whoAmI(connection);
    const decision: DecisionEntry = {
      approver: me.username,
      verdict: options.verdict,
      ...(options.reason ? { reason: options.reason } : {}),
    };
    let index = -1;
    let previous: string | undefined;
    for (let attempt = 1; index < 0; attempt++) {
      const approval = await getApproval(connection, options.name);
      const recorded = recordedDecisionOf(approval, me.username);
      if (recorded) {
        const report = repeatedDecisionReport(approval, recorded, options.verdict);
        for (const line of report.out) output.out(line);
        for (const line of report.err) output.err(line);
        return report.code;
      }
      const seen = approval.spec.decisions;
      try {
        await connection.custom.patchNamespacedCustomObject(
          {
            group: GROUP,
            version: VERSION,
            namespace: connection.namespace,
            plural: APPROVAL.plural,
            name: options.name,
            body: decisionPatchOf(seen, decision),
          },
          setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
        );
        index = seen.length;
      } catch (error) {
        // Someone appended between our read and our patch: read what they appended, then append after
        // it — unless nothing changed, when the patch failed for another reason.
        const current = JSON.stringify(seen);
        if (!isUnappliedPatch(error)) throw error;
        if (attempt >= ATTEMPTS || current === previous) {
          throw new Error(
            `the API server could not apply the decision's JSON patch (${apiMessageOf(error)}); spec.decisions is not what was read — see kubectl get approval ${options.name} -o yaml`,
          );
        }
        previous = current;
      }
    }
    output.out(
      `${where}: ${options.verdict} by ${me.username} appended as spec.decisions[${index}] in namespace ${connection.namespace}`,
    );
    const approval = await settledApproval(connection, options.name, index, options.waitSeconds);
    output.out(phaseLine(approval, index, options.waitSeconds));
    const code = exitCodeOf(options.verdict, approval);
    if (code !== EXIT.ok) {
      const call = options.verdict === "Approve" ? "the call you approved" : "the call";
      output.err(
        approval.status?.phase === ApprovalPhase.Unknown
          ? `kubectl-gatehouse: Approval ${options.name} is Unknown: ${call} may have run — nobody knows its outcome; check the business system, then kubectl gatehouse resolve ${options.name} -n ${connection.namespace} --succeeded|--failed --reason "…"`
          : `kubectl-gatehouse: Approval ${options.name} is ${approval.status?.phase}: ${call} did not run or did not succeed`,
      );
    }
    return code;
  } catch (error) {
    output.err(
      `kubectl-gatehouse: ${options.verdict.toLowerCase()} ${options.name} refused: ${apiMessageOf(error)}`,
    );
    return EXIT.refused;
  }
}

/** The Approval once {@link isSettled} for decision `index`, or as it is after `waitSeconds`. */
async function settledApproval(
  connection: Connection,
  name: string,
  index: number,
  waitSeconds: number,
): Promise<Approval> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    const approval = await getApproval(connection, name);
    if (isSettled(approval, index) || Date.now() >= deadline) return approval;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * `phase: Stale (1/1 approvals) — Executed Disabled: aps.schedule.publish or its provider is disabled`:
 * the phase, the votes, and the Executed condition (else the Decided one); when the Approval is not
 * settled yet, says so and how to follow it.
 */
export function phaseLine(approval: Approval, index: number, waitSeconds: number): string {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  let note = "";
  if (!isSettled(approval, index)) {
    const evaluated = phase !== ApprovalPhase.Pending || (approval.status?.observedDecisions ?? 0) > index;
    const state = evaluated ? "not settled" : "the operator has not evaluated the decision";
    note = ` (${state} after ${waitSeconds} s; follow it with kubectl get approval ${approval.metadata.name} -n ${approval.metadata.namespace} -w)`;
  }
  return `${phaseSummary(approval)}${note}`;
}

/** `phase: Stale (1/1 approvals) — Executed Disabled: …`: the phase, the votes, the Executed (else Decided) condition. */
function phaseSummary(approval: Approval): string {
  const phase = approval.status?.phase ?? ApprovalPhase.Pending;
  const votes = `${approval.status?.approvals ?? 0}/${approval.spec.requiredApprovals} approvals`;
  const conditions = approval.status?.conditions ?? [];
  const condition =
    conditions.find((c) => c.type === ApprovalCondition.Executed) ??
    conditions.find((c) => c.type === ApprovalCondition.Decided);
  // The message may quote a provider's answer: made harmless for the terminal, on one line.
  const message = oneLine(condition?.message ?? "");
  const why = condition ? ` — ${condition.type} ${condition.reason}: ${message}` : "";
  return `phase: ${phase} (${votes})${why}`;
}
