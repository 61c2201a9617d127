/**
 * Runs the kubectl built with the control plane against its kubeconfig, as one of its contexts
 * (admin, alice, bob, carol, …). Used by the demo (which prints each command and its output) and the
 * e2e tests.
 */
import { execFile } from "node:child_process";

/** Result of one kubectl run. */
export interface KubectlResult {
  command: string;
  code: number;
  stdout: string;
  stderr: string;
}

/** A kubectl bound to one kubeconfig. */
export interface Kubectl {
  /** Runs `kubectl --context <context> args…`, feeding `input` on stdin; never throws on a non-zero exit. */
  run(context: string, args: string[], input?: string): Promise<KubectlResult>;
  /** Like run, but throws an Error with stderr when kubectl fails. */
  ok(context: string, args: string[], input?: string): Promise<KubectlResult>;
  /** `kubectl get -o json`, parsed. */
  json<T = unknown>(context: string, args: string[]): Promise<T>;
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

/** Builds a Kubectl for `kubectlPath` and `kubeconfigPath`. */
export function kubectlFor(kubectlPath: string, kubeconfigPath: string): Kubectl {
  const run = (context: string, args: string[], input?: string) =>
    new Promise<KubectlResult>((resolve) => {
      const command = ["kubectl", "--context", context, ...args].map(quote).join(" ");
      const child = execFile(
        kubectlPath,
        ["--kubeconfig", kubeconfigPath, "--context", context, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          resolve({ command, code, stdout, stderr });
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  const ok = async (context: string, args: string[], input?: string) => {
    const result = await run(context, args, input);
    if (result.code !== 0)
      throw new Error(`${result.command} failed (${result.code}): ${result.stderr.trim()}`);
    return result;
  };
  return {
    run,
    ok,
    async json<T>(context: string, args: string[]) {
      return JSON.parse((await ok(context, [...args, "-o", "json"])).stdout) as T;
    },
  };
}
