/**
 * Every source file does one job and reads in one sitting: none of the program code (what is not a
 * test, a test fixture under test/, or generated) is longer than 400 lines. A file that grows past
 * it is split by job, as operator/src/core/ports/ or controllers/approval/plan-*.ts were.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const MAX_LINES = 400;

/**
 * The working tree's TypeScript outside tests: not `*.test.ts`, nothing under test/ (the harness and
 * fakes). Untracked files count and deleted ones do not, so a file being moved or split is judged as it
 * will be committed.
 */
function programFiles(): string[] {
  const out = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.ts"],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  return [...new Set(out.split("\0"))].filter(
    (file) =>
      file !== "" && !file.endsWith(".test.ts") && !file.startsWith("test/") && existsSync(join(root, file)),
  );
}

describe("file size", () => {
  it(`keeps every program file at ${MAX_LINES} lines or fewer`, () => {
    const files = programFiles();
    expect(files.length).toBeGreaterThan(100);
    const over = files
      .map((file) => ({ file, lines: readFileSync(join(root, file), "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(over, "split these by job").toEqual([]);
  });
});
