/**
 * metav1.Condition bookkeeping (k8s.io/apimachinery/pkg/api/meta/conditions.go SetStatusCondition):
 * lastTransitionTime changes only when status changes.
 */
import type { Condition } from "../api/common.ts";

/** The condition to set; lastTransitionTime is filled in. */
export type ConditionInput = Omit<Condition, "lastTransitionTime">;

/** Returns a new list with `input` set, keeping the old transition time when the status did not change. */
export function setCondition(
  conditions: Condition[] | undefined,
  input: ConditionInput,
  now: Date,
): Condition[] {
  const list = conditions ?? [];
  const existing = list.find((c) => c.type === input.type);
  const lastTransitionTime =
    existing && existing.status === input.status
      ? existing.lastTransitionTime
      : now.toISOString().replace(/\.\d+Z$/, "Z");
  const next: Condition = { ...input, lastTransitionTime };
  return [...list.filter((c) => c.type !== input.type), next].sort((a, b) => a.type.localeCompare(b.type));
}

/** The condition of a type, if present. */
export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
