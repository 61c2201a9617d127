/**
 * Whether the API server enforces the decision rules of Approvals. A decision names only its author;
 * that the author is in an approver group is known to admission alone (`request.userInfo.groups`), so
 * the operator trusts decisions only while every ValidatingAdmissionPolicy that protects Approvals,
 * and its binding, is installed exactly as the chart renders it for this operator
 * (kube/admission-drift.ts). Otherwise it fails closed: no decision counts (one first observed then
 * never does) and no approved call is dispatched (core/approval-lifecycle.ts, core/execute-approved.ts).
 */
import type {
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { DecisionRulesVerdict } from "../core/ports.ts";
import {
  admissionDrift,
  type InstalledAdmission,
  type RenderedAdmission,
  renderedApprovalAdmission,
} from "./admission-drift.ts";
import { describeApiError, isNotFound, type KubeClients } from "./client.ts";

/** How often the guard re-reads the policies and bindings, in milliseconds. */
export const ADMISSION_RECHECK_MS = 30_000;

/**
 * How old a verdict {@link AdmissionGuard.current} may answer with. Approvals are decided by what it
 * says, so a binding deleted a moment ago must not count for the 30 s until the periodic check.
 */
export const ADMISSION_FRESH_MS = 2_000;

/**
 * The operator's user name as the API server authenticates it (SelfSubjectReview). The policies
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

/** `read()`, or undefined when the API server answers 404. */
async function unlessNotFound<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The installed policies and bindings of the names `rendered` has. Errors: any API error but 404. */
export async function installedAdmission(
  clients: KubeClients,
  rendered: RenderedAdmission,
): Promise<InstalledAdmission> {
  const policies = new Map<string, V1ValidatingAdmissionPolicy>();
  const bindings = new Map<string, V1ValidatingAdmissionPolicyBinding>();
  // One round trip's time for all of them: reconciles wait on a fresh verdict.
  await Promise.all([
    ...rendered.policies.map(async ({ metadata }) => {
      const name = metadata?.name ?? "";
      const found = await unlessNotFound(() => clients.admission.readValidatingAdmissionPolicy({ name }));
      if (found) policies.set(name, found);
    }),
    ...rendered.bindings.map(async ({ metadata }) => {
      const name = metadata?.name ?? "";
      const found = await unlessNotFound(() =>
        clients.admission.readValidatingAdmissionPolicyBinding({ name }),
      );
      if (found) bindings.set(name, found);
    }),
  ]);
  return { policies, bindings };
}

/**
 * Reads every policy and binding that protects Approvals and compares them with what the chart renders
 * for `operator` (default: asked of the API server, {@link operatorUsername}). Enforced when all are
 * installed as rendered; otherwise the message names each one missing or different. Throws on any API
 * error but 404.
 */
export async function decisionRulesEnforced(
  clients: KubeClients,
  operator?: string,
): Promise<DecisionRulesVerdict> {
  const rendered = renderedApprovalAdmission(operator ?? (await operatorUsername(clients)));
  const drift = admissionDrift(rendered, await installedAdmission(clients, rendered));
  return drift.length === 0 ? { enforced: true } : { enforced: false, message: drift.join("; ") };
}

/** A periodically refreshed answer of {@link decisionRulesEnforced}; not enforced until the first check succeeds. */
export interface AdmissionGuard {
  enforced(): boolean;
  /** The last check's verdict, with what is missing or different when not enforced. */
  verdict(): DecisionRulesVerdict;
  /** A verdict at most {@link ADMISSION_FRESH_MS} old: checks again when the last one is older (one check at a time). */
  current(): Promise<DecisionRulesVerdict>;
  stop(): void;
}

/** Checks now and every {@link ADMISSION_RECHECK_MS}; logs each change (an error while not enforced). */
export async function startAdmissionGuard(clients: KubeClients, log: Logger): Promise<AdmissionGuard> {
  let verdict: DecisionRulesVerdict = {
    enforced: false,
    message: "the Approval admission policies have not been read yet",
  };
  let operator: string | undefined;
  let checkedAt = 0;
  let running: Promise<void> | undefined;
  const check = async () => {
    const started = Date.now();
    try {
      operator ??= await operatorUsername(clients);
      const now = await decisionRulesEnforced(clients, operator);
      if (now.enforced && !verdict.enforced) {
        log.info({ operator }, "the API server enforces the Approval decision rules");
      } else if (!now.enforced && (verdict.enforced || verdict.message !== now.message)) {
        // Once per change: a fresh verdict is asked for on every reconcile.
        log.error(
          { operator, drift: now.message },
          "Approval admission policies are not installed as the chart renders them: no decision counts and nothing is dispatched",
        );
      }
      verdict = now;
      checkedAt = started;
    } catch (error) {
      const message = `could not read the Approval admission policies: ${describeApiError(error)}`;
      const changed = verdict.enforced || verdict.message !== message;
      verdict = { enforced: false, message };
      checkedAt = started;
      if (changed) log.error({ err: describeApiError(error) }, `${message}; failing closed`);
    }
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
    async current() {
      if (Date.now() - checkedAt > ADMISSION_FRESH_MS) await checkOnce();
      return verdict;
    },
    stop: () => clearInterval(timer),
  };
}
