/**
 * The dependency rules of DESIGN §3 (.dependency-cruiser.cjs) hold for the whole tree: core is plain
 * TypeScript, nothing imports controllers or the gateway, providers use only their SDK.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

describe("architecture", () => {
  it("keeps the dependency rules of DESIGN §3", () => {
    const bin = join(root, "node_modules/.bin/depcruise");
    const run = () =>
      execFileSync(
        bin,
        [
          "operator/src",
          "agent-image/src",
          "provider-images",
          "--config",
          ".dependency-cruiser.cjs",
          "--output-type",
          "err",
        ],
        {
          cwd: root,
          encoding: "utf8",
        },
      );
    expect(run).not.toThrow();
  });
});
