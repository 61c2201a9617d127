/**
 * The counting write provider of Core's e2e tests (`gatehouse/provider-counter:dev`,
 * test/cluster/images/provider-counter.ts) deployed as a Shared ProviderInstance with its
 * Capabilities, and its ledger — the business system's own record of every effect it committed and
 * every invoke it saw, read straight from the provider pod's observer port (8081), never through
 * Gatehouse — so a test can prove "at most one effect per action" from the business side.
 */
import type { Environment } from "./environment.ts";
import { eventually } from "./story.ts";

/**
 * One capability the counter offers (its COUNTER_CAPABILITIES entry; the provider defaults idempotency
 * to `key` and behaviour to `ok`).
 */
export interface CounterOffer {
  id: string;
  effect: "read" | "draft" | "write";
  idempotency?: "none" | "key";
  behaviour?: "ok" | "forbidden" | "drop";
  /** Declares target kind `plan`, read from the arguments `planId` and `version`. */
  target?: boolean;
  delayMs?: number;
}

/** `spec.policy` of a Capability (api/capability.ts). */
export interface CapabilityPolicy {
  approval?: "Auto" | "Required" | "Forbidden";
  ttlSeconds?: number;
  subjects?: { users?: string[]; groups?: string[] };
  /** Who may approve besides the requester. */
  approvers?: { users?: string[]; groups?: string[] };
}

/** A committed effect, as the counter's ledger lists it. */
export interface LedgerEffect {
  capability: string;
  idempotencyKey: string;
  executionId: string;
  arguments: Record<string, unknown>;
  account: string | null;
}

/** An invoke the counter's handlers saw (committed or not). */
export interface LedgerCall {
  capability: string;
  idempotencyKey: string;
  executionId: string;
}

/** The ledger from a mark on: what was appended since, of every capability, in order. */
export interface LedgerMark {
  effects(): Promise<LedgerEffect[]>;
  calls(): Promise<LedgerCall[]>;
}

/** The counter's ledger on its observer port. */
export interface Ledger {
  /** Committed effects of capability `id`, in order. */
  effects(id: string): Promise<LedgerEffect[]>;
  /** Invokes of capability `id` that reached a handler, in order. */
  calls(id: string): Promise<LedgerCall[]>;
  /** The plan's current version in the business system. */
  planVersion(planId: string): Promise<number>;
  /** Another writer moves the plan on by one version; returns the new version. */
  bump(planId: string): Promise<number>;
  /** Remembers the ledger's current length; the mark reads only what came after. */
  mark(): Promise<LedgerMark>;
}

/** The Capability object name for capability id `id` (dots become hyphens). */
export function capabilityName(id: string): string {
  return id.replaceAll(".", "-");
}

/** The model-facing tool name of capability id `id` (DESIGN §2: `.` → `_`). */
export function toolName(id: string): string {
  return id.replaceAll(".", "_");
}

/**
 * Applies ProviderInstance `name` running the counter with `offers` in `namespace`, and one
 * Capability per offer (policy from `policies`, by id; none = core/policy.ts defaults, a write is
 * Required), with more `config` variables (e.g. COUNTER_REQUIRES_IDENTITY); waits until the provider
 * and every Capability are Ready (reason Offered) and the ledger answers. Returns the ledger.
 */
export async function deployCounter(
  env: Environment,
  namespace: string,
  name: string,
  offers: CounterOffer[],
  policies: Record<string, CapabilityPolicy> = {},
  config: Record<string, string> = {},
): Promise<Ledger> {
  const items = [
    {
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "ProviderInstance",
      metadata: { name, namespace },
      spec: {
        type: "counter",
        image: "gatehouse/provider-counter:dev",
        config: { COUNTER_CAPABILITIES: JSON.stringify(offers), ...config },
      },
    },
    ...offers.map((offer) => ({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "Capability",
      metadata: { name: capabilityName(offer.id), namespace },
      spec: {
        id: offer.id,
        providerRef: { name },
        ...(policies[offer.id] ? { policy: policies[offer.id] } : {}),
      },
    })),
  ];
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items }),
  );
  await env.kubectl.ok("admin", [
    "wait",
    "-n",
    namespace,
    "--for=condition=Ready",
    "--timeout=180s",
    `providerinstance/${name}`,
  ]);
  await env.kubectl.ok("admin", [
    "wait",
    "-n",
    namespace,
    "--for=condition=Ready",
    "--timeout=120s",
    ...offers.map((o) => `capability/${capabilityName(o.id)}`),
  ]);
  const endpoint = await eventually(`the endpoint of ProviderInstance ${name}`, 60_000, async () => {
    const provider = await env.kubectl.json<{ status?: { endpoints?: string[] } }>("admin", [
      "get",
      "providerinstance",
      name,
      "-n",
      namespace,
    ]);
    return provider.status?.endpoints?.[0];
  });
  const observer = `http://${new URL(endpoint).hostname}:8081`;
  await eventually(`the ledger of ${name}`, 60_000, async () =>
    (await fetch(`${observer}/effects`).catch(() => undefined))?.ok ? true : undefined,
  );
  return ledgerAt(observer);
}

/** The ledger served at `base` (the provider pod's observer). */
export function ledgerAt(base: string): Ledger {
  const get = async <T>(path: string, init?: RequestInit): Promise<T> => {
    const response = await fetch(`${base}${path}`, init);
    if (!response.ok) throw new Error(`${init?.method ?? "GET"} ${base}${path} answered ${response.status}`);
    return (await response.json()) as T;
  };
  const effects = () => get<LedgerEffect[]>("/effects");
  const calls = () => get<LedgerCall[]>("/calls");
  return {
    effects: async (id) => (await effects()).filter((e) => e.capability === id),
    calls: async (id) => (await calls()).filter((c) => c.capability === id),
    planVersion: async (planId) =>
      (await get<{ version: number }>(`/plans/${encodeURIComponent(planId)}`)).version,
    bump: async (planId) =>
      (await get<{ version: number }>(`/plans/${encodeURIComponent(planId)}/bump`, { method: "POST" }))
        .version,
    async mark() {
      const [effectCount, callCount] = [(await effects()).length, (await calls()).length];
      return {
        effects: async () => (await effects()).slice(effectCount),
        calls: async () => (await calls()).slice(callCount),
      };
    },
  };
}
