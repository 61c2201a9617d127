import type { SerializedError } from "vitest";
import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints the plain summary line CI reads: `N passed, N failed[, N skipped]`, counted over test cases.
 * Skipped tests are ones that cannot run on this machine and printed their reason. A test file that
 * failed without running any test (an import error, a failed beforeAll) and every unhandled error (a
 * global setup that could not start the control plane) count as one failure each, so a run that
 * broke before its tests never reads as green.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
      if (mod.state() === "failed" && [...mod.children.allTests()].length === 0) failed++;
    }
    const line = `${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`;
    process.stdout.write(`\n${line}\n`);
  }
}
