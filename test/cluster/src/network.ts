import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { runCommand } from "./command.ts";
import { API_SERVER_PORT } from "./components.ts";
import { HarnessError } from "./errors.ts";
import { installPodFirewall, removePodFirewall } from "./firewall.ts";
import { addressAt, contains, intToIp, parseCidr } from "./ipv4.ts";
import { removeNetworkPolicyTable } from "./network-policy/enforcer.ts";

/**
 * Where instance locks live: one pid file `<index>.pid` per running harness, holding JSON
 * `{pid, startTime, processes}` (the holder and the processes it started).
 */
export const LOCK_DIR = "/run/gatehouse-cluster";

/** Instances 0…63 map onto 10.88.0.0/16 in /22 steps. */
export const MAX_INSTANCES = 64;

/**
 * The addresses of one harness instance: a bridge `ghbr<i>` holding 10.88.<4i>.1/22; pods take the other
 * addresses of that /22 (`podCIDR`). The API server listens on the bridge address, which pods reach
 * directly; the host's 127.0.0.1 stays private to the host because each pod has its own loopback.
 */
export type BridgeAddressing = {
  bridgeName: string;
  bridgeIP: string;
  prefixLength: number;
  podCIDR: string;
};

/** A process the instance owns, identified by pid and kernel start time (so a reused pid is not hit). */
type OwnedProcess = { pid: number; startTime: string };

/** The lock file's content: who holds the instance and which processes it started. */
type LockRecord = OwnedProcess & { processes: OwnedProcess[] };

/** An allocated instance: its addressing, its lock, and what to do to release it. */
export type ClusterNetwork = BridgeAddressing & {
  index: number;
  lockPath: string;
  /** Records a child process so a later harness can kill it if this one dies without cleaning up. */
  recordProcess(pid: number): void;
  /** Deletes every pod network namespace, the bridge, its firewall and the lock. Safe to call twice. */
  release(): Promise<void>;
};

/** Pod network namespace of a pod: its name, the host end of its veth pair and its address. */
export type PodNetwork = { netns: string; hostVeth: string; ip: string };

/** The addressing of instance `index` (0 ≤ index < {@link MAX_INSTANCES}). */
export function addressingFor(index: number): BridgeAddressing {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_INSTANCES) {
    throw new HarnessError("invalid_arguments", `instance index ${index} is outside 0…${MAX_INSTANCES - 1}`);
  }
  return {
    bridgeName: `ghbr${index}`,
    bridgeIP: `10.88.${4 * index}.1`,
    prefixLength: 22,
    podCIDR: `10.88.${4 * index}.0/22`,
  };
}

/**
 * Takes the first free instance: creates its lock file (`O_EXCL`), reclaiming locks whose holder is dead
 * (their processes, pod namespaces and bridge are removed first), skips ranges some other interface on the
 * host already uses, then creates and brings up the bridge and its pod firewall (firewall.ts: pods reach
 * the host only on the API server's port until more are exposed). Requires root, iproute2 and nftables.
 * Throws `unavailable` when all instances are taken.
 */
