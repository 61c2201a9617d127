import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1NetworkPolicy, V1NetworkPolicySpec, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ipToInt } from "../ipv4.ts";
import {
  type Connection,
  isAllowed,
  type NetworkPolicyPlan,
  networkPolicyRuleset,
  type PlanInput,
  type PlanNamespace,
  type PlanPod,
  type Protocol,
  planNetworkPolicies,
  planPodFromV1,
  planSummary,
} from "./plan.ts";

const HOST = "10.88.0.1";
const EXTERNAL = "192.0.2.7";

const NAMESPACES: PlanNamespace[] = [
  { name: "shop", labels: { "kubernetes.io/metadata.name": "shop", team: "shop" } },
  { name: "ops", labels: { "kubernetes.io/metadata.name": "ops", team: "ops" } },
  { name: "other", labels: { "kubernetes.io/metadata.name": "other" } },
];

const PODS: PlanPod[] = [
  pod("shop/web", "10.88.0.10", { app: "web" }, [["http", 8080]]),
  pod("shop/api", "10.88.0.11", { app: "api", tier: "backend" }, [
    ["grpc", 9090],
    ["metrics", 9100],
    ["dns", 5353, "UDP"],
  ]),
  pod("shop/db", "10.88.0.12", { app: "db", tier: "backend" }, [
    ["pg", 5432],
    ["metrics", 9187],
  ]),
  pod("ops/monitor", "10.88.0.20", { app: "monitor" }, []),
  pod("ops/debug", "10.88.0.21", { app: "debug" }, []),
  pod("other/web", "10.88.0.30", { app: "web" }, [["http", 8080]]),
];

function pod(
  ref: string,
  ip: string,
  labels: Record<string, string>,
  ports: [string, number, Protocol?][],
): PlanPod {
  const [namespace = "", name = ""] = ref.split("/");
  return {
    namespace,
    name,
    labels,
    ip,
    phase: "Running",
    ports: ports.map(([portName, port, protocol = "TCP"]) => ({ name: portName, port, protocol })),
  };
}

function policy(ref: string, spec: V1NetworkPolicySpec): V1NetworkPolicy {
  const [namespace, name] = ref.split("/");
  return { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { namespace, name }, spec };
}

function input(policies: V1NetworkPolicy[], pods: PlanPod[] = PODS): PlanInput {
  return { bridgeName: "ghbr0", hostIPs: [HOST], pods, namespaces: NAMESPACES, policies };
}

/** `shop/web`, `host`, `external` or a literal address. */
function address(ref: string): string {
  if (ref === "host") return HOST;
  if (ref === "external") return EXTERNAL;
  return PODS.find((p) => `${p.namespace}/${p.name}` === ref)?.ip ?? ref;
}

/** Parses `shop/web → shop/api TCP 9090` (port omitted for ICMP). */
function connection(text: string): Connection {
  const [from = "", to = "", protocol = "", port] = text.replace("→", " ").split(/\s+/);
  return {
    from: address(from),
    to: address(to),
    protocol: protocol as Connection["protocol"],
    ...(port ? { port: Number(port) } : {}),
  };
}

/**
 * An independent reading of the generated script: the elements of its six sets, evaluated the way its
 * chains use them. Agreeing with {@link isAllowed} shows the text says what the plan says.
 */
function scriptAllows(script: string, c: Connection): boolean {
  if (c.from === HOST || c.from === c.to) return true;
  const elements = (set: string): string[][] => {
    const match = new RegExp(`set ${set} \\{[^}]*?elements = \\{([^}]*)\\}`, "s").exec(script);
    return (match?.[1] ?? "")
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean)
      .map((e) => e.split(" . "));
  };
  const inAddress = (text: string, ip: string) => {
    const value = ipToInt(ip);
    if (text.includes("/")) {
      const [base = "", bits = "32"] = text.split("/");
      const size = 2 ** (32 - Number(bits));
      return value >= ipToInt(base) && value < ipToInt(base) + size;
    }
    const [first = "", last = first] = text.split("-");
    return ipToInt(first) <= value && value <= ipToInt(last);
  };
  const inPorts = (text: string, port: number) => {
    const [first = "", last = first] = text.split("-");
    return Number(first) <= port && port <= Number(last);
  };
  const passes = (direction: string, pod: string, peer: string) => {
    if (!elements(`${direction}_isolated`).some(([ip]) => ip === pod)) return true;
    if (elements(`${direction}_all`).some(([ip = "", range = ""]) => ip === pod && inAddress(range, peer))) {
      return true;
    }
    return elements(`${direction}_ports`).some(
      ([ip = "", range = "", protocol, ports = ""]) =>
        ip === pod &&
        inAddress(range, peer) &&
        protocol === c.protocol.toLowerCase() &&
        c.port !== undefined &&
        inPorts(ports, c.port),
    );
  };
  return passes("egress", c.from, c.to) && passes("ingress", c.to, c.from);
}

