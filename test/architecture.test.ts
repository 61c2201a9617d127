/**
 * The dependency rules of DESIGN §3 (.dependency-cruiser.cjs) hold for the whole tree: core is plain
 * TypeScript, nothing imports controllers or the gateway, providers use only their SDK, examples
 * import nothing of the repo. And the
 * operator chooses every patch type explicitly and never uses strategic merge (client-node's default,
 * refused with 415 on custom resources): the API server's audit log does not record a
 * request's Content-Type, so this is checked on the operator's source, call by call.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
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
          "examples",
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
    // A child process that loads TypeScript and parses the whole tree (~210 modules): 1.5 s on an idle
    // machine, several times that while the other unit workers share its two cores — more than
    // vitest's 5 s default, which is for tests that do not start a program.
  }, 30_000);

  it("makes every operator PATCH name its patch type, and none of them strategic merge", () => {
    const files = readdirSync(join(root, "operator/src"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .map((f) => join(root, "operator/src", f));
    const calls: string[] = [];
    const problems: string[] = [];
    for (const file of files) {
      const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
          const method = node.expression.name.text;
          if (/^patch[A-Z]|^patch$/.test(method)) {
            const where = `${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
            const args = node.arguments.map((a) => a.getText(source)).join(" ");
            calls.push(where);
            if (/StrategicMergePatch/.test(args)) problems.push(`${where} patches with strategic merge`);
            else if (!/PatchStrategy\.(MergePatch|ServerSideApply|JsonPatch)/.test(args)) {
              problems.push(`${where} does not name its patch type (PatchStrategy.*)`);
            }
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(calls.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });
});