export async function allocateNetwork(): Promise<ClusterNetwork> {
  mkdirSync(LOCK_DIR, { recursive: true });
  const used = await addressesInUse();
  for (let index = 0; index < MAX_INSTANCES; index++) {
    const addressing = addressingFor(index);
    const lockPath = join(LOCK_DIR, `${index}.pid`);
    const network = parseCidr(addressing.podCIDR);
    if (used.some((u) => u.ifname !== addressing.bridgeName && contains(network, u.ip))) continue;
    if (!(await tryLock(lockPath, addressing))) continue;
    try {
      await deletePodNetworks(addressing.bridgeName);
      await deleteLink(addressing.bridgeName);
      await runCommand("ip", ["link", "add", addressing.bridgeName, "type", "bridge"]);
      await runCommand("ip", [
        "addr",
        "add",
        `${addressing.bridgeIP}/${addressing.prefixLength}`,
        "dev",
        addressing.bridgeName,
      ]);
      await runCommand("ip", ["link", "set", addressing.bridgeName, "up"]);
      await installPodFirewall(addressing.bridgeName, addressing.bridgeIP, [API_SERVER_PORT]);
    } catch (err) {
      await removePodFirewall(addressing.bridgeName);
      await deleteLink(addressing.bridgeName);
      unlinkQuietly(lockPath);
      throw err;
    }
    return {
      ...addressing,
      index,
      lockPath,
      recordProcess: (pid) => recordProcess(lockPath, pid),
      release: async () => {
        await deletePodNetworks(addressing.bridgeName);
        await deleteLink(addressing.bridgeName);
        await removePodFirewall(addressing.bridgeName);
        await removeNetworkPolicyTable(addressing.bridgeName);
        unlinkQuietly(lockPath);
      },
    };
  }
  throw new HarnessError(
    "unavailable",
    `all ${MAX_INSTANCES} local cluster instances are in use (locks in ${LOCK_DIR}); stop a harness first`,
  );
}

/**
 * Gives a pod its own network namespace `<bridge>-p<slot>` with `eth0` = `ip`/prefix, a veth pair whose
 * host end `<bridge>v<slot>` is a port of the bridge, and a default route via the bridge address.
 * Anything left over under the same names is removed first.
 */
export async function createPodNetwork(
  addressing: BridgeAddressing,
  slot: number,
  ip: string,
): Promise<PodNetwork> {
  const pod: PodNetwork = {
    netns: `${addressing.bridgeName}-p${slot}`,
    hostVeth: `${addressing.bridgeName}v${slot}`,
    ip,
  };
  await deletePodNetwork(pod);
  const steps: string[][] = [
    ["netns", "add", pod.netns],
    ["link", "add", pod.hostVeth, "type", "veth", "peer", "name", "eth0", "netns", pod.netns],
    ["link", "set", pod.hostVeth, "master", addressing.bridgeName],
    ["link", "set", pod.hostVeth, "up"],
    ["-n", pod.netns, "addr", "add", `${ip}/${addressing.prefixLength}`, "dev", "eth0"],
    ["-n", pod.netns, "link", "set", "lo", "up"],
    ["-n", pod.netns, "link", "set", "eth0", "up"],
    ["-n", pod.netns, "route", "add", "default", "via", addressing.bridgeIP],
  ];
  try {
    for (const step of steps) await runCommand("ip", step);
  } catch (err) {
    await deletePodNetwork(pod);
    throw err;
  }
  return pod;
}

/**
 * Removes a pod's network: SIGKILL to any process still inside its namespace (a container's leftover
 * children), then its veth pair and the namespace; missing pieces are ignored.
 */
export async function deletePodNetwork(pod: Pick<PodNetwork, "netns" | "hostVeth">): Promise<void> {
  const pids = await runCommand("ip", ["netns", "pids", pod.netns]).catch(() => ({ stdout: "" }));
  for (const pid of pids.stdout.split(/\s+/).filter(Boolean)) killQuietly(Number(pid));
  await deleteLink(pod.hostVeth);
  await runCommand("ip", ["netns", "delete", pod.netns]).catch(() => undefined);
}

/**
 * Kills every process still inside a pod namespace of `bridgeName` and deletes those namespaces (used on
 * release and when reclaiming a dead harness's instance).
 */
export async function deletePodNetworks(bridgeName: string): Promise<void> {
  const prefix = `${bridgeName}-p`;
  for (const netns of await listNetns()) {
    if (!netns.startsWith(prefix) || !/^\d+$/.test(netns.slice(prefix.length))) continue;
    await deletePodNetwork({ netns, hostVeth: `${bridgeName}v${netns.slice(prefix.length)}` });
  }
}

/**
 * Finds the bridge that holds `bridgeIP` and returns its addressing (the pod CIDR is the bridge's own
 * network). Throws `not_found` when no interface has that address.
 */
