/**
 * A {@link ProviderInstanceWriter} in memory, for table tests of the applier: it keeps every write in
 * order, answers an apply with the object as given plus a uid (as the API server fills it in), and
 * skips a status write that changes nothing, as the real one does.
 */
import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ProviderInstanceStatus } from "./plan.ts";
import type { ProviderInstanceWriter } from "./writer.ts";

/** One side effect, as the fake saw it. */
export type WriterCall =
  | { kind: "apply"; object: KubernetesObject }
  | { kind: "writeStatus"; status: ProviderInstanceStatus };

/** The fake and what it recorded. */
export interface InMemoryProviderInstanceWriter extends ProviderInstanceWriter {
  calls: WriterCall[];
  /** Only the kinds of the applied objects, in order. */
  applied(): string[];
  /** Only the status writes. */
  statusWrites(): ProviderInstanceStatus[];
}

/** Builds the fake. `uids` names the uid an applied object gets, by kind (default `<kind>-uid`). */
export function inMemoryProviderInstanceWriter(
  options: { uids?: Record<string, string> } = {},
): InMemoryProviderInstanceWriter {
  const calls: WriterCall[] = [];
  return {
    calls,
    applied: () => calls.flatMap((c) => (c.kind === "apply" ? [String(c.object.kind)] : [])),
    statusWrites: () => calls.flatMap((c) => (c.kind === "writeStatus" ? [c.status] : [])),
    async apply(object) {
      calls.push({ kind: "apply", object: structuredClone(object) });
      const uid = options.uids?.[String(object.kind)] ?? `${String(object.kind).toLowerCase()}-uid`;
      return { ...object, metadata: { ...object.metadata, uid } };
    },
    async writeStatus(provider, status) {
      if (isDeepStrictEqual(provider.status ?? {}, status)) return;
      calls.push({ kind: "writeStatus", status: structuredClone(status) });
    },
  };
}
