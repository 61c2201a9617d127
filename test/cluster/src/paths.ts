import { fileURLToPath } from "node:url";

/** The repository root (this file is test/cluster/src/paths.ts). */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");

/** Per-instance state folder: `<repo>/.run/cluster-<index>` (git-ignored). */
export function runDirFor(index: number): string {
  return `${REPO_ROOT}/.run/cluster-${index}`;
}
