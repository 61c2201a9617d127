/**
 * metav1.Condition bookkeeping (k8s.io/apimachinery/pkg/api/meta/conditions.go SetStatusCondition):
 * lastTransitionTime changes only when status changes.
 */
import type { Condition } from "../../api/common.ts";

/** The condition to set; lastTransitionTime is filled in. */
export type ConditionInput = Omit<Condition, "lastTransitionTime">;

/** `now` as a metav1.Time: RFC 3339 in whole seconds (`2026-12-01T16:00:00Z`). */
export function metaTimeOf(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, "Z");
}

/** Returns a new list with `input` set, keeping the old transition time when the status did not change. */
export function setCondition(
  conditions: Condition[] | undefined,
  input: ConditionInput,
  now: Date,
): Condition[] {
  const list = conditions ?? [];
  const existing = list.find((c) => c.type === input.type);
  const lastTransitionTime =
    existing && existing.status === input.status ? existing.lastTransitionTime : metaTimeOf(now);
  const next: Condition = { ...input, lastTransitionTime };
  return [...list.filter((c) => c.type !== input.type), next].sort((a, b) => a.type.localeCompare(b.type));
}

/** The condition of a type, if present. */
export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
