/**
 * Capability id ↔ model-facing tool name (DESIGN §2): `.` becomes `_`. Ids contain no `_`, so this is
 * a bijection. OpenAI tool names allow `^[a-zA-Z0-9_-]{1,64}$`.
 */

/** `aps.schedule.publish` → `aps_schedule_publish`. */
export function toolNameOf(capabilityId: string): string {
  return capabilityId.replaceAll(".", "_");
}

/** `aps_schedule_publish` → `aps.schedule.publish`. */
export function capabilityIdOf(toolName: string): string {
  return toolName.replaceAll("_", ".");
}
