import type { SerializedError } from "vitest";
import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints the plain summary line CI reads: `N passed, N failed[, N skipped]`, counted over test cases.
 * Skipped tests are ones that cannot run on this machine and printed their reason. So that a run that
 * broke before its tests never reads as green: in a test file that failed as a whole (an import
 * error, a failed beforeAll) every test that did not pass counts as failed (one failure when it has
 * no tests), and every unhandled error (a global setup that could not start the control plane) counts
 * as one failure.
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
      // A file that failed without a failing test failed as a whole (a failed beforeAll): its tests
      // that did not pass never ran, and count as failures.
      const tests = [...mod.children.allTests()];
      const moduleFailed = mod.state() === "failed" && !tests.some((t) => t.result().state === "failed");
      for (const test of tests) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed" || moduleFailed) failed++;
        else skipped++;
      }
      if (mod.state() === "failed" && tests.length === 0) failed++;
    }
    const line = `${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`;
    process.stdout.write(`\n${line}\n`);
  }
}