type Case = {
  name: string;
  policies: V1NetworkPolicy[];
  /** Connection text → whether it passes. */
  expect: Record<string, boolean>;
  /** Optional checks on the plan itself. */
  plan?: (plan: NetworkPolicyPlan) => void;
};

function podPlan(plan: NetworkPolicyPlan, ref: string) {
  return plan.pods.find((p) => `${p.namespace}/${p.name}` === ref)!;
}

const CASES: Case[] = [
  {
    name: "a pod selected by no policy is not isolated",
    policies: [
      policy("shop/api-only", { podSelector: { matchLabels: { app: "api" } }, policyTypes: ["Ingress"] }),
    ],
    expect: {
      "ops/debug → shop/web TCP 8080": true,
      "shop/web → shop/db TCP 5432": true,
      "shop/web → shop/api TCP 9090": false,
    },
    plan: (plan) => {
      expect(podPlan(plan, "shop/web")).toEqual({ namespace: "shop", name: "web", ip: "10.88.0.10" });
      expect(podPlan(plan, "shop/api").ingress).toEqual({
        policies: ["shop/api-only"],
        allTraffic: [],
        ports: [],
      });
    },
  },
  {
    name: "default deny ingress isolates every pod of the namespace, not its egress",
    policies: [policy("shop/deny-ingress", { podSelector: {}, policyTypes: ["Ingress"] })],
    expect: {
      "shop/web → shop/api TCP 9090": false,
      "ops/monitor → shop/db TCP 5432": false,
      "ops/monitor → shop/db ICMP": false,
      "external → shop/web TCP 8080": false,
      "host → shop/api TCP 9090": true,
      "shop/web → ops/monitor TCP 80": true,
      "shop/web → host TCP 6443": true,
      "ops/monitor → other/web TCP 8080": true,
    },
    plan: (plan) => {
      expect(plan.pods.filter((p) => p.ingress).map((p) => p.name)).toEqual(["api", "db", "web"]);
      expect(plan.pods.filter((p) => p.egress)).toEqual([]);
    },
  },
  {
    name: "default deny egress blocks what the pods send, the host included, not what they receive",
    policies: [policy("shop/deny-egress", { podSelector: {}, policyTypes: ["Egress"] })],
    expect: {
      "shop/web → shop/api TCP 9090": false,
      "shop/web → host TCP 6443": false,
      "shop/web → external UDP 53": false,
      "shop/api → ops/monitor ICMP": false,
      "ops/monitor → shop/api TCP 9090": true,
      "host → shop/web TCP 8080": true,
    },
  },
  {
    name: "allow by pod selector: only matching pods of the policy's own namespace",
    policies: [
      policy("shop/api-from-web", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ _from: [{ podSelector: { matchLabels: { app: "web" } } }] }],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": true,
      "shop/web → shop/api UDP 5353": true,
      "shop/web → shop/api ICMP": true,
      "shop/db → shop/api TCP 9090": false,
      "other/web → shop/api TCP 9090": false,
      "external → shop/api TCP 9090": false,
    },
  },
  {
    name: "allow by namespace selector: every pod of the matching namespaces",
    policies: [
      policy("shop/db-from-ops", {
        podSelector: { matchLabels: { app: "db" } },
        ingress: [{ _from: [{ namespaceSelector: { matchLabels: { team: "ops" } } }] }],
      }),
    ],
    expect: {
      "ops/monitor → shop/db TCP 5432": true,
      "ops/debug → shop/db TCP 5432": true,
      "shop/web → shop/db TCP 5432": false,
      "other/web → shop/db TCP 5432": false,
    },
  },
  {
    name: "one peer with both selectors is their AND",
    policies: [
      policy("shop/db-from-ops-monitor", {
        podSelector: { matchLabels: { app: "db" } },
        ingress: [
          {
            _from: [
              {
                namespaceSelector: { matchLabels: { team: "ops" } },
                podSelector: { matchLabels: { app: "monitor" } },
              },
            ],
          },
        ],
      }),
    ],
    expect: {
      "ops/monitor → shop/db TCP 5432": true,
      "ops/debug → shop/db TCP 5432": false,
      "shop/web → shop/db TCP 5432": false,
    },
  },
  {
    name: "two peers are their OR; a pod selector alone stays in the policy's namespace",
    policies: [
      policy("shop/db-from-ops-or-web", {
        podSelector: { matchLabels: { app: "db" } },
        ingress: [
          {
            _from: [
              { namespaceSelector: { matchLabels: { team: "ops" } } },
              { podSelector: { matchLabels: { app: "web" } } },
            ],
          },
        ],
      }),
    ],
    expect: {
      "ops/monitor → shop/db TCP 5432": true,
      "ops/debug → shop/db TCP 5432": true,
      "shop/web → shop/db TCP 5432": true,
      "other/web → shop/db TCP 5432": false,
      "shop/api → shop/db TCP 5432": false,
    },
  },
  {
    name: "match expressions In, NotIn, Exists and DoesNotExist",
    policies: [
      policy("shop/db-from-backend-not-db", {
        podSelector: { matchExpressions: [{ key: "app", operator: "In", values: ["db"] }] },
        ingress: [
          {
            _from: [
              {
                podSelector: {
                  matchExpressions: [
                    { key: "tier", operator: "Exists" },
                    { key: "app", operator: "NotIn", values: ["db", "web"] },
                  ],
                },
              },
              {
                namespaceSelector: { matchExpressions: [{ key: "team", operator: "DoesNotExist" }] },
              },
            ],
          },
        ],
      }),
    ],
    expect: {
      "shop/api → shop/db TCP 5432": true,
      "shop/web → shop/db TCP 5432": false,
      "other/web → shop/db TCP 5432": true,
      "ops/monitor → shop/db TCP 5432": false,
    },
  },
  {
    name: "an empty podSelector selects the namespace's pods; an empty from list admits everyone",
    policies: [
      policy("shop/all-from-anywhere", { podSelector: {}, ingress: [{ _from: [] }] }),
      policy("ops/from-own-namespace", { podSelector: {}, ingress: [{ _from: [{ podSelector: {} }] }] }),
    ],
    expect: {
      "external → shop/web TCP 8080": true,
      "other/web → shop/db ICMP": true,
      "ops/debug → ops/monitor TCP 80": true,
      "shop/web → ops/monitor TCP 80": false,
    },
  },
  {
    name: "ipBlock with except matches pod addresses, the host and external addresses",
    policies: [
      policy("shop/web-egress", {
        podSelector: { matchLabels: { app: "web" } },
        policyTypes: ["Egress"],
        egress: [
          {
            to: [{ ipBlock: { cidr: "10.88.0.0/22", except: ["10.88.0.12/32", "10.88.0.20/30"] } }],
            ports: [{ port: 5432 }, { port: 9090 }],
          },
        ],
      }),
      policy("shop/api-ingress", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [
          {
            _from: [
              { ipBlock: { cidr: "192.0.2.0/24", except: ["192.0.2.128/25"] } },
              { ipBlock: { cidr: "2001:db8::/64" } },
            ],
          },
        ],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": false,
      "shop/web → shop/db TCP 5432": false,
      "shop/web → other/web TCP 9090": true,
      "shop/web → ops/monitor TCP 9090": false,
      "shop/web → host TCP 5432": true,
      "shop/web → host TCP 443": false,
      "shop/web → external TCP 5432": false,
      "192.0.2.7 → shop/api TCP 9090": true,
      "192.0.2.200 → shop/api TCP 9090": false,
      "shop/db → shop/api TCP 9090": false,
    },
  },
  {
    name: "numeric port: only that port of that protocol",
    policies: [
      policy("shop/api-9090", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ _from: [{ podSelector: { matchLabels: { app: "web" } } }], ports: [{ port: 9090 }] }],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": true,
      "shop/web → shop/api TCP 9091": false,
      "shop/web → shop/api UDP 9090": false,
      "shop/web → shop/api SCTP 9090": false,
      "shop/web → shop/api ICMP": false,
    },
  },
  {
    name: "a protocol without a port admits every port of it",
    policies: [
      policy("shop/api-udp", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ ports: [{ protocol: "UDP" }] }],
      }),
    ],
    expect: {
      "shop/web → shop/api UDP 1": true,
      "shop/web → shop/api UDP 65535": true,
      "shop/web → shop/api TCP 9090": false,
    },
  },
  {
    name: "named ports resolve against the destination: the selected pod for ingress",
    policies: [
      policy("shop/api-grpc", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [
          { ports: [{ port: "grpc" }, { port: "dns", protocol: "UDP" }, { port: "dns" }, { port: "nope" }] },
        ],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": true,
      "shop/web → shop/api TCP 9100": false,
      "shop/web → shop/api UDP 5353": true,
      "shop/web → shop/api TCP 5353": false,
    },
  },
  {
    name: "named ports resolve against each destination pod for egress, and never against non-pods",
    policies: [
      policy("shop/web-metrics", {
        podSelector: { matchLabels: { app: "web" } },
        policyTypes: ["Egress"],
        egress: [
          { to: [{ podSelector: { matchLabels: { tier: "backend" } } }], ports: [{ port: "metrics" }] },
          { to: [{ ipBlock: { cidr: "10.88.0.0/22" } }], ports: [{ port: "http" }] },
        ],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9100": true,
      "shop/web → shop/api TCP 9187": false,
      "shop/web → shop/db TCP 9187": true,
      "shop/web → shop/db TCP 9100": false,
      "shop/web → other/web TCP 8080": true,
      "shop/web → host TCP 8080": false,
      "shop/web → ops/monitor TCP 8080": false,
    },
  },
  {
    name: "endPort admits the whole range, both ends included",
    policies: [
      policy("shop/api-range", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ ports: [{ protocol: "TCP", port: 32000, endPort: 32768 }] }],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 32000": true,
      "shop/web → shop/api TCP 32768": true,
      "shop/web → shop/api TCP 31999": false,
      "shop/web → shop/api TCP 32769": false,
    },
  },
  {
    name: "several policies selecting a pod: their union",
    policies: [
      policy("shop/api-grpc-from-web", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ _from: [{ podSelector: { matchLabels: { app: "web" } } }], ports: [{ port: 9090 }] }],
      }),
      policy("shop/backend-metrics-from-ops", {
        podSelector: { matchLabels: { tier: "backend" } },
        ingress: [
          { _from: [{ namespaceSelector: { matchLabels: { team: "ops" } } }], ports: [{ port: 9100 }] },
        ],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": true,
      "shop/web → shop/api TCP 9100": false,
      "ops/monitor → shop/api TCP 9100": true,
      "ops/monitor → shop/api TCP 9090": false,
      "ops/monitor → shop/db TCP 9100": true,
      "shop/web → shop/db TCP 9090": false,
    },
    plan: (plan) =>
      expect(podPlan(plan, "shop/api").ingress?.policies).toEqual([
        "shop/api-grpc-from-web",
        "shop/backend-metrics-from-ops",
      ]),
  },
  {
    name: "egress to DNS is a UDP and TCP port 53 rule; the gateway but not another host port",
    policies: [
      policy("shop/web-egress", {
        podSelector: { matchLabels: { app: "web" } },
        policyTypes: ["Egress"],
        egress: [
          {
            ports: [
              { protocol: "UDP", port: 53 },
              { protocol: "TCP", port: 53 },
            ],
          },
          { to: [{ ipBlock: { cidr: `${HOST}/32` } }], ports: [{ port: 8443 }] },
        ],
      }),
    ],
    expect: {
      "shop/web → host UDP 53": true,
      "shop/web → external TCP 53": true,
      "shop/web → shop/api UDP 53": true,
      "shop/web → host TCP 8443": true,
      "shop/web → host TCP 5432": false,
      "shop/web → shop/api TCP 8443": false,
      "shop/web → shop/api TCP 9090": false,
    },
  },
  {
    name: "a connection between two isolated pods needs the source's egress and the destination's ingress",
    policies: [
      policy("shop/web-to-api", {
        podSelector: { matchLabels: { app: "web" } },
        policyTypes: ["Egress"],
        egress: [{ to: [{ podSelector: { matchLabels: { app: "api" } } }] }],
      }),
      policy("shop/api-from-db", {
        podSelector: { matchLabels: { app: "api" } },
        ingress: [{ _from: [{ podSelector: { matchLabels: { app: "db" } } }] }],
      }),
    ],
    expect: {
      "shop/web → shop/api TCP 9090": false,
      "shop/db → shop/api TCP 9090": true,
      "shop/web → shop/db TCP 5432": false,
    },
  },
  {
    name: "policyTypes default to Ingress, plus Egress when egress rules are present",
    policies: [
      policy("shop/web-ingress-rules-only", {
        podSelector: { matchLabels: { app: "web" } },
        ingress: [{ ports: [{ port: 8080 }] }],
      }),
      policy("shop/api-egress-rules", {
        podSelector: { matchLabels: { app: "api" } },
        egress: [{ ports: [{ port: 5432 }] }],
      }),
      policy("shop/db-egress-only-type", {
        podSelector: { matchLabels: { app: "db" } },
        policyTypes: ["Egress"],
        ingress: [{ ports: [{ port: 1 }] }],
      }),
    ],
    expect: {
      "shop/api → shop/web TCP 8080": false,
      "ops/monitor → shop/web TCP 8080": true,
      "shop/web → ops/monitor TCP 80": true,
      "ops/monitor → shop/api TCP 9090": false,
      "shop/api → shop/db TCP 5432": true,
      "shop/api → host TCP 6443": false,
      "ops/monitor → shop/db TCP 5432": true,
      "shop/db → host TCP 6443": false,
    },
    plan: (plan) => {
      expect([podPlan(plan, "shop/web").ingress !== undefined, podPlan(plan, "shop/web").egress]).toEqual([
        true,
        undefined,
      ]);
      expect([
        podPlan(plan, "shop/api").ingress?.policies,
        podPlan(plan, "shop/api").egress?.policies,
      ]).toEqual([["shop/api-egress-rules"], ["shop/api-egress-rules"]]);
      expect([podPlan(plan, "shop/db").ingress, podPlan(plan, "shop/db").egress?.allTraffic]).toEqual([
        undefined,
        [],
      ]);
    },
  },
];