export async function findBridgeByAddress(bridgeIP: string): Promise<BridgeAddressing> {
  const match = (await addressesInUse()).find((a) => a.ip === bridgeIP);
  if (!match) throw new HarnessError("not_found", `no interface holds ${bridgeIP}; is the harness running?`);
  const network = parseCidr(`${bridgeIP}/${match.prefixLength}`);
  return {
    bridgeName: match.ifname,
    bridgeIP,
    prefixLength: match.prefixLength,
    podCIDR: `${intToIp(network.base)}/${match.prefixLength}`,
  };
}

/** The address of pod slot `slot` in `podCIDR` (slot n is the n-th address of the range). */
export function podAddress(podCIDR: string, slot: number): string {
  return addressAt(parseCidr(podCIDR), slot);
}

type InterfaceAddress = { ifname: string; ip: string; prefixLength: number };

async function addressesInUse(): Promise<InterfaceAddress[]> {
  const { stdout } = await runCommand("ip", ["-j", "-4", "addr", "show"]);
  const links = JSON.parse(stdout) as {
    ifname: string;
    addr_info?: { local?: string; prefixlen?: number }[];
  }[];
  return links.flatMap((link) =>
    (link.addr_info ?? []).flatMap((a) =>
      a.local ? [{ ifname: link.ifname, ip: a.local, prefixLength: a.prefixlen ?? 32 }] : [],
    ),
  );
}

async function listNetns(): Promise<string[]> {
  const { stdout } = await runCommand("ip", ["-j", "netns", "list"]).catch(() => ({ stdout: "" }));
  if (!stdout.trim()) return [];
  return (JSON.parse(stdout) as { name: string }[]).map((n) => n.name);
}

async function deleteLink(name: string): Promise<void> {
  await runCommand("ip", ["link", "delete", name]).catch(() => undefined);
}

/** Creates the lock; if one exists and its holder is dead, cleans up after it and takes over. */
async function tryLock(lockPath: string, addressing: BridgeAddressing): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, "wx");
      const record: LockRecord = { ...self(), processes: [] };
      writeSync(fd, JSON.stringify(record));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readLock(lockPath);
    if (holder ? isAlive(holder) : isRecent(lockPath)) return false;
    // Move the stale lock aside atomically, so two harnesses reclaiming at once cannot delete each
    // other's fresh lock; whoever moved it cleans up.
    const aside = `${lockPath}.${process.pid}.stale`;
    try {
      renameSync(lockPath, aside);
    } catch {
      continue;
    }
    const moved = readLock(aside);
    if (moved && isAlive(moved)) {
      renameSync(aside, lockPath);
      return false;
    }
    for (const child of moved?.processes ?? []) if (isAlive(child)) killQuietly(child.pid);
    await deletePodNetworks(addressing.bridgeName);
    await deleteLink(addressing.bridgeName);
    await removePodFirewall(addressing.bridgeName);
    await removeNetworkPolicyTable(addressing.bridgeName);
    unlinkQuietly(aside);
  }
  return false;
}

/** A lock without a readable record is being written right now if it is only seconds old. */
function isRecent(lockPath: string): boolean {
  try {
    return Date.now() - statSync(lockPath).mtimeMs < 10_000;
  } catch {
    return false;
  }
}

function recordProcess(lockPath: string, pid: number): void {
  const record = readLock(lockPath);
  const startTime = processStartTime(pid);
  if (!record || startTime === undefined) return;
  record.processes.push({ pid, startTime });
  writeFileSync(lockPath, JSON.stringify(record));
}

function readLock(lockPath: string): LockRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(lockPath, "utf8")) as Partial<LockRecord>;
    if (typeof parsed.pid !== "number" || typeof parsed.startTime !== "string") return undefined;
    return { pid: parsed.pid, startTime: parsed.startTime, processes: parsed.processes ?? [] };
  } catch {
    return undefined;
  }
}

function self(): OwnedProcess {
  return { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
}

function isAlive(owner: OwnedProcess): boolean {
  return processStartTime(owner.pid) === owner.startTime;
}

/** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot; undefined if no such process. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
