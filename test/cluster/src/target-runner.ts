/**
 * The vitest runner of the `cluster` project (vitest.config.ts `runner`): vitest's own TestRunner,
 * plus one step after collection — on a target other than `local`, each test file that does not run
 * there (target.ts `skipReasonFor`) has all its tests marked skipped before any hook runs, exactly as
 * `describe.skip` would, and the reason is printed once per file. A target that cannot be reached
 * (kind or k3s without a container engine) skips every file. On `local` nothing changes.
 *
 * vitest loads a custom runner by its default export, hence the one default export of this repo.
 */
import { relative } from "node:path";
import { type RunnerTask, type RunnerTestFile, TestRunner } from "vitest";
import type { TargetInfo } from "./global-setup.ts";
import { REPO_ROOT } from "./paths.ts";
import { skipReasonFor } from "./target.ts";

function markSkipped(task: RunnerTask): void {
  task.mode = "skip";
  if ("tasks" in task) for (const child of task.tasks) markSkipped(child);
}

export default class TargetRunner extends TestRunner {
  /** Marks the files the target cannot run as skipped (called by vitest after collecting them). */
  onCollected(files: RunnerTestFile[]): void {
    const target = this.injectValue("target") as TargetInfo | undefined;
    if (!target || target.name === "local") return;
    for (const file of files) {
      const reason = skipReasonFor(target.name, relative(REPO_ROOT, file.filepath), target.unavailable);
      if (!reason) continue;
      markSkipped(file);
      console.log(`${relative(REPO_ROOT, file.filepath)}: ${reason}`);
    }
  }
}
