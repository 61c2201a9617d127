/**
 * What Postgres `jsonb` and `text` can hold. Both refuse U+0000 (`jsonb`: SQLSTATE 22P05, `text`:
 * 22021) and `jsonb` refuses a lone UTF-16 surrogate (22P02), so one such character would make the
 * whole row unstorable. Text that comes from outside (a model's raw call, a provider's result) and is
 * kept for reading rather than for re-execution is stored with U+FFFD in its place instead.
 */

/** `text` with each lone surrogate and each U+0000 replaced by U+FFFD. */
export function storableText(text: string): string {
  return text.toWellFormed().replaceAll("\u0000", "\uFFFD");
}

/** `value` with {@link storableText} applied to every string and every property name in it. */
export function storableJson(value: unknown): unknown {
  if (typeof value === "string") return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), storableJson(v)]));
  }
  return value;
}
