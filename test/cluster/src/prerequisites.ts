import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { HarnessError } from "./errors.ts";

/** Host tools the harness shells out to. */
const REQUIRED_TOOLS = [
  { name: "ip", why: "iproute2 creates the bridge and per-pod network namespaces" },
  { name: "openssl", why: "issues the CA and the API server certificate" },
  { name: "setpriv", why: "util-linux; makes child processes die with the harness" },
  { name: "nft", why: "nftables keeps pods away from host services other than the API server and gateway" },
];

/**
 * Throws an `unavailable` HarnessError explaining what is missing unless the process runs as root and
 * `ip`, `openssl`, `setpriv` and `nft` are on PATH (network namespaces and bridges need root).
 * `scripts/host-deps.sh` (run by `make demo` and `make test`) installs the missing ones with apt-get.
 */
export function assertHostPrerequisites(): void {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) {
    problems.push("the local control plane must run as root (it creates a bridge and network namespaces)");
  }
  for (const tool of REQUIRED_TOOLS) {
    if (!onPath(tool.name)) problems.push(`\`${tool.name}\` is not on PATH (${tool.why})`);
  }
  if (problems.length > 0) {
    throw new HarnessError(
      "unavailable",
      `cannot start the local control plane: ${problems.join("; ")}; run scripts/host-deps.sh as root to install them`,
    );
  }
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
