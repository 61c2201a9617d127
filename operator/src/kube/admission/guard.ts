/**
 * Whether the API server enforces the decision rules of Approvals. A decision names only its author;
 * that the author is in an approver group is known to admission alone (`request.userInfo.groups`), so
 * the operator trusts decisions only while every ValidatingAdmissionPolicy that protects Approvals,
 * and its binding, is installed exactly as the chart renders it for this operator
 * (kube/admission/drift.ts). Otherwise it fails closed: no decision counts (one first observed then
 * never does) and no approved call is dispatched (core/approval-lifecycle.ts, core/execute-approved.ts).
 */
import type {
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { DecisionRulesVerdict } from "../../core/ports.ts";
import { describeApiError, type KubeClients } from "../runtime/client.ts";
import {
  admissionDrift,
  gatewayBeside,
  type InstalledAdmission,
  type RenderedAdmission,
  renderedApprovalAdmission,
} from "./drift.ts";

/** How often the guard re-reads the policies and bindings, in milliseconds. */
export const ADMISSION_RECHECK_MS = 30_000;

/**
 * How long after the rules are seen restored (not enforced → enforced) they still count as not
 * enforced: the API server's admission plugin learns of a recreated binding from its own informer, so
 * for a moment after we read it back a decision may still pass unchecked.
 */
export const ADMISSION_SETTLE_MS = 5_000;

/**
 * The controller's user name as the API server authenticates it (SelfSubjectReview). The policies
 * compare `request.userInfo.username` with the name they render, so the name that matters is the one
 * the API server sees — which a configured value can only restate, and get wrong (a Deployment's
 * serviceAccountName, a kubeconfig context). Asking the server also catches a policy that exempts
 * some other user as "the operator". Errors: client-node's; no user in the answer.
 */
export async function operatorUsername(clients: KubeClients): Promise<string> {
  const review = await clients.authentication.createSelfSubjectReview({
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  const username = review.status?.userInfo?.username;
  if (!username) throw new Error("the API server's SelfSubjectReview names no user");
  return username;
}

/**
 * The installed policies and bindings of the names `rendered` has: two lists, whose requests cost the
 * API server and this process less than a read of each object, and which are as fresh (a list without
 * a resourceVersion is a consistent read). Errors: any API error.
 */
export async function installedAdmission(
  clients: KubeClients,
  rendered: RenderedAdmission,
): Promise<InstalledAdmission> {
  const policyNames = new Set(rendered.policies.map(({ metadata }) => metadata?.name));
  const bindingNames = new Set(rendered.bindings.map(({ metadata }) => metadata?.name));
  const [policyList, bindingList] = await Promise.all([
    clients.admission.listValidatingAdmissionPolicy(),
    clients.admission.listValidatingAdmissionPolicyBinding(),
  ]);
  const policies = new Map<string, V1ValidatingAdmissionPolicy>();
  const bindings = new Map<string, V1ValidatingAdmissionPolicyBinding>();
  for (const policy of policyList.items) {
    const name = policy.metadata?.name;
    if (name && policyNames.has(name)) policies.set(name, policy);
  }
  for (const binding of bindingList.items) {
    const name = binding.metadata?.name;
    if (name && bindingNames.has(name)) bindings.set(name, binding);
  }
  return { policies, bindings };
}

/**
 * Reads every policy and binding that protects Approvals and compares them with what the chart renders
 * for the controller `operator` (default: asked of the API server, {@link operatorUsername}) and the
 * gateway `gateway` (default: its ServiceAccount beside the controller's). Enforced when all are
 * installed as rendered; otherwise the message names each one missing or different. Throws on any API
 * error.
 */
export async function decisionRulesEnforced(
  clients: KubeClients,
  operator?: string,
  gateway?: string,
): Promise<DecisionRulesVerdict> {
  const controller = operator ?? (await operatorUsername(clients));
  return verdictOf(clients, renderedApprovalAdmission(controller, gateway ?? gatewayBeside(controller)));
}

/** {@link decisionRulesEnforced} against `rendered`, rendered once by the caller. */
async function verdictOf(clients: KubeClients, rendered: RenderedAdmission): Promise<DecisionRulesVerdict> {
  const drift = admissionDrift(rendered, await installedAdmission(clients, rendered));
  return drift.length === 0 ? { enforced: true } : { enforced: false, message: drift.join("; ") };
}

/**
 * The verdict a check gives once the rules' history is taken into account: enforced rules seen less
 * than {@link ADMISSION_SETTLE_MS} after they were last seen not enforced still count as not enforced.
 * Pure. `restoredAtMs`: when a check first found them enforced after one that did not (undefined
 * when no check ever found them not enforced).
 */
export function settledVerdict(
  checked: DecisionRulesVerdict,
  restoredAtMs: number | undefined,
  nowMs: number,
): DecisionRulesVerdict {
  if (!checked.enforced || restoredAtMs === undefined || nowMs - restoredAtMs >= ADMISSION_SETTLE_MS) {
    return checked;
  }
  return {
    enforced: false,
    message: `the decision rules were restored ${Math.round((nowMs - restoredAtMs) / 100) / 10} s ago; decisions count again ${ADMISSION_SETTLE_MS / 1000} s after that, once the API server's admission has surely caught up`,
  };
}

/** A periodically refreshed answer of {@link decisionRulesEnforced}; not enforced until the first check succeeds. */
export interface AdmissionGuard {
  enforced(): boolean;
  /** The last check's verdict, with what is missing or different when not enforced. */
  verdict(): DecisionRulesVerdict;
  /**
   * The verdict of a check that started at or after `sinceMs` (epoch ms): what an Approval observed
   * before `sinceMs` may be judged by, so a binding deleted just before a decision was appended is
   * always seen. Concurrent callers share checks. Never rejects (a failed check is "not enforced").
   */
  checkedSince(sinceMs: number): Promise<DecisionRulesVerdict>;
  stop(): void;
}

/** What the guard compares against besides the controller's own name (asked of the API server). */
export interface AdmissionGuardOptions {
  /**
   * The gateway's user name, which the Approval create rule admits (config.gatewayUsername). A
   * configured value, not asked: the gateway is another process. Default: its ServiceAccount beside
   * the controller's.
   */
  gatewayUsername?: string;
}

/**
 * Resolves once the current verdict is of a check started at or after `sinceMs` (`startedAt()`),
 * waiting for the running check (`checkOnce()` joins it) and then starting one as needed: the last
 * finished check serves when it started late enough — at scale an Approval is dispatched long after
 * its decision was observed, and the periodic check has started since — else the running one if it
 * did, else the next. Never rejects while `checkOnce` does not.
 */
export async function checkStartedSince(
  sinceMs: number,
  startedAt: () => number,
  checkOnce: () => Promise<void>,
): Promise<void> {
  while (startedAt() < sinceMs) await checkOnce();
}

/** Checks now and every {@link ADMISSION_RECHECK_MS}; logs each change (an error while not enforced). */
export async function startAdmissionGuard(
  clients: KubeClients,
  log: Logger,
  options: AdmissionGuardOptions = {},
): Promise<AdmissionGuard> {
  let verdict: DecisionRulesVerdict = {
    enforced: false,
    message: "the Approval admission policies have not been read yet",
  };
  let operator: string | undefined;
  // What the chart renders depends only on the two user names: rendered once, not on every check.
  let rendered: RenderedAdmission | undefined;
  // When the check whose verdict is current started: what an Approval observed since may be judged by.
  let verdictStartedAt = Number.NEGATIVE_INFINITY;
  let everNotEnforced = false;
  let restoredAt: number | undefined;
  let running: Promise<void> | undefined;
  const check = async () => {
    const started = Date.now();
    let checked: DecisionRulesVerdict;
    try {
      operator ??= await operatorUsername(clients);
      rendered ??= renderedApprovalAdmission(operator, options.gatewayUsername ?? gatewayBeside(operator));
      checked = await verdictOf(clients, rendered);
    } catch (error) {
      checked = {
        enforced: false,
        message: `could not read the Approval admission policies: ${describeApiError(error)}`,
      };
    }
    if (!checked.enforced) {
      everNotEnforced = true;
      restoredAt = undefined;
    } else if (everNotEnforced && restoredAt === undefined) {
      restoredAt = started;
    }
    const next = settledVerdict(checked, restoredAt, Date.now());
    if (next.enforced && !verdict.enforced) {
      log.info({ operator }, "the API server enforces the Approval decision rules");
    } else if (!checked.enforced && (verdict.enforced || verdict.message !== checked.message)) {
      // Once per change: checks run on every Approval reconcile.
      log.error(
        { operator, drift: checked.message },
        "Approval admission policies are not installed as the chart renders them: no decision counts and nothing is dispatched",
      );
    }
    verdict = next;
    verdictStartedAt = started;
  };
  const checkOnce = () => {
    running ??= check().finally(() => {
      running = undefined;
    });
    return running;
  };
  await checkOnce();
  const timer = setInterval(() => void checkOnce(), ADMISSION_RECHECK_MS);
  timer.unref();
  return {
    enforced: () => verdict.enforced,
    verdict: () => verdict,
    async checkedSince(sinceMs) {
      await checkStartedSince(sinceMs, () => verdictStartedAt, checkOnce);
      return verdict;
    },
    stop: () => clearInterval(timer),
  };
}
