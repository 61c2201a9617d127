/**
 * A {@link CapabilityWriter} in memory, for tests of the applier: it keeps every status write in
 * order, writes nothing when the status did not change (as writeStatusIfChanged), and bumps the
 * resourceVersion on each write as the API server does.
 */
import { isDeepStrictEqual } from "node:util";
import type { Capability } from "../../api/kinds.ts";
import type { CapabilityStatus } from "./plan.ts";
import type { CapabilityWriter } from "./writer.ts";

/** One side effect, as the fake saw it. */
export type WriterCall = { kind: "writeStatus"; status: CapabilityStatus; resourceVersion: string };

/** The fake and what it recorded. */
export interface InMemoryCapabilityWriter extends CapabilityWriter {
  calls: WriterCall[];
  /** Only the status writes (the writes to the API server that move the resourceVersion). */
  statusWrites(): CapabilityStatus[];
}

/** Builds the fake. */
export function inMemoryCapabilityWriter(): InMemoryCapabilityWriter {
  const calls: WriterCall[] = [];
  return {
    calls,
    statusWrites: () => calls.map((c) => c.status),
    async writeStatus(capability: Capability, status) {
      if (isDeepStrictEqual(capability.status ?? {}, status)) return capability;
      const resourceVersion = String(Number(capability.metadata.resourceVersion ?? "0") + 1);
      calls.push({ kind: "writeStatus", status: structuredClone(status), resourceVersion });
      return {
        ...capability,
        metadata: { ...capability.metadata, resourceVersion },
        status: structuredClone(status),
      };
    },
  };
}
