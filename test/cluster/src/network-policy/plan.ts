import type {
  V1LabelSelector,
  V1Namespace,
  V1NetworkPolicy,
  V1NetworkPolicyEgressRule,
  V1NetworkPolicyIngressRule,
  V1NetworkPolicyPeer,
  V1NetworkPolicyPort,
  V1Pod,
} from "@kubernetes/client-node";
import { intToIp, ipToInt, networkSize, parseCidr } from "../ipv4.ts";

/**
 * The NetworkPolicy planner of the local node: a pure translation of the node's pods, namespaces and
 * NetworkPolicies into (a) a {@link NetworkPolicyPlan} saying, per pod, whether it is isolated for
 * ingress and egress and which peers may reach it (or be reached by it) on which protocols and ports,
 * and (b) the nft script enforcing that plan ({@link networkPolicyRuleset}). {@link isAllowed} answers
 * "would this new connection pass?" from the plan alone; the script's set elements are written from
 * the same plan, so what the tests check is what the kernel gets.
 *
 * Semantics are the NetworkPolicy API's: a pod is isolated for a direction once any policy selecting it
 * lists that policy type (`policyTypes` defaulting to Ingress, plus Egress when `egress` has rules);
 * an isolated pod's connections pass if any rule of any such policy allows them; a connection between
 * two pods needs the source's egress and the destination's ingress. Choices the API leaves open:
 *
 * - `ipBlock` matches pod addresses too (as Calico does), so a block covering the pod CIDR admits pods.
 *   Named ports in a rule with an `ipBlock` resolve against each pod inside the block; other addresses
 *   (the host, anything off the node) have no named ports.
 * - The host (the bridge address) always reaches pods, as with Calico and Cilium: its connections leave
 *   through the output hook, which this table does not filter. What pods send to the host is governed
 *   by their egress rules (an `ipBlock` covering the bridge address, with ports).
 * - Denied connections are rejected (TCP reset, ICMP admin-prohibited) rather than dropped, as the pod
 *   firewall does, so a denied client fails at once instead of waiting for a timeout.
 * - Replies and related traffic of accepted connections pass (conntrack), including connections that
 *   were open before a policy change.
 * - Pods here are IPv4-only: IPv6 `ipBlock`s match nothing, and IPv6 forwarded from or to the bridge is
 *   rejected, because a pod's link-local address cannot be attributed to it.
 * - Pods without an address and pods that have finished (Succeeded, Failed) are left out: they send
 *   nothing and their address may already belong to another pod.
 *
 * Enforcement is one table `inet gatehouse_np_<bridge>`, not the bridge family: with bridge netfilter
 * (`net.bridge.bridge-nf-call-iptables=1`) traffic bridged between pods passes the inet forward hook,
 * where conntrack and reject are available on every kernel (the bridge family needs the optional
 * conntrack and reject modules of the bridge). Its chains:
 *
 * - `forward` (pod ↔ pod, and anything routed from or to the bridge): established/related accepted,
 *   then `egress` for traffic entering from the bridge and `ingress` for traffic leaving into it.
 * - `input` (pod → host): established/related accepted, then `egress`. It sits beside the pod
 *   firewall's own input chain (`inet gatehouse_<bridge>`, priority filter - 1) at priority filter:
 *   every base chain of a hook sees the packet and any of them may reject it, so a pod reaches a host
 *   port only when the pod firewall exposes it AND the pod's egress rules allow it.
 * - `egress` / `ingress`: return at once for pods not isolated in that direction (sets
 *   `<direction>_isolated`), return when the pair is in `<direction>_all` (pod . peer range: all
 *   traffic) or `<direction>_ports` (pod . peer range . protocol . port range), reject otherwise.
 *   Interval sets of concatenations must not overlap, so the plan keeps each pod's entries disjoint.
 *
 * The script deletes and recreates the table in one transaction, and its text depends only on the
 * inputs (everything is sorted), so an applier can skip a plan whose text did not change.
 */

