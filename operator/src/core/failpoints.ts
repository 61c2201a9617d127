/**
 * Test-only failpoints (the idea and the name come from etcd's gofail): named points on the invoke path,
 * the execution path and the Approval lifecycle where a test can make the process die (`exit`, SIGKILL)
 * or freeze (`block`), so a crash lands exactly between two writes. This module is the one list of
 * points and their spec syntax; the trigger that acts lives in `../failpoints.ts`, and reaching a point
 * is `deps.failpoint?.(point)` (CoreDeps), absent — free — unless `GATEHOUSE_FAILPOINTS` arms some.
 */
import { GatehouseError } from "./errors.ts";

/** Every failpoint, with where it sits. The keys are the names `GATEHOUSE_FAILPOINTS` takes. */
export const FAILPOINTS = {
  "invoke.before-decision": "gateway: the call is resolved and validated; the policy is not decided yet",
  "invoke.after-decision": "gateway: policy decided and budget reserved; nothing created or executed yet",
  "invoke.before-approval-create": "gateway: a Required write is about to create its Approval",
  "invoke.after-approval-create": "gateway: the Approval exists; approval.requested is not audited yet",
  "dispatch.before-claim": "either: the execution row is not claimed yet",
  "dispatch.after-claim": "either: the execution row is claimed; execution.started is not audited yet",
  "dispatch.after-started": "either: execution.started is audited; the provider is not called yet",
  "dispatch.before-provider-call": "either: the lease is renewed; the provider call is about to leave",
  "dispatch.after-provider-call": "either: the provider answered; the receipt is not recorded yet",
  "dispatch.after-receipt": "either: the receipt is recorded; execution.finished is not audited yet",
  "dispatch.after-finished": "either: execution.finished is audited",
  "approval.before-audit": "controller: an Approval's lifecycle records are about to be appended",
  "approval.after-audit": "controller: an Approval's lifecycle records are appended",
  "approval.before-status-write": "controller: an Approval's status is about to be written",
  "approval.after-status-write": "controller: an Approval's status is written",
} as const;

/** A failpoint's name: a key of {@link FAILPOINTS}. */
export type Failpoint = keyof typeof FAILPOINTS;

/** `exit`: SIGKILL the process at the point. `block`: stop the whole process there, forever. */
export type FailpointAction = "exit" | "block";

const ACTIONS: readonly FailpointAction[] = ["exit", "block"];

const sites = new Set<Failpoint>();

/**
 * Declares, at module load, that the calling module reaches `point`; returns it for the call site.
 * The registry lets a unit test show every listed point has code that reaches it.
 */
export function failpointSite<P extends Failpoint>(point: P): P {
  sites.add(point);
  return point;
}

/** The points declared by the modules loaded so far. */
export function declaredFailpoints(): ReadonlySet<Failpoint> {
  return sites;
}

function isFailpoint(name: string): name is Failpoint {
  return Object.hasOwn(FAILPOINTS, name);
}

/**
 * Parses `point=action,...` (e.g. `dispatch.after-started=exit,approval.after-audit=block`); empty → no
 * points. Errors: `invalid_arguments` naming the bad entry and the known points or actions.
 */
export function parseFailpoints(spec: string): Map<Failpoint, FailpointAction> {
  const armed = new Map<Failpoint, FailpointAction>();
  for (const entry of spec.split(",").map((part) => part.trim())) {
    if (entry === "") continue;
    const [name = "", action = "", ...rest] = entry.split("=").map((part) => part.trim());
    if (!isFailpoint(name)) {
      throw new GatehouseError(
        "invalid_arguments",
        `unknown failpoint "${name}"; known points: ${Object.keys(FAILPOINTS).join(", ")}`,
      );
    }
    if (rest.length > 0 || !ACTIONS.includes(action as FailpointAction)) {
      throw new GatehouseError(
        "invalid_arguments",
        `failpoint "${entry}" needs one action, as ${name}=${ACTIONS.join("|")}`,
      );
    }
    if (armed.has(name)) throw new GatehouseError("invalid_arguments", `failpoint "${name}" is armed twice`);
    armed.set(name, action as FailpointAction);
  }
  return armed;
}
