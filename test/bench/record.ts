/**
 * Records one measurement in test/bench/results/control-plane.json (merging with the keys already
 * there), with the time it was taken.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const CONTROL_PLANE_RESULTS = fileURLToPath(new URL("./results/control-plane.json", import.meta.url));

/** Sets `key` to `value` (and `<key>MeasuredAt`) in the results file. */
export function recordMeasurement(key: string, value: number, file = CONTROL_PLANE_RESULTS): void {
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    current = {};
  }
  current[key] = value;
  current[`${key}MeasuredAt`] = new Date().toISOString();
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(current, null, 2)}\n`);
}
