/**
 * CEL validation rules of the CRDs (`x-kubernetes-validations`), all on the parent `spec` object so
 * that removing a field cannot dodge them (a rule on a field does not run when the field is absent).
 * Rules that mention `oldSelf` are transition rules: the API server
 * runs them on update only. Field lists are derived from the zod shapes, so a field added to a spec
 * is covered by its immutability rule without anyone remembering to list it.
 *
 * Source of the semantics: https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules
 */
import { CAPABILITY_ID_PATTERN } from "@gatehouse/provider-sdk";
import type { z } from "zod";
import { AgentSessionSpec } from "./agentsession.ts";
import { ApprovalSpec, CANONICAL_JSON_OBJECT } from "./approval.ts";

/** One `x-kubernetes-validations` entry (apiextensions.k8s.io/v1 ValidationRule). */
export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  /** Relative JSON path of the field the error is reported on, e.g. `.arguments`. */
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

type Shape = Record<string, z.ZodType>;

/** Whether a field may be absent on input (optional, or defaulted — zod's input view). */
function mayBeAbsent(field: z.ZodType): boolean {
  return field.safeParse(undefined).success;
}

/**
 * `self.<key>` equals `oldSelf.<key>`, including presence for fields that may be absent (CEL's
 * `self.f == oldSelf.f` errors on an absent field, and unset ↔ set must count as a change).
 */
export function unchanged(shape: Shape, key: string, self = "self", old = "oldSelf"): string {
  const field = shape[key];
  if (!field) throw new Error(`unchanged(): no field ${key} in the shape`);
  return mayBeAbsent(field)
    ? `(has(${self}.${key}) == has(${old}.${key})) && (!has(${self}.${key}) || ${self}.${key} == ${old}.${key})`
    : `${self}.${key} == ${old}.${key}`;
}

/** One immutability rule per field of `shape` except `except`, reported on that field. */
function immutableFields(shape: Shape, except: readonly string[]): CelRule[] {
  return Object.keys(shape)
    .filter((key) => !except.includes(key))
    .map((key) => ({
      rule: unchanged(shape, key),
      message: `spec.${key} is immutable`,
      fieldPath: `.${key}`,
      reason: "FieldValueForbidden" as const,
    }));
}

/** `self.<list>` keeps every entry of `oldSelf.<list>` at its index (append-only by index, not by value). */
function appendOnly(list: string, what: string): CelRule {
  return {
    rule: `size(self.${list}) >= size(oldSelf.${list}) && oldSelf.${list}.all(i, entry, self.${list}[i] == entry)`,
    message: `spec.${list} is append-only: existing ${what} may not be changed, removed or reordered; append new ones at the end`,
    fieldPath: `.${list}`,
    reason: "FieldValueForbidden",
  };
}

/** Rules on `Approval.spec`. */
export const APPROVAL_SPEC_RULES: CelRule[] = [
  ...immutableFields(ApprovalSpec.shape, ["decisions", "resolutions"]).map((rule) => ({
    ...rule,
    message: `${rule.message}: an Approval records the exact call the agent proposed; to change it, reject it with a reason and let the agent propose again`,
  })),
  appendOnly("decisions", "decisions"),
  appendOnly("resolutions", "resolutions"),
  {
    rule: `self.arguments.matches(r'${CANONICAL_JSON_OBJECT.source}')`,
    message:
      "spec.arguments must be the RFC 8785 canonical JSON text of an object, as the operator writes it",
    fieldPath: ".arguments",
    reason: "FieldValueInvalid",
  },
];

/** Rules on `AgentSession.spec`. */
export const AGENT_SESSION_SPEC_RULES: CelRule[] = [
  {
    rule: unchanged(AgentSessionSpec.shape, "subject"),
    message:
      "spec.subject is immutable: the session acts for the user who created it; to act for someone else, that person creates their own AgentSession",
    fieldPath: ".subject",
    reason: "FieldValueForbidden",
  },
  ...immutableFields(AgentSessionSpec.shape, ["subject", "messages", "cancel"]).map((rule) => ({
    ...rule,
    message: `${rule.message}: once a session runs, only messages are appended and cancel is set; create a new AgentSession to change it`,
  })),
  appendOnly("messages", "messages"),
  // On the spec, not on spec.agent: a rule on a field does not run when the field is absent.
  {
    rule: "!has(self.engine) || self.engine != 'external' || has(self.agent)",
    message:
      "spec.agent.image is required with spec.engine external: name one of the images the installation allows (chart value engines.externalImages), or choose another engine",
    fieldPath: ".agent",
    reason: "FieldValueRequired",
  },
  {
    rule: "!has(self.agent) || (has(self.engine) && self.engine == 'external')",
    message:
      "spec.agent is forbidden unless spec.engine is external: builtin, pi and codex run the Gatehouse agent image; remove spec.agent, or set spec.engine: external to run your own image",
    fieldPath: ".agent",
    reason: "FieldValueForbidden",
  },
  {
    rule: "!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",
    message: "spec.cancel cannot be undone: create a new AgentSession instead",
    fieldPath: ".cancel",
    reason: "FieldValueForbidden",
  },
];

/** Rules on `Capability.spec`. */
export const CAPABILITY_SPEC_RULES: CelRule[] = [
  {
    rule: `size(self.id) <= 64 && self.id.matches(r'${CAPABILITY_ID_PATTERN.source}')`,
    messageExpression:
      "'spec.id ' + self.id + ' is not a capability id: use at most 64 characters of dot-separated lowercase segments of letters, digits and single hyphens, e.g. aps.schedule.publish'",
    fieldPath: ".id",
    reason: "FieldValueInvalid",
  },
];
