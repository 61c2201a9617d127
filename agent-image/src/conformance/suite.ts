/**
 * The engine conformance suite, in-process level: engines of `engines.ts` against the scripted model
 * (real HTTP) and an in-memory executor that answers as Core does. The groups and case titles are the
 * rows of docs/engines.md's table (`make engines-table`). Two entry files run it: conformance.test.ts
 * for the in-process engines, conformance.subprocess.test.ts for those that run as a child process.
 */
import { describe } from "vitest";
import { approvalCases } from "./cases/approvals.ts";
import { conversationCases } from "./cases/conversation.ts";
import { failureCases } from "./cases/failures.ts";
import { opaqueCases } from "./cases/opaque.ts";
import { resumeCases } from "./cases/resume.ts";
import { toolCases } from "./cases/tools.ts";
import type { EngineEntry } from "./engines.ts";
import { harness } from "./harness.ts";

/** Case groups, in the table's order. */
const groups = {
  conversation: conversationCases,
  tools: toolCases,
  approvals: approvalCases,
  failures: failureCases,
  resume: resumeCases,
  "opaque fields": opaqueCases,
};

/** Every case group, for each of `engines`. */
export function describeConformance(engines: EngineEntry[]): void {
  describe.each(engines)("engine $name", (engine) => {
    const h = harness(engine);
    for (const [group, cases] of Object.entries(groups)) describe(group, () => cases(h));
  });
}
