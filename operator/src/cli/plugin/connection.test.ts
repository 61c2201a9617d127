import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runPlugin } from "../kubectl-gatehouse.ts";
import type { Output } from "./output.ts";

/** Runs the plugin in-process, collecting what it writes. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const output: Output = { out: (t) => out.push(t), err: (t) => err.push(t) };
  const code = await runPlugin(argv, env, output);
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** A kubeconfig file with contexts `alice` (current) and `carol`; no server is contacted. */
function kubeconfigWithTwoContexts(): string {
  const file = join(mkdtempSync(join(tmpdir(), "plugin-connection-")), "kubeconfig");
  const cluster = { name: "local", cluster: { server: "https://127.0.0.1:1" } };
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [cluster],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: ["alice", "carol"].map((name) => ({ name, context: { cluster: "local", user: "u" } })),
      "current-context": "alice",
    }),
  );
  return file;
}

const savedKubeconfig = process.env.KUBECONFIG;
afterEach(() => {
  if (savedKubeconfig === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = savedKubeconfig;
});

describe("a kubeconfig the plugin cannot use", () => {
  it("names --kubeconfig when the file it names cannot be read, says what to do, and exits 2", async () => {
    const result = await run(["pending", "--kubeconfig", "/nonexistent"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "kubectl-gatehouse: kubeconfig /nonexistent (--kubeconfig) cannot be read: ENOENT: no such file or directory, open '/nonexistent'; pass an existing kubeconfig file, or leave --kubeconfig out to use $KUBECONFIG / ~/.kube/config",
    );
    expect(result.stdout).toBe("");
  });

  it("names $KUBECONFIG when the file it names cannot be read", async () => {
    process.env.KUBECONFIG = "/nonexistent-from-env";
    const result = await run(["pending"], { KUBECONFIG: "/nonexistent-from-env" });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^kubectl-gatehouse: kubeconfig \/nonexistent-from-env \(\$KUBECONFIG\) cannot be read: ENOENT: .*; point \$KUBECONFIG at existing kubeconfig files/,
    );
  });

  it("says a file that is not YAML is not a valid kubeconfig", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "plugin-connection-")), "kubeconfig");
    writeFileSync(file, "clusters: [unclosed");
    const result = await run(["pending", "--kubeconfig", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`kubeconfig ${file} (--kubeconfig) is not a valid kubeconfig: `);
  });

  it("lists the kubeconfig's contexts when --context names one it does not have, and exits 2", async () => {
    const file = kubeconfigWithTwoContexts();
    const result = await run(["approve", "a-1", "--kubeconfig", file, "--context", "bob"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'kubectl-gatehouse: context "bob" (--context) is not in the kubeconfig (--kubeconfig), whose contexts are: alice, carol; pass one of them, or leave --context out to use the current context',
    );
  });
});
