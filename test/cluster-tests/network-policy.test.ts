/**
 * The local node enforces NetworkPolicy (test/cluster/src/network-policy/): the upstream cases that
 * apply to a single node, each against the real API server. Probe pods (testbox `probe`) make
 * connection attempts from inside their network namespace when the test asks them over HTTP from the
 * host — which also shows the host reaching pods that policies isolate. Each case installs its
 * policies, waits until the whole connectivity matrix is the expected one (enforcement follows a
 * watch, so it is eventual), then removes them and waits for the open baseline again, so no case can
 * pass on an earlier case's rules.
 */
import { KubeConfig, NetworkingV1Api, type V1NetworkPolicySpec } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../cluster/src/index.ts";
import { MERGE_PATCH as mergePatch } from "../cluster/src/node/kube-client.ts";
import {
  cluster,
  containerLog,
  core,
  hasCondition,
  testbox,
  testNamespace,
  waitForPod,
  waitForTerminal,
} from "./pod-fixtures.ts";

const PROBE_PORT = 9000;
/** How long enforcement may take to follow a change of policies, pods or namespaces. */
const ENFORCED_WITHIN_MS = 20_000;

const kc = new KubeConfig();
kc.loadFromFile(cluster.kubeconfigPath);
kc.setCurrentContext("admin");
const networking = kc.makeApiClient(NetworkingV1Api);

type Protocol = "tcp" | "udp";
/** `from → to:port/protocol`, where `to` is a pod name or `host`. */
type Check = { from: string; to: string; port: number; protocol?: Protocol };

const pods: Record<string, { ns: string; ip: string }> = {};
const namespaces: { a: string; b: string; cleanups: (() => Promise<void>)[] } = {
  a: "",
  b: "",
  cleanups: [],
};

function key(c: Check): string {
  return `${c.from} → ${c.to}:${c.port}/${c.protocol ?? "tcp"}`;
}

/** Asks probe pod `from` to connect; true when it did. */
async function attempt(c: Check): Promise<boolean> {
  const host = c.to === "host" ? cluster.bridgeIP : (pods[c.to]?.ip ?? "");
  const url = `http://${pods[c.from]?.ip}:${PROBE_PORT}/connect?host=${host}&port=${c.port}&protocol=${c.protocol ?? "tcp"}`;
  const answer = await (await fetch(url, { signal: AbortSignal.timeout(5_000) })).text();
  return answer === "connected";
}

/** Polls until every check has its expected outcome; fails naming the checks that never did. */
async function expectConnectivity(expected: [Check, boolean][]): Promise<void> {
  await eventually(
    "every connection's outcome to match the policies",
    ENFORCED_WITHIN_MS,
    async () => {
      const outcomes = await Promise.all(expected.map(async ([c]) => attempt(c)));
      const wrong = expected.filter(([, want], i) => outcomes[i] !== want);
      if (wrong.length === 0) return true;
      throw new Error(
        wrong.map(([c, want]) => `${key(c)} should be ${want ? "allowed" : "denied"}`).join("; "),
      );
    },
    { intervalMs: 200 },
  );
}

/** Every check of a case, allowed: what holds with no policy at all. */
async function expectOpen(checks: Check[]): Promise<void> {
  await expectConnectivity(checks.map((c) => [c, true]));
}

/** Creates the policies, checks the matrix, then removes them and waits until `expected`'s checks are open again. */
async function withPolicies(
  policies: { ns: "a" | "b"; name: string; spec: V1NetworkPolicySpec }[],
  expected: [Check, boolean][],
): Promise<void> {
  for (const p of policies) {
    await networking.createNamespacedNetworkPolicy({
      namespace: namespaces[p.ns],
      body: { metadata: { name: p.name }, spec: p.spec },
    });
  }
  try {
    await expectConnectivity(expected);
  } finally {
    for (const p of policies) {
      await networking.deleteNamespacedNetworkPolicy({ namespace: namespaces[p.ns], name: p.name });
    }
  }
  await expectOpen(expected.map(([c]) => c));
}

