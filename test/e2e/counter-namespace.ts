/**
 * A session namespace served by the counting write provider (`gatehouse/provider-counter:dev`,
 * test/cluster/images/provider-counter.ts): alice holds the session-user and approver personas there
 * (as examples/plant-a/rbac.yaml grants them), a Shared ProviderInstance `counter` declares the
 * capabilities it is given, and one Capability per capability exposes it. The provider's ledger (its
 * own record of every effect it committed and every invoke it saw) is read straight from the provider
 * pod's observer port, so a test can prove "at most one effect per action" from the business side.
 */
import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import type { Environment } from "./environment.ts";
import { eventually } from "./story.ts";

/** One capability the counter declares (its COUNTER_CAPABILITIES entry) and the Capability exposing it. */
export interface CounterOffer {
  id: string;
  effect: "read" | "draft" | "write";
  /** `target: true` declares a plan target and requires `planId` and `version` in the arguments. */
  target?: boolean;
}

/** An effect the counter committed. */
export interface LedgerEffect {
  capability: string;
  idempotencyKey: string;
  executionId: string;
  arguments: Record<string, unknown>;
}

/** An invoke the counter's handlers saw (committed or not). */
export interface LedgerCall {
  capability: string;
  idempotencyKey: string;
  executionId: string;
}

/** The provider's ledger from a mark on: what was appended since. */
export interface LedgerMark {
  effects(): Promise<LedgerEffect[]>;
  calls(): Promise<LedgerCall[]>;
}

/** The namespace and its provider's ledger. */
export interface CounterNamespace {
  namespace: string;
  /** The Capability object name of a capability id (`ct.order.place` → `ct-order-place`). */
  capabilityName(id: string): string;
  /** Everything the provider committed so far, in order. */
  effects(): Promise<LedgerEffect[]>;
  /** Every invoke the provider saw so far, in order. */
  calls(): Promise<LedgerCall[]>;
  /** Remembers the ledger's current length; the mark reads only what came after. */
  mark(): Promise<LedgerMark>;
}

async function ledgerUrl(env: Environment, namespace: string): Promise<string> {
  return eventually("the counter provider's ready pod", 180_000, async () => {
    const pods = await env.kubectl.json<{ items: V1Pod[] }>("admin", [
      "get",
      "pods",
      "-n",
      namespace,
      "-l",
      "gatehouse.dev/provider=counter",
    ]);
    const ready = pods.items.filter(
      (p) =>
        !p.metadata?.deletionTimestamp &&
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
    return ready.length === 1 && ready[0]?.status?.podIP ? `http://${ready[0].status.podIP}:8081` : undefined;
  });
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/**
 * Creates the namespace with alice's RoleBindings, the counter provider declaring `offers` (write
 * capabilities approval Required by default, approver: the requester) and one Capability per offer;
 * waits until every Capability is Ready (reason Offered).
 */
export async function counterNamespace(
  env: Environment,
  prefix: string,
  offers: CounterOffer[],
): Promise<CounterNamespace> {
  const namespace = `${prefix}-${randomBytes(3).toString("hex")}`;
  const capabilityName = (id: string) => id.replaceAll(".", "-");
  const binding = (name: string, role: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name, namespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
  });
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
        binding("session-users", "gatehouse-session-user"),
        binding("approvers", "gatehouse-approver"),
        {
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "ProviderInstance",
          metadata: { name: "counter", namespace },
          spec: {
            type: "counter",
            image: "gatehouse/provider-counter:dev",
            config: {
              COUNTER_CAPABILITIES: JSON.stringify(
                offers.map((o) => ({ id: o.id, effect: o.effect, target: o.target ?? false })),
              ),
            },
          },
        },
        ...offers.map((o) => ({
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "Capability",
          metadata: { name: capabilityName(o.id), namespace },
          spec: { id: o.id, providerRef: { name: "counter" } },
        })),
      ],
    }),
  );
  for (const offer of offers) {
    await eventually(`Capability ${capabilityName(offer.id)} Offered`, 180_000, async () => {
      const c = await env.kubectl.json<{
        status?: { conditions?: Array<{ type: string; status: string; reason: string }> };
      }>("admin", ["get", "capability", capabilityName(offer.id), "-n", namespace]);
      return c.status?.conditions?.some(
        (x) => x.type === "Ready" && x.status === "True" && x.reason === "Offered",
      )
        ? true
        : undefined;
    });
  }
  const base = await ledgerUrl(env, namespace);
  const effects = () => getJson<LedgerEffect[]>(`${base}/effects`);
  const calls = () => getJson<LedgerCall[]>(`${base}/calls`);
  return {
    namespace,
    capabilityName,
    effects,
    calls,
    async mark() {
      const [effectCount, callCount] = [(await effects()).length, (await calls()).length];
      return {
        effects: async () => (await effects()).slice(effectCount),
        calls: async () => (await calls()).slice(callCount),
      };
    },
  };
}