describe("NetworkPolicy plan", () => {
  it.each(CASES)("$name", ({ policies, expect: expected, plan: checkPlan }) => {
    const plan = planNetworkPolicies(input(policies));
    const script = networkPolicyRuleset(plan);
    const actual = Object.fromEntries(
      Object.keys(expected).map((text) => [text, isAllowed(plan, connection(text))]),
    );
    expect(actual).toEqual(expected);
    const fromScript = Object.fromEntries(
      Object.keys(expected).map((text) => [text, scriptAllows(script, connection(text))]),
    );
    expect(fromScript).toEqual(expected);
    checkPlan?.(plan);
  });

  it("summarizes, per isolated pod and direction, the policies and what they allow, for the node's log", () => {
    const plan = planNetworkPolicies(
      input([
        policy("shop/api-from-web", {
          podSelector: { matchLabels: { app: "api" } },
          ingress: [
            {
              _from: [{ podSelector: { matchLabels: { app: "web" } } }],
              ports: [{ port: 9090, endPort: 9100 }],
            },
          ],
        }),
        policy("shop/db-closed", {
          podSelector: { matchLabels: { app: "db" } },
          policyTypes: ["Ingress", "Egress"],
        }),
        policy("shop/web-out", {
          podSelector: { matchLabels: { app: "web" } },
          policyTypes: ["Egress"],
          egress: [{ to: [{ ipBlock: { cidr: "10.88.0.0/22" } }] }],
        }),
      ]),
    );
    expect(planSummary(plan)).toEqual([
      "shop/api 10.88.0.11 ingress by shop/api-from-web: tcp 9090-9100 from 10.88.0.10",
      "shop/db 10.88.0.12 ingress by shop/db-closed: nothing",
      "shop/db 10.88.0.12 egress by shop/db-closed: nothing",
      "shop/web 10.88.0.10 egress by shop/web-out: all to 10.88.0.0/22",
    ]);
  });

  it("accepts an ingress rule's peers as `from`, as a watch delivers them", () => {
    const raw = policy("shop/api-from-web", {
      podSelector: { matchLabels: { app: "api" } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: "web" } } }] } as never],
    });
    const plan = planNetworkPolicies(input([raw]));
    expect(isAllowed(plan, connection("shop/web → shop/api TCP 9090"))).toBe(true);
    expect(isAllowed(plan, connection("shop/db → shop/api TCP 9090"))).toBe(false);
  });

  it("leaves out pods without an address, finished pods and a second pod on a taken address", () => {
    const pods = [
      ...PODS,
      { ...pod("shop/pending", "", {}, []), ip: undefined },
      { ...pod("shop/done", "10.88.0.40", {}, []), phase: "Succeeded" },
      pod("shop/zz-clash", "10.88.0.10", {}, []),
    ] as PlanPod[];
    const plan = planNetworkPolicies(input([], pods));
    expect(plan.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual([
      "ops/debug",
      "ops/monitor",
      "other/web",
      "shop/api",
      "shop/db",
      "shop/web",
    ]);
    expect(plan.ignoredPods).toEqual([
      { namespace: "shop", name: "done", reason: "phase Succeeded" },
      { namespace: "shop", name: "pending", reason: "no address yet" },
      { namespace: "shop", name: "zz-clash", reason: "address 10.88.0.10 already belongs to shop/web" },
    ]);
  });

  it("keeps each pod's peer ranges disjoint per protocol when rules overlap", () => {
    const plan = planNetworkPolicies(
      input([
        policy("shop/overlap", {
          podSelector: { matchLabels: { app: "api" } },
          ingress: [
            { _from: [{ ipBlock: { cidr: "10.88.0.0/22" } }], ports: [{ port: 80 }] },
            { _from: [{ podSelector: { matchLabels: { app: "web" } } }], ports: [{ port: 80, endPort: 90 }] },
            { _from: [{ ipBlock: { cidr: "10.88.0.8/29" } }], ports: [{ port: 85 }, { port: 100 }] },
          ],
        }),
      ]),
    );
    expect(podPlan(plan, "shop/api").ingress?.ports).toEqual([
      { protocol: "TCP", peers: { first: "10.88.0.0", last: "10.88.0.7" }, ports: [{ first: 80, last: 80 }] },
      {
        protocol: "TCP",
        peers: { first: "10.88.0.8", last: "10.88.0.9" },
        ports: [
          { first: 80, last: 80 },
          { first: 85, last: 85 },
          { first: 100, last: 100 },
        ],
      },
      {
        protocol: "TCP",
        peers: { first: "10.88.0.10", last: "10.88.0.10" },
        ports: [
          { first: 80, last: 90 },
          { first: 100, last: 100 },
        ],
      },
      {
        protocol: "TCP",
        peers: { first: "10.88.0.11", last: "10.88.0.15" },
        ports: [
          { first: 80, last: 80 },
          { first: 85, last: 85 },
          { first: 100, last: 100 },
        ],
      },
      {
        protocol: "TCP",
        peers: { first: "10.88.0.16", last: "10.88.3.255" },
        ports: [{ first: 80, last: 80 }],
      },
    ]);
  });

  it("writes the same text for the same inputs in any order", () => {
    const policies = CASES.flatMap((c) => c.policies).map((p, i) => ({
      ...p,
      metadata: { ...p.metadata, name: `${p.metadata?.name}-${i}` },
    }));
    const first = networkPolicyRuleset(planNetworkPolicies(input(policies)));
    const second = networkPolicyRuleset(
      planNetworkPolicies({
        ...input([...policies].reverse(), [...PODS].reverse()),
        namespaces: [...NAMESPACES].reverse(),
      }),
    );
    expect(second).toBe(first);
  });

  it("writes the nft script of a small plan (golden)", () => {
    const plan = planNetworkPolicies(
      input(
        [
          policy("shop/deny-ingress", { podSelector: {}, policyTypes: ["Ingress"] }),
          policy("shop/api", {
            podSelector: { matchLabels: { app: "api" } },
            policyTypes: ["Ingress", "Egress"],
            ingress: [
              { _from: [{ podSelector: { matchLabels: { app: "web" } } }], ports: [{ port: "grpc" }] },
            ],
            egress: [
              { to: [{ podSelector: { matchLabels: { app: "db" } } }] },
              {
                to: [{ ipBlock: { cidr: `${HOST}/32` } }],
                ports: [{ port: 6443 }, { protocol: "UDP", port: 53 }],
              },
            ],
          }),
        ],
        PODS.filter((p) => p.namespace === "shop"),
      ),
    );
    expect(networkPolicyRuleset(plan)).toBe(`table inet gatehouse_np_ghbr0 {}
delete table inet gatehouse_np_ghbr0
table inet gatehouse_np_ghbr0 {
  set ingress_isolated {
    type ipv4_addr
    elements = {
      10.88.0.10,
      10.88.0.11,
      10.88.0.12
    }
  }
  set ingress_all {
    type ipv4_addr . ipv4_addr
    flags interval
  }
  set ingress_ports {
    type ipv4_addr . ipv4_addr . inet_proto . inet_service
    flags interval
    elements = {
      10.88.0.11 . 10.88.0.10 . tcp . 9090
    }
  }
  set egress_isolated {
    type ipv4_addr
    elements = {
      10.88.0.11
    }
  }
  set egress_all {
    type ipv4_addr . ipv4_addr
    flags interval
    elements = {
      10.88.0.11 . 10.88.0.12
    }
  }
  set egress_ports {
    type ipv4_addr . ipv4_addr . inet_proto . inet_service
    flags interval
    elements = {
      10.88.0.11 . 10.88.0.1 . tcp . 6443,
      10.88.0.11 . 10.88.0.1 . udp . 53
    }
  }
  chain forward {
    type filter hook forward priority filter; policy accept;
    ct state established,related accept
    iifname "ghbr0" meta nfproto ipv6 reject with icmpx admin-prohibited
    oifname "ghbr0" meta nfproto ipv6 reject with icmpx admin-prohibited
    iifname "ghbr0" jump egress
    oifname "ghbr0" jump ingress
  }
  chain input {
    type filter hook input priority filter; policy accept;
    ct state established,related accept
    iifname "ghbr0" meta nfproto ipv4 jump egress
  }
  chain egress {
    ip saddr != @egress_isolated return
    ip saddr . ip daddr @egress_all return
    ip saddr . ip daddr . meta l4proto . th dport @egress_ports return
    meta l4proto tcp reject with tcp reset
    reject with icmpx admin-prohibited
  }
  chain ingress {
    ip daddr != @ingress_isolated return
    ip daddr . ip saddr @ingress_all return
    ip daddr . ip saddr . meta l4proto . th dport @ingress_ports return
    meta l4proto tcp reject with tcp reset
    reject with icmpx admin-prohibited
  }
}
`);
  });

  it("writes a script nft accepts (check mode, nothing applied)", (context) => {
    const reason = nftCheckUnavailable();
    if (reason) {
      console.log(`skipped: ${reason}`);
      context.skip();
    }
    // Every case's policies at once, on a made-up bridge so no real table is named.
    const policies = CASES.flatMap((c) => c.policies).map((p, i) => ({
      ...p,
      metadata: { ...p.metadata, name: `${p.metadata?.name}-${i}` },
    }));
    const plan = planNetworkPolicies({ ...input(policies), bridgeName: "ghbrplancheck" });
    const dir = mkdtempSync(join(tmpdir(), "np-plan-"));
    try {
      const file = join(dir, "ruleset.nft");
      writeFileSync(file, networkPolicyRuleset(plan));
      execFileSync("nft", ["--check", "-f", file], { stdio: "pipe" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads a V1Pod: labels, address, phase and the ports of all its containers", () => {
    const v1: V1Pod = {
      metadata: { namespace: "shop", name: "api", labels: { app: "api" } },
      spec: {
        initContainers: [{ name: "proxy", ports: [{ name: "proxy", containerPort: 15001 }] }],
        containers: [
          {
            name: "app",
            ports: [
              { name: "grpc", containerPort: 9090 },
              { containerPort: 53, protocol: "UDP" },
            ],
          },
        ],
      },
      status: { phase: "Running", podIP: "10.88.0.11" },
    };
    expect(planPodFromV1(v1)).toEqual({
      namespace: "shop",
      name: "api",
      labels: { app: "api" },
      ip: "10.88.0.11",
      phase: "Running",
      ports: [
        { name: "proxy", port: 15001, protocol: "TCP" },
        { name: "grpc", port: 9090, protocol: "TCP" },
        { port: 53, protocol: "UDP" },
      ],
    });
    expect(planPodFromV1(v1, "10.88.0.99").ip).toBe("10.88.0.99");
  });
});

/** Why `nft --check` cannot run here, or undefined when it can (it needs nftables and root). */
function nftCheckUnavailable(): string | undefined {
  try {
    execFileSync("sh", ["-c", "command -v nft"], { stdio: "pipe" });
  } catch {
    return "nft is not installed (make host-deps installs nftables)";
  }
  if (process.getuid?.() !== 0) return "nft --check talks to the kernel and needs root";
  return undefined;
}
