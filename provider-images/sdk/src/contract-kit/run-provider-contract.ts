/**
 * Runs every contract check against a provider outside vitest's test registration and reports each
 * outcome — for tests of the kit itself (a deliberately broken provider must fail the checks it breaks)
 * and for tools that want the report as data. Starts the provider once and stops it at the end.
 */
import { type ContractCheck, ContractCheckSkipped, contractChecks } from "./contract-checks.ts";
import { openContractSession, type ProviderContractOptions } from "./contract-session.ts";

/** The outcome of one check: `message` says why it failed or was skipped. */
export interface ContractCheckResult {
  name: string;
  outcome: "passed" | "failed" | "skipped";
  message?: string;
}

/** Runs the checks in order, one at a time; a failing check does not stop the others. */
export async function runProviderContract(
  options: ProviderContractOptions,
  checks: ContractCheck[] = contractChecks(options),
): Promise<ContractCheckResult[]> {
  const session = await openContractSession(options);
  const results: ContractCheckResult[] = [];
  try {
    for (const check of checks) {
      try {
        await check.run(session);
        results.push({ name: check.name, outcome: "passed" });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const outcome = error instanceof ContractCheckSkipped ? "skipped" : "failed";
        results.push({ name: check.name, outcome, message });
      }
    }
  } finally {
    await session.close();
  }
  return results;
}