/** The protocols a NetworkPolicy port names. */
export type Protocol = "TCP" | "UDP" | "SCTP";

/** A container port of a pod, the target of named ports. */
export type PlanContainerPort = { name?: string; port: number; protocol: Protocol };

/** A pod as the planner needs it. */
export type PlanPod = {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** Its IPv4 address; a pod without one is left out. */
  ip?: string;
  /** `status.phase`; Succeeded and Failed pods are left out. */
  phase?: string;
  ports: PlanContainerPort[];
};

/** A namespace as the planner needs it (namespace selectors match these labels). */
export type PlanNamespace = { name: string; labels: Record<string, string> };

/** Everything a plan depends on. */
export type PlanInput = {
  bridgeName: string;
  /** The host's addresses on the bridge (the bridge address); connections from them always pass. */
  hostIPs: string[];
  pods: PlanPod[];
  namespaces: PlanNamespace[];
  policies: V1NetworkPolicy[];
};

/** An inclusive range of IPv4 addresses. */
export type AddressRange = { first: string; last: string };

/** An inclusive range of ports. */
export type PortRange = { first: number; last: number };

/** Peers in `peers` may use `ports` of `protocol`. */
export type PortAllowance = { protocol: Protocol; peers: AddressRange; ports: PortRange[] };

/**
 * One direction of an isolated pod: the policies isolating it (`namespace/name`), the peer ranges
 * allowed all traffic, and the peer ranges allowed on ports. Per protocol, `ports` peer ranges are
 * disjoint and sorted; `allTraffic` ranges are disjoint and sorted.
 */
export type DirectionPlan = { policies: string[]; allTraffic: AddressRange[]; ports: PortAllowance[] };

/** One pod: `ingress`/`egress` are absent when no policy isolates it in that direction. */
export type PodPlan = {
  namespace: string;
  name: string;
  ip: string;
  ingress?: DirectionPlan;
  egress?: DirectionPlan;
};

/** A pod the plan leaves out, and why. */
export type IgnoredPod = { namespace: string; name: string; reason: string };

/** The plan of one node: its pods sorted by namespace and name. */
export type NetworkPolicyPlan = {
  bridgeName: string;
  hostIPs: string[];
  pods: PodPlan[];
  ignoredPods: IgnoredPod[];
};

/** A new connection (its first packet), as {@link isAllowed} judges it. */
export type Connection = { from: string; to: string; protocol: Protocol | "ICMP"; port?: number };

type Direction = "ingress" | "egress";

/** An inclusive range of unsigned integers (addresses or ports). */
type Interval = [number, number];

/** A peer range and a port range of one protocol, before they are made disjoint. */
type Box = { peers: Interval; ports: Interval };

const ALL_ADDRESSES: Interval = [0, 2 ** 32 - 1];
const ALL_PORTS: Interval = [0, 65_535];
const PROTOCOLS: readonly Protocol[] = ["TCP", "UDP", "SCTP"];

/** The nftables table name of the NetworkPolicy enforcement for `bridgeName`. */
export function networkPolicyTable(bridgeName: string): string {
  return `gatehouse_np_${bridgeName}`;
}

/** The planner's view of a pod: labels, `ip` (default `status.podIP`), phase and all container ports. */
export function planPodFromV1(pod: V1Pod, ip: string | undefined = pod.status?.podIP): PlanPod {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return {
    namespace: pod.metadata?.namespace ?? "default",
    name: pod.metadata?.name ?? "",
    labels: { ...(pod.metadata?.labels ?? {}) },
    ...(ip ? { ip } : {}),
    ...(pod.status?.phase ? { phase: pod.status.phase } : {}),
    ports: containers.flatMap((c) =>
      (c.ports ?? []).flatMap((p) => {
        const protocol = toProtocol(p.protocol);
        if (!protocol) return [];
        return [{ ...(p.name ? { name: p.name } : {}), port: p.containerPort, protocol }];
      }),
    ),
  };
}

