/**
 * What the admission policies are written in (api/admission.ts): the shape of one policy, the users
 * its rules name, and the CEL fragments shared by the Approval and AgentSession policies.
 */
import type { StatusReason } from "./status/kubernetes.ts";
import { CONTROLLER_USERNAME, GARBAGE_COLLECTOR_USERNAME, GATEWAY_USERNAME } from "./well-known.ts";

export interface Validation {
  expression: string;
  messageExpression: string;
  reason: typeof StatusReason.Forbidden | typeof StatusReason.Invalid;
}

export interface PolicyDefinition {
  name: string;
  description: string;
  operations: Array<"CREATE" | "UPDATE">;
  resources: string[];
  /** Requests the policy applies to; all others pass untouched. */
  matchConditions?: Array<{ name: string; expression: string }>;
  variables?: Array<{ name: string; expression: string }>;
  validations: Validation[];
  /**
   * The policy's parameter: a ConfigMap of this name in the operator's namespace (the binding's
   * paramRef, `parameterNotFoundAction: Deny`), read by the rules as `params`.
   */
  params?: { configMap: string };
}

/**
 * The controller: the only writer of status, finalizers and the rest of the metadata the components
 * keep. The gateway is exempt from nothing but the Approval create rule: it records what agents
 * request, and changes nothing afterwards.
 */
export const CONTROLLER = `'${CONTROLLER_USERNAME}'`;
export const GATEWAY = `'${GATEWAY_USERNAME}'`;
export const GARBAGE_COLLECTOR = `'${GARBAGE_COLLECTOR_USERNAME}'`;
export const USER = "request.userInfo.username";
export const GROUPS = "(has(request.userInfo.groups) ? request.userInfo.groups : [])";

/** `metadata.<field>` is the same in the old and new object (absent counts as empty). */
export function sameMetadata(field: string, empty: string): string {
  const of = (o: string) => `(has(${o}.metadata.${field}) ? ${o}.metadata.${field} : ${empty})`;
  return `${of("object")} == ${of("oldObject")}`;
}