const SERVER_PORTS = [
  { name: "http", containerPort: 8080 },
  { name: "admin", containerPort: 8081 },
  { name: "metrics", containerPort: 9090 },
  { name: "dns", containerPort: 53, protocol: "UDP" },
  { name: "mdns", containerPort: 5353, protocol: "UDP" },
];

async function startPod(ns: string, name: string, labels: Record<string, string>, role: "probe" | "server") {
  const container =
    role === "probe"
      ? {
          ...testbox("probe", "probe", String(PROBE_PORT)),
          ports: [{ name: "probe", containerPort: PROBE_PORT }],
        }
      : {
          ...testbox("server", "serve", "8080", "8081", "9090", "udp:53", "udp:5353"),
          ports: SERVER_PORTS,
        };
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, labels },
      spec: {
        containers: [
          {
            ...container,
            readinessProbe: { tcpSocket: { port: role === "probe" ? PROBE_PORT : 8080 }, periodSeconds: 1 },
          },
        ],
      },
    },
  });
}

describe("NetworkPolicy on the local node", () => {
  beforeAll(async () => {
    const a = await testNamespace("np-a");
    const b = await testNamespace("np-b");
    namespaces.a = a.ns;
    namespaces.b = b.ns;
    namespaces.cleanups.push(a.cleanup, b.cleanup);
    await core.patchNamespace({ name: a.ns, body: { metadata: { labels: { team: "a" } } } }, mergePatch);
    await core.patchNamespace({ name: b.ns, body: { metadata: { labels: { team: "b" } } } }, mergePatch);
    const layout: [string, "a" | "b", Record<string, string>, "probe" | "server"][] = [
      ["client", "a", { role: "client" }, "probe"],
      ["other", "a", { role: "other" }, "probe"],
      ["web", "a", { role: "web" }, "server"],
      ["client-b", "b", { role: "client" }, "probe"],
      ["other-b", "b", { role: "other" }, "probe"],
      ["web-b", "b", { role: "web" }, "server"],
    ];
    await Promise.all(layout.map(([name, ns, labels, role]) => startPod(namespaces[ns], name, labels, role)));
    for (const [name, ns] of layout) {
      const pod = await waitForPod(namespaces[ns], name, "Ready", (p) => hasCondition(p, "Ready"));
      pods[name] = { ns: namespaces[ns], ip: pod.status?.podIP ?? "" };
    }
  });

  afterAll(async () => {
    await Promise.all(namespaces.cleanups.map((c) => c()));
  });

  it("denies all ingress to the pods a default-deny policy selects, while the host still reaches them", async () => {
    await withPolicies(
      [{ ns: "a", name: "deny-ingress", spec: { podSelector: {}, policyTypes: ["Ingress"] } }],
      [
        [{ from: "client", to: "web", port: 8080 }, false],
        [{ from: "client-b", to: "web", port: 8080 }, false],
        [{ from: "client-b", to: "other", port: PROBE_PORT }, false],
        [{ from: "client", to: "web-b", port: 8080 }, true],
        [{ from: "client-b", to: "web-b", port: 8080 }, true],
      ],
    );
  });

  it("denies all egress of the pods a default-deny policy selects, to pods and to the host", async () => {
    await withPolicies(
      [{ ns: "a", name: "deny-egress", spec: { podSelector: {}, policyTypes: ["Egress"] } }],
      [
        [{ from: "client", to: "web", port: 8080 }, false],
        [{ from: "client", to: "web-b", port: 8080 }, false],
        [{ from: "client", to: "host", port: 6443 }, false],
        [{ from: "client", to: "web", port: 53, protocol: "udp" }, false],
        [{ from: "client-b", to: "web", port: 8080 }, true],
        [{ from: "client-b", to: "host", port: 6443 }, true],
      ],
    );
  });

  it("allows ingress by pod selector, in the policy's namespace only, and follows a pod's new labels", async () => {
    const policies = [
      {
        ns: "a" as const,
        name: "web-from-clients",
        spec: {
          podSelector: { matchLabels: { role: "web" } },
          ingress: [{ _from: [{ podSelector: { matchLabels: { role: "client" } } }] }],
        },
      },
    ];
    const relabel = (role: string) =>
      core.patchNamespacedPod(
        { namespace: namespaces.a, name: "other", body: { metadata: { labels: { role } } } },
        mergePatch,
      );
    for (const p of policies) {
      await networking.createNamespacedNetworkPolicy({
        namespace: namespaces[p.ns],
        body: { metadata: { name: p.name }, spec: p.spec },
      });
    }
    try {
      await expectConnectivity([
        [{ from: "client", to: "web", port: 8080 }, true],
        [{ from: "other", to: "web", port: 8080 }, false],
        [{ from: "client-b", to: "web", port: 8080 }, false],
      ]);
      await relabel("client");
      await expectConnectivity([[{ from: "other", to: "web", port: 8080 }, true]]);
    } finally {
      await relabel("other");
      await networking.deleteNamespacedNetworkPolicy({ namespace: namespaces.a, name: "web-from-clients" });
    }
    await expectOpen([
      { from: "other", to: "web", port: 8080 },
      { from: "client-b", to: "web", port: 8080 },
    ]);
  });

  it("allows ingress by namespace selector, and follows a namespace's new labels", async () => {
    await networking.createNamespacedNetworkPolicy({
      namespace: namespaces.a,
      body: {
        metadata: { name: "web-from-team-b" },
        spec: {
          podSelector: { matchLabels: { role: "web" } },
          ingress: [{ _from: [{ namespaceSelector: { matchLabels: { team: "b" } } }] }],
        },
      },
    });
    const labelB = (team: string) =>
      core.patchNamespace({ name: namespaces.b, body: { metadata: { labels: { team } } } }, mergePatch);
    try {
      await expectConnectivity([
        [{ from: "client-b", to: "web", port: 8080 }, true],
        [{ from: "other-b", to: "web", port: 8080 }, true],
        [{ from: "client", to: "web", port: 8080 }, false],
      ]);
      await labelB("c");
      await expectConnectivity([[{ from: "client-b", to: "web", port: 8080 }, false]]);
    } finally {
      await labelB("b");
      await networking.deleteNamespacedNetworkPolicy({ namespace: namespaces.a, name: "web-from-team-b" });
    }
    await expectOpen([{ from: "client", to: "web", port: 8080 }]);
  });

  it("takes pod and namespace selectors in one peer as AND, in two peers as OR", async () => {
    const web = { matchLabels: { role: "web" } };
    const teamB = { matchLabels: { team: "b" } };
    const clients = { matchLabels: { role: "client" } };
    const checks: Check[] = [
      { from: "client-b", to: "web", port: 8080 },
      { from: "other-b", to: "web", port: 8080 },
      { from: "client", to: "web", port: 8080 },
      { from: "other", to: "web", port: 8080 },
    ];
    await withPolicies(
      [
        {
          ns: "a",
          name: "and",
          spec: {
            podSelector: web,
            ingress: [{ _from: [{ namespaceSelector: teamB, podSelector: clients }] }],
          },
        },
      ],
      checks.map((c, i) => [c, i === 0]),
    );
    await withPolicies(
      [
        {
          ns: "a",
          name: "or",
          spec: {
            podSelector: web,
            ingress: [{ _from: [{ namespaceSelector: teamB }, { podSelector: clients }] }],
          },
        },
      ],
      checks.map((c, i) => [c, i < 3]),
    );
  });

  it("allows egress to an ipBlock minus its except", async () => {
    await withPolicies(
      [
        {
          ns: "a",
          name: "pods-but-web",
          spec: {
            podSelector: { matchLabels: { role: "client" } },
            policyTypes: ["Egress"],
            egress: [{ to: [{ ipBlock: { cidr: cluster.podCIDR, except: [`${pods.web?.ip}/32`] } }] }],
          },
        },
      ],
      [
        [{ from: "client", to: "web", port: 8080 }, false],
        [{ from: "client", to: "web-b", port: 8080 }, true],
        [{ from: "client", to: "host", port: 6443 }, true],
        [{ from: "other", to: "web", port: 8080 }, true],
      ],
    );
  });

  it("allows numeric and named ports, and port ranges by endPort", async () => {
    const web = { matchLabels: { role: "web" } };
    const on = (port: number) => ({ from: "client", to: "web", port });
    await withPolicies(
      [
        {
          ns: "a",
          name: "ports",
          spec: { podSelector: web, ingress: [{ ports: [{ port: 8080 }, { port: "metrics" }] }] },
        },
      ],
      [
        [on(8080), true],
        [on(8081), false],
        [on(9090), true],
      ],
    );
    await withPolicies(
      [
        {
          ns: "a",
          name: "range",
          spec: { podSelector: web, ingress: [{ ports: [{ port: 8080, endPort: 8081 }] }] },
        },
      ],
      [
        [on(8080), true],
        [on(8081), true],
        [on(9090), false],
      ],
    );
  });

  it("allows the union of several policies selecting one pod", async () => {
    const web = { matchLabels: { role: "web" } };
    await withPolicies(
      [
        {
          ns: "a",
          name: "clients-http",
          spec: {
            podSelector: web,
            ingress: [
              { _from: [{ podSelector: { matchLabels: { role: "client" } } }], ports: [{ port: 8080 }] },
            ],
          },
        },
        {
          ns: "a",
          name: "others-metrics",
          spec: {
            podSelector: web,
            ingress: [
              { _from: [{ podSelector: { matchLabels: { role: "other" } } }], ports: [{ port: "metrics" }] },
            ],
          },
        },
      ],
      [
        [{ from: "client", to: "web", port: 8080 }, true],
        [{ from: "client", to: "web", port: 9090 }, false],
        [{ from: "other", to: "web", port: 9090 }, true],
        [{ from: "other", to: "web", port: 8080 }, false],
      ],
    );
  });

  it("allows DNS egress (port 53, UDP and TCP) under default-deny egress", async () => {
    await withPolicies(
      [
        {
          ns: "a",
          name: "dns-only",
          spec: {
            podSelector: {},
            policyTypes: ["Egress"],
            egress: [
              {
                to: [{ namespaceSelector: {} }],
                ports: [
                  { protocol: "UDP", port: 53 },
                  { protocol: "TCP", port: 53 },
                ],
              },
            ],
          },
        },
      ],
      [
        [{ from: "client", to: "web-b", port: 53, protocol: "udp" }, true],
        [{ from: "client", to: "web", port: 53, protocol: "udp" }, true],
        [{ from: "client", to: "web-b", port: 5353, protocol: "udp" }, false],
        [{ from: "client", to: "web-b", port: 8080 }, false],
      ],
    );
  });

  it("has a new pod's rules in force before its first process runs", async () => {
    const marked = { "egress-denied": "true" };
    await networking.createNamespacedNetworkPolicy({
      namespace: namespaces.a,
      body: {
        metadata: { name: "deny-marked" },
        spec: { podSelector: { matchLabels: marked }, policyTypes: ["Egress"] },
      },
    });
    const mark = (labels: Record<string, string | null>) =>
      core.patchNamespacedPod(
        { namespace: namespaces.a, name: "other", body: { metadata: { labels } } },
        mergePatch,
      );
    try {
      // Once a marked pod is cut off, the node knows the policy: a new marked pod cannot win a race.
      await mark(marked);
      await expectConnectivity([[{ from: "other", to: "web-b", port: 8080 }, false]]);
      await core.createNamespacedPod({
        namespace: namespaces.a,
        body: {
          metadata: { name: "late", labels: marked },
          spec: {
            restartPolicy: "Never",
            containers: [testbox("connect", "connect", pods["web-b"]?.ip ?? "", "8080")],
          },
        },
      });
      const pod = await waitForTerminal(namespaces.a, "late");
      const log = containerLog(pod, "connect");
      expect(pod.status?.phase, log).toBe("Failed");
      expect(log).toMatch(/^failed ECONNREFUSED/m);
    } finally {
      await mark({ "egress-denied": null });
      await networking.deleteNamespacedNetworkPolicy({ namespace: namespaces.a, name: "deny-marked" });
    }
  });
});