/** Whether a pod in `phase` has finished (Succeeded, Failed): a plan leaves it out; no other phase matters. */
export function podFinished(phase: string | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

/** The planner's view of a namespace. */
export function planNamespaceFromV1(namespace: V1Namespace): PlanNamespace {
  return { name: namespace.metadata?.name ?? "", labels: { ...(namespace.metadata?.labels ?? {}) } };
}

/** Plans the enforcement of `input.policies` for `input.pods`. Pure; the same input gives an equal plan. */
export function planNetworkPolicies(input: PlanInput): NetworkPolicyPlan {
  const { pods, ignoredPods } = eligiblePods(input.pods);
  const namespaceLabels = new Map(input.namespaces.map((n) => [n.name, n.labels]));
  const policies = [...input.policies].sort((a, b) => compareText(policyName(a), policyName(b)));
  const context: Context = { pods, namespaceLabels, ruleAddresses: new Map() };
  return {
    bridgeName: input.bridgeName,
    hostIPs: [...input.hostIPs].sort((a, b) => ipToInt(a) - ipToInt(b)),
    pods: pods.map((pod) => {
      const plan: PodPlan = { namespace: pod.namespace, name: pod.name, ip: pod.ip };
      for (const direction of ["ingress", "egress"] as const) {
        const selecting = policies.filter((p) => selects(p, pod, direction));
        if (selecting.length > 0) plan[direction] = planDirection(selecting, pod, direction, context);
      }
      return plan;
    }),
    ignoredPods,
  };
}

/**
 * Whether `plan` lets the new connection `c` pass: always from a host address and to oneself, else
 * when the source pod (if isolated for egress) and the destination pod (if isolated for ingress) both
 * allow it. Addresses that are no pod of the plan are not isolated. The pod firewall's own limits on
 * what reaches the host are not modelled.
 */
export function isAllowed(plan: NetworkPolicyPlan, c: Connection): boolean {
  if (plan.hostIPs.includes(c.from) || c.from === c.to) return true;
  const source = plan.pods.find((p) => p.ip === c.from);
  if (source?.egress && !directionAllows(source.egress, c.to, c)) return false;
  const destination = plan.pods.find((p) => p.ip === c.to);
  if (destination?.ingress && !directionAllows(destination.ingress, c.from, c)) return false;
  return true;
}

/**
 * One line per isolated pod and direction, for the node's log: `ns/name ip ingress by ns/policy,…:
 * all from <ranges>; tcp 8080-8081 from <range>` (`nothing` when the policies allow no peer).
 */
export function planSummary(plan: NetworkPolicyPlan): string[] {
  return plan.pods.flatMap((pod) =>
    (["ingress", "egress"] as const).flatMap((direction) => {
      const d = pod[direction];
      if (!d) return [];
      const peer = direction === "ingress" ? "from" : "to";
      const allowed = [
        ...(d.allTraffic.length > 0 ? [`all ${peer} ${d.allTraffic.map(addressText).join(",")}`] : []),
        ...d.ports.map(
          (a) =>
            `${a.protocol.toLowerCase()} ${a.ports.map(portText).join(",")} ${peer} ${addressText(a.peers)}`,
        ),
      ];
      return [
        `${pod.namespace}/${pod.name} ${pod.ip} ${direction} by ${d.policies.join(",")}: ${allowed.join("; ") || "nothing"}`,
      ];
    }),
  );
}

/** One set of the table: its name, nft type, whether it holds intervals, and its elements in order. */
type PlanSet = { name: string; type: string; interval: boolean; elements: string[] };

/** The table's sets, which are all a plan changes: the chains depend on the bridge alone. */
function planSets(plan: NetworkPolicyPlan): PlanSet[] {
  const byAddress = [...plan.pods].sort((a, b) => ipToInt(a.ip) - ipToInt(b.ip));
  return (["ingress", "egress"] as const).flatMap((direction) => {
    const isolated = byAddress.filter((p) => p[direction]);
    const all = isolated.flatMap((p) => p[direction]!.allTraffic.map((r) => `${p.ip} . ${addressText(r)}`));
    const ports = isolated.flatMap((p) =>
      p[direction]!.ports.flatMap((a) =>
        a.ports.map(
          (r) => `${p.ip} . ${addressText(a.peers)} . ${a.protocol.toLowerCase()} . ${portText(r)}`,
        ),
      ),
    );
    return [
      {
        name: `${direction}_isolated`,
        type: "ipv4_addr",
        interval: false,
        elements: isolated.map((p) => p.ip),
      },
      { name: `${direction}_all`, type: "ipv4_addr . ipv4_addr", interval: true, elements: all },
      {
        name: `${direction}_ports`,
        type: "ipv4_addr . ipv4_addr . inet_proto . inet_service",
        interval: true,
        elements: ports,
      },
    ];
  });
}

/** The nft script that (re)creates table `inet gatehouse_np_<bridge>` enforcing `plan`. */
export function networkPolicyRuleset(plan: NetworkPolicyPlan): string {
  const table = networkPolicyTable(plan.bridgeName);
  const bridge = JSON.stringify(plan.bridgeName);
  const sets = planSets(plan).map((set) => setText(set.name, set.type, set.interval, set.elements));
  const reject = ["    meta l4proto tcp reject with tcp reset", "    reject with icmpx admin-prohibited"];
  return [
    `table inet ${table} {}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    ...sets.flat(),
    "  chain forward {",
    "    type filter hook forward priority filter; policy accept;",
    "    ct state established,related accept",
    `    iifname ${bridge} meta nfproto ipv6 reject with icmpx admin-prohibited`,
    `    oifname ${bridge} meta nfproto ipv6 reject with icmpx admin-prohibited`,
    `    iifname ${bridge} jump egress`,
    `    oifname ${bridge} jump ingress`,
    "  }",
    "  chain input {",
    "    type filter hook input priority filter; policy accept;",
    "    ct state established,related accept",
    `    iifname ${bridge} meta nfproto ipv4 jump egress`,
    "  }",
    "  chain egress {",
    "    ip saddr != @egress_isolated return",
    "    ip saddr . ip daddr @egress_all return",
    "    ip saddr . ip daddr . meta l4proto . th dport @egress_ports return",
    ...reject,
    "  }",
    "  chain ingress {",
    "    ip daddr != @ingress_isolated return",
    "    ip daddr . ip saddr @ingress_all return",
    "    ip daddr . ip saddr . meta l4proto . th dport @ingress_ports return",
    ...reject,
    "  }",
    "}",
    "",
  ].join("\n");
}

type EligiblePod = PlanPod & { ip: string };
type Context = {
  pods: EligiblePod[];
  namespaceLabels: Map<string, Record<string, string>>;
  /**
   * The peer addresses of each rule, computed once per plan: they do not depend on the selected pod,
   * and every pod a policy selects would otherwise match its peers against all pods again (n² per plan).
   */
  ruleAddresses: Map<V1NetworkPolicyIngressRule | V1NetworkPolicyEgressRule, Interval[]>;
};

/** Pods with an address that have not finished, sorted; a second pod on a taken address is left out. */
function eligiblePods(all: readonly PlanPod[]): { pods: EligiblePod[]; ignoredPods: IgnoredPod[] } {
  const sorted = [...all].sort(
    (a, b) => compareText(a.namespace, b.namespace) || compareText(a.name, b.name),
  );
  const pods: EligiblePod[] = [];
  const ignoredPods: IgnoredPod[] = [];
  const owners = new Map<number, EligiblePod>();
  for (const pod of sorted) {
    const ignore = (reason: string) => ignoredPods.push({ namespace: pod.namespace, name: pod.name, reason });
    if (podFinished(pod.phase)) {
      ignore(`phase ${pod.phase}`);
      continue;
    }
    const address = pod.ip === undefined ? undefined : ipv4Value(pod.ip);
    if (pod.ip === undefined || address === undefined) {
      ignore(pod.ip === undefined ? "no address yet" : `address ${pod.ip} is not IPv4`);
      continue;
    }
    const owner = owners.get(address);
    if (owner) {
      ignore(`address ${pod.ip} already belongs to ${owner.namespace}/${owner.name}`);
      continue;
    }
    const eligible = { ...pod, ip: pod.ip };
    owners.set(address, eligible);
    pods.push(eligible);
  }
  return { pods, ignoredPods };
}

/** Whether `policy` isolates `pod` in `direction` (it selects the pod and lists that policy type). */
function selects(policy: V1NetworkPolicy, pod: EligiblePod, direction: Direction): boolean {
  const spec = policy.spec;
  if (!spec || policy.metadata?.namespace !== pod.namespace) return false;
  if (!matchesSelector(spec.podSelector ?? {}, pod.labels)) return false;
  const types =
    spec.policyTypes && spec.policyTypes.length > 0
      ? spec.policyTypes
      : ["Ingress", ...((spec.egress ?? []).length > 0 ? ["Egress"] : [])];
  return types.includes(direction === "ingress" ? "Ingress" : "Egress");
}

/** The union of what the rules of `policies` in `direction` allow for `pod`, made disjoint. */
function planDirection(
  policies: readonly V1NetworkPolicy[],
  pod: EligiblePod,
  direction: Direction,
  context: Context,
): DirectionPlan {
  const allTraffic: Interval[] = [];
  const boxes = new Map<Protocol, Box[]>(PROTOCOLS.map((p) => [p, []]));
  for (const policy of policies) {
    const namespace = policy.metadata?.namespace ?? "";
    const rules = (direction === "ingress" ? policy.spec?.ingress : policy.spec?.egress) ?? [];
    for (const rule of rules) {
      const addresses = ruleAddresses(rule, direction, namespace, context);
      if (addresses.length === 0) continue;
      if (!rule.ports || rule.ports.length === 0) {
        allTraffic.push(...addresses);
        continue;
      }
      for (const port of rule.ports) {
        const protocol = toProtocol(port.protocol);
        if (!protocol) continue;
        const target = boxes.get(protocol)!;
        if (typeof port.port === "string") {
          // A named port is a port of the destination: the selected pod for ingress, each peer pod for
          // egress.
          const name = port.port;
          const owners =
            direction === "ingress"
              ? [pod]
              : context.pods.filter((p) => inIntervals(addresses, ipToInt(p.ip)));
          for (const owner of owners) {
            const peerRanges = direction === "ingress" ? addresses : [single(ipToInt(owner.ip))];
            for (const cp of owner.ports) {
              if (cp.name !== name || cp.protocol !== protocol) continue;
              for (const peers of peerRanges) target.push({ peers, ports: single(cp.port) });
            }
          }
          continue;
        }
        const ports = numericPorts(port);
        if (!ports) continue;
        for (const peers of addresses) target.push({ peers, ports });
      }
    }
  }
  return {
    policies: policies.map(policyName),
    allTraffic: mergeIntervals(allTraffic).map(addressRange),
    ports: PROTOCOLS.flatMap((protocol) =>
      disjoint(boxes.get(protocol)!).map(({ peers, ports }) => ({
        protocol,
        peers: addressRange(peers),
        ports: ports.map(([first, last]) => ({ first, last })),
      })),
    ),
  };
}

/** The addresses rule `rule` of a policy in `namespace` allows (all when it names no peer). */
function ruleAddresses(
  rule: V1NetworkPolicyIngressRule | V1NetworkPolicyEgressRule,
  direction: Direction,
  namespace: string,
  context: Context,
): Interval[] {
  const known = context.ruleAddresses.get(rule);
  if (known) return known;
  const peers =
    direction === "ingress"
      ? ingressPeers(rule as V1NetworkPolicyIngressRule)
      : (rule as V1NetworkPolicyEgressRule).to;
  const addresses =
    peers && peers.length > 0
      ? mergeIntervals(peers.flatMap((peer) => peerAddresses(peer, namespace, context)))
      : [ALL_ADDRESSES];
  context.ruleAddresses.set(rule, addresses);
  return addresses;
}

/**
 * An ingress rule's `from`: the client's deserializer names it `_from`, while objects straight from a
 * watch (raw JSON) keep `from`.
 */
function ingressPeers(rule: V1NetworkPolicyIngressRule): V1NetworkPolicyPeer[] | undefined {
  return rule._from ?? (rule as { from?: V1NetworkPolicyPeer[] }).from;
}

/**
 * The addresses a peer stands for: an `ipBlock`'s CIDR minus its exceptions (IPv6 matches nothing), or
 * the pods the selectors pick — `podSelector` alone in the policy's namespace, `namespaceSelector` alone
 * every pod of the matching namespaces, both together the matching pods of the matching namespaces.
 */
function peerAddresses(peer: V1NetworkPolicyPeer, namespace: string, context: Context): Interval[] {
  if (peer.ipBlock) {
    const block = cidrInterval(peer.ipBlock.cidr);
    if (!block) return [];
    const except = (peer.ipBlock.except ?? []).flatMap((c) => {
      const interval = cidrInterval(c);
      return interval ? [interval] : [];
    });
    return subtractIntervals([block], except);
  }
  if (!peer.podSelector && !peer.namespaceSelector) return [];
  return context.pods
    .filter((p) =>
      peer.namespaceSelector
        ? matchesSelector(peer.namespaceSelector, context.namespaceLabels.get(p.namespace) ?? {})
        : p.namespace === namespace,
    )
    .filter((p) => !peer.podSelector || matchesSelector(peer.podSelector, p.labels))
    .map((p) => single(ipToInt(p.ip)));
}

/**
 * Label selector semantics: every `matchLabels` pair and every expression must hold; NotIn and
 * DoesNotExist hold for a missing key; an unknown operator (the API server rejects those) never holds.
 */
function matchesSelector(selector: V1LabelSelector, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    const holds =
      operator === "In"
        ? has && values.includes(value!)
        : operator === "NotIn"
          ? !has || !values.includes(value!)
          : operator === "Exists"
            ? has
            : operator === "DoesNotExist"
              ? !has
              : false;
    if (!holds) return false;
  }
  return true;
}

/** A numeric port (with `endPort`, a range) or, without `port`, every port of the protocol. */
function numericPorts(port: V1NetworkPolicyPort): Interval | undefined {
  if (port.port === undefined) return ALL_PORTS;
  const first = Number(port.port);
  const last = port.endPort ?? first;
  if (!Number.isInteger(first) || !Number.isInteger(last) || first < 0 || last < first || last > 65_535) {
    return undefined;
  }
  return [first, last];
}

/**
 * Splits `boxes` (peer range × port range) into boxes with disjoint peer ranges: the peer axis is cut
 * wherever a box starts or ends, each piece gets the merged ports of the boxes covering it, and
 * neighbouring pieces with the same ports are joined again.
 */
function disjoint(boxes: readonly Box[]): { peers: Interval; ports: Interval[] }[] {
  const cuts = [...new Set(boxes.flatMap((b) => [b.peers[0], b.peers[1] + 1]))].sort((a, b) => a - b);
  const pieces: { peers: Interval; ports: Interval[] }[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const first = cuts[i]!;
    const last = cuts[i + 1]! - 1;
    const ports = mergeIntervals(
      boxes.filter((b) => b.peers[0] <= first && b.peers[1] >= last).map((b) => b.ports),
    );
    if (ports.length === 0) continue;
    const previous = pieces.at(-1);
    if (previous && previous.peers[1] + 1 === first && sameIntervals(previous.ports, ports)) {
      previous.peers = [previous.peers[0], last];
    } else {
      pieces.push({ peers: [first, last], ports });
    }
  }
  return pieces;
}

function directionAllows(plan: DirectionPlan, peer: string, c: Connection): boolean {
  const address = ipToInt(peer);
  const within = (r: AddressRange) => ipToInt(r.first) <= address && address <= ipToInt(r.last);
  if (plan.allTraffic.some(within)) return true;
  if (c.protocol === "ICMP" || c.port === undefined) return false;
  const port = c.port;
  return plan.ports.some(
    (a) =>
      a.protocol === c.protocol && within(a.peers) && a.ports.some((r) => r.first <= port && port <= r.last),
  );
}

/** Sorts and joins overlapping or adjacent intervals. */
function mergeIntervals(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: Interval[] = [];
  for (const [first, last] of sorted) {
    const previous = merged.at(-1);
    if (previous && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
    else merged.push([first, last]);
  }
  return merged;
}

function subtractIntervals(from: readonly Interval[], minus: readonly Interval[]): Interval[] {
  let rest = mergeIntervals(from);
  for (const [first, last] of mergeIntervals(minus)) {
    rest = rest.flatMap(([a, b]): Interval[] => {
      if (last < a || first > b) return [[a, b]];
      const kept: Interval[] = [];
      if (a < first) kept.push([a, first - 1]);
      if (last < b) kept.push([last + 1, b]);
      return kept;
    });
  }
  return rest;
}

function inIntervals(intervals: readonly Interval[], value: number): boolean {
  return intervals.some(([first, last]) => first <= value && value <= last);
}

function sameIntervals(a: readonly Interval[], b: readonly Interval[]): boolean {
  return a.length === b.length && a.every((x, i) => x[0] === b[i]![0] && x[1] === b[i]![1]);
}

function single(value: number): Interval {
  return [value, value];
}

/** An IPv4 CIDR as an interval; undefined for IPv6 or malformed text (the API server validates). */
function cidrInterval(cidr: string): Interval | undefined {
  if (cidr.includes(":")) return undefined;
  try {
    const network = parseCidr(cidr);
    return [network.base, network.base + networkSize(network) - 1];
  } catch {
    return undefined;
  }
}

function ipv4Value(ip: string): number | undefined {
  try {
    return ipToInt(ip);
  } catch {
    return undefined;
  }
}

function addressRange([first, last]: Interval): AddressRange {
  return { first: intToIp(first), last: intToIp(last) };
}

/** nft text of an address range: one address, a prefix when the range is one, else `first-last`. */
function addressText(range: AddressRange): string {
  const first = ipToInt(range.first);
  const size = ipToInt(range.last) - first + 1;
  if (size === 1) return range.first;
  const bits = Math.log2(size);
  if (Number.isInteger(bits) && first % size === 0) return `${range.first}/${32 - bits}`;
  return `${range.first}-${range.last}`;
}

function portText(range: PortRange): string {
  return range.first === range.last ? `${range.first}` : `${range.first}-${range.last}`;
}

function setText(name: string, type: string, interval: boolean, elements: readonly string[]): string[] {
  return [
    `  set ${name} {`,
    `    type ${type}`,
    ...(interval ? ["    flags interval"] : []),
    ...(elements.length > 0 ? ["    elements = {", `      ${elements.join(",\n      ")}`, "    }"] : []),
    "  }",
  ];
}

/** API protocols; absent means TCP; anything else is not a NetworkPolicy protocol. */
function toProtocol(protocol: string | undefined): Protocol | undefined {
  const value = protocol ?? "TCP";
  return (PROTOCOLS as readonly string[]).includes(value) ? (value as Protocol) : undefined;
}

function policyName(policy: V1NetworkPolicy): string {
  return `${policy.metadata?.namespace ?? ""}/${policy.metadata?.name ?? ""}`;
}

/** Code-point order, independent of the locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
