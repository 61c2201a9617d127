import { existsSync } from "node:fs";
import { join } from "node:path";
import { runCommand } from "./command.ts";
import { HarnessError } from "./errors.ts";
import { REPO_ROOT } from "./paths.ts";

/** The control-plane binaries the harness runs. */
export const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"];

/**
 * The folder holding the control-plane binaries: `explicit` if given, else `$GATEHOUSE_CLUSTER_BIN_DIR`,
 * else what `test/cluster/build.sh` prints (instant when its cache is complete; otherwise it builds,
 * which takes many minutes). Throws `not_found` if a binary is missing from the folder.
 */
export async function resolveBinDir(explicit?: string): Promise<string> {
  let dir = explicit ?? process.env.GATEHOUSE_CLUSTER_BIN_DIR;
  if (!dir) {
    const { stdout } = await runCommand(join(REPO_ROOT, "test/cluster/build.sh"), [], {
      timeoutMs: 3 * 60 * 60 * 1000,
    });
    dir = stdout.trim().split("\n").at(-1) ?? "";
  }
  const missing = BINARIES.filter((b) => !existsSync(join(dir, b)));
  if (missing.length > 0) {
    throw new HarnessError(
      "not_found",
      `control-plane binaries missing from ${dir}: ${missing.join(", ")}; run test/cluster/build.sh`,
    );
  }
  return dir;
}
