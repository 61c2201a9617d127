import { runCommand } from "./command.ts";
import { HarnessError } from "./errors.ts";

/**
 * The pod firewall of one harness instance: an nftables table `inet gatehouse_<bridge>` whose input hook
 * lets traffic arriving from the bridge reach the host only on the bridge address and only on the TCP
 * ports in its set `host_ports` (the API server's from the start; the gateway's and the fake business
 * systems' once their owners call {@link exposeHostPort}). Everything else a pod sends to the host —
 * another port, another host address, UDP, IPv6 — is refused (TCP reset, ICMP admin-prohibited), so a
 * client fails at once instead of hanging. Replies to connections the host opened (host → pod IP) pass
 * as established. Pod-to-pod traffic stays on the bridge and never reaches this hook. The host does not
 * forward (ip_forward is left as it is and no NAT is added), so nothing a pod sends leaves the machine.
 *
 * nftables syntax: https://wiki.nftables.org/wiki-nftables/index.php/Quick_reference-nftables_in_10_minutes
 */
export type PodFirewall = { table: string; bridgeName: string; bridgeIP: string };

/** The nftables table name of the instance whose bridge is `bridgeName`. */
export function firewallTable(bridgeName: string): string {
  return `gatehouse_${bridgeName}`;
}

/** The nft script that (re)creates the table of {@link PodFirewall} with `ports` open. */
export function firewallRuleset(bridgeName: string, bridgeIP: string, ports: readonly number[]): string {
  const table = firewallTable(bridgeName);
  const elements = ports.length > 0 ? ` elements = { ${ports.join(", ")} }` : "";
  return [
    `table inet ${table} {}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    `  set host_ports { type inet_service;${elements} }`,
    "  chain input {",
    "    type filter hook input priority filter - 1; policy accept;",
    `    iifname "${bridgeName}" ct state established,related accept`,
    `    iifname "${bridgeName}" ip daddr ${bridgeIP} tcp dport @host_ports accept`,
    `    iifname "${bridgeName}" meta l4proto tcp reject with tcp reset`,
    `    iifname "${bridgeName}" reject with icmpx admin-prohibited`,
    "  }",
    "}",
    "",
  ].join("\n");
}

/**
 * Installs (or replaces) the pod firewall for `bridgeName` with `ports` open on `bridgeIP`.
 * Throws an `unavailable` HarnessError when `nft` fails (not root, nftables missing).
 */
export async function installPodFirewall(
  bridgeName: string,
  bridgeIP: string,
  ports: readonly number[],
): Promise<PodFirewall> {
  await runCommand("nft", ["-f", "-"], { input: firewallRuleset(bridgeName, bridgeIP, ports) });
  return { table: firewallTable(bridgeName), bridgeName, bridgeIP };
}

/**
 * Lets pods of harness instance `instance` (bridge `ghbr<instance>`) connect to TCP `port` on the bridge
 * address, where a host service meant for pods listens (the gateway, a fake business system).
 * Idempotent. Throws `invalid_arguments` for a port outside 1…65535, `unavailable` when the instance's
 * firewall does not exist.
 */
export async function exposeHostPort(instance: number, port: number): Promise<void> {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new HarnessError("invalid_arguments", `port ${port} is outside 1…65535`);
  }
  const table = firewallTable(`ghbr${instance}`);
  await runCommand("nft", ["add", "element", "inet", table, "host_ports", `{ ${port} }`]);
}

/** Removes the pod firewall of `bridgeName`; a missing table is fine. */
export async function removePodFirewall(bridgeName: string): Promise<void> {
  await runCommand("nft", ["delete", "table", "inet", firewallTable(bridgeName)]).catch(() => undefined);
}
