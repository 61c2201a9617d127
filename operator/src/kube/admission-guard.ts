/**
 * Whether the API server enforces the decision rules of Approvals. A decision names only its author;
 * that the author is in an approver group is known to admission alone (`request.userInfo.groups`), so
 * the Approval reconciler trusts group membership only while the `gatehouse-approval-decide`
 * ValidatingAdmissionPolicy and a Deny binding of it exist. Without them it fails closed: only
 * approvers named in `spec.approvers.users` count.
 */
import type { Logger } from "pino";
import { DECISION_POLICY } from "../api/admission.ts";
import type { DecisionRulesVerdict } from "../core/ports.ts";
import { describeApiError, isNotFound, type KubeClients } from "./client.ts";

/** How often the guard re-reads the policy and binding, in milliseconds. */
export const ADMISSION_RECHECK_MS = 30_000;

/**
 * Reads the decision policy and its binding. Resolves true when both exist and the binding's
 * validationActions include Deny; false when either is missing. Throws on any other API error.
 */
export async function decisionRulesEnforced(clients: KubeClients): Promise<boolean> {
  try {
    await clients.admission.readValidatingAdmissionPolicy({ name: DECISION_POLICY });
    const binding = await clients.admission.readValidatingAdmissionPolicyBinding({ name: DECISION_POLICY });
    return (
      binding.spec?.policyName === DECISION_POLICY && (binding.spec.validationActions ?? []).includes("Deny")
    );
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** A periodically refreshed answer of {@link decisionRulesEnforced}; false until the first check succeeds. */
export interface AdmissionGuard {
  enforced(): boolean;
  /** The last check's verdict, with what is missing or different when not enforced. */
  verdict(): DecisionRulesVerdict;
  stop(): void;
}

/** Checks now and every {@link ADMISSION_RECHECK_MS}; logs each change (an error when not enforced). */
export async function startAdmissionGuard(clients: KubeClients, log: Logger): Promise<AdmissionGuard> {
  let enforced = false;
  const check = async () => {
    try {
      const now = await decisionRulesEnforced(clients);
      if (now !== enforced || !now) {
        const fields = { policy: DECISION_POLICY, enforced: now };
        if (now) log.info(fields, "the API server enforces the Approval decision rules");
        else
          log.error(
            fields,
            "admission policy or binding missing: counting only approvers named in spec.approvers.users",
          );
      }
      enforced = now;
    } catch (error) {
      enforced = false;
      log.error(
        { err: describeApiError(error) },
        "could not read the Approval admission policy; failing closed",
      );
    }
  };
  await check();
  const timer = setInterval(() => void check(), ADMISSION_RECHECK_MS);
  timer.unref();
  return {
    enforced: () => enforced,
    verdict: () =>
      enforced
        ? { enforced: true }
        : { enforced: false, message: `admission policy or binding ${DECISION_POLICY} is missing` },
    stop: () => clearInterval(timer),
  };
}
