import { execFile } from "node:child_process";
import { join } from "node:path";
import { runCommand } from "./command.ts";
import { HarnessError } from "./errors.ts";
import { addressingFor } from "./network.ts";
import { REPO_ROOT } from "./paths.ts";

const TESTBOX = join(REPO_ROOT, "test/cluster/images/testbox.ts");

/**
 * The network namespace of harness instance `instance` whose `eth0` holds `podIP`: the pod's own
 * network, where a process has exactly the pod's identity on the network (its address, its policies).
 * Throws `not_found` when no pod namespace holds it.
 */
export async function podNetns(instance: number, podIP: string): Promise<string> {
  const prefix = `${addressingFor(instance).bridgeName}-p`;
  const { stdout } = await runCommand("ip", ["netns", "list"]);
  for (const netns of stdout.split("\n").map((line) => line.split(" ")[0] ?? "")) {
    if (!netns.startsWith(prefix)) continue;
    const addresses = await runCommand("ip", ["-n", netns, "-4", "-o", "addr", "show", "dev", "eth0"]).catch(
      () => ({ stdout: "" }),
    );
    if (addresses.stdout.includes(` ${podIP}/`)) return netns;
  }
  throw new HarnessError("not_found", `no pod network namespace of instance ${instance} holds ${podIP}`);
}

/**
 * One TCP connection attempt to `host:port` from inside the pod at `podIP` (testbox `connect`, 2 s):
 * `connected`, or `failed <error code>` (a NetworkPolicy's reject reads `failed ECONNREFUSED`).
 */
export async function connectFromPod(
  instance: number,
  podIP: string,
  host: string,
  port: number,
): Promise<string> {
  const netns = await podNetns(instance, podIP);
  return new Promise((resolve) => {
    execFile(
      "ip",
      ["netns", "exec", netns, process.execPath, TESTBOX, "connect", host, String(port)],
      { cwd: REPO_ROOT, timeout: 10_000 },
      (_err, stdout) => {
        const outcome = stdout.split("\n").find((line) => line === "connected" || line.startsWith("failed "));
        resolve(outcome ?? `failed no outcome: ${stdout.trim()}`);
      },
    );
  });
}
