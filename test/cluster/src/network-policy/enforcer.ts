import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import type { V1Namespace, V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { runCommand } from "../command.ts";
import { HarnessError } from "../errors.ts";
import type { ReflectorHandler } from "../node/reflector.ts";
import {
  type NetworkPolicyPlan,
  networkPolicyRuleset,
  networkPolicyTable,
  planNamespaceFromV1,
  planNetworkPolicies,
  planPodFromV1,
  planSummary,
  podFinished,
} from "./plan.ts";

/**
 * What a pod worker tells the NetworkPolicy enforcement about its pod. The worker owns the pod's
 * address, so the enforcement plans from what the node has given out (not from `status.podIP`, which
 * the API server learns later) and a pod's rules are in force before its first process starts.
 */
export type PodPolicyEnforcement = {
  /**
   * The pod holds `ip` on the bridge: resolves once a ruleset that knows it is in force; rejects with
   * an `unavailable` HarnessError when none could be installed in time (the worker retries).
   */
  podAddressed(uid: string, pod: V1Pod, ip: string): Promise<void>;
  /** A newer version of an addressed pod (its labels or phase may have changed). */
  podChanged(uid: string, pod: V1Pod): void;
  /** The pod's address is about to be given back: forget it. */
  podReleased(uid: string): void;
};

/** What {@link NetworkPolicyEnforcer} needs from its node. */
export type EnforcerOptions = {
  bridgeName: string;
  /** The host's address on the bridge: its connections to pods always pass. */
  bridgeIP: string;
  log: Logger;
  /** Where the ruleset in force is written for people to read (optional). */
  rulesetPath?: string;
  /** Installs a ruleset; default `nft -f -`. */
  install?: (script: string) => Promise<void>;
};

/** The message of the log line of a pass that planned and found the ruleset unchanged. */
export const RULES_UNCHANGED_MESSAGE = "NetworkPolicy rules unchanged";
/** The message of the log line of a pass that installed a new ruleset. */
export const RULES_INSTALLED_MESSAGE = "NetworkPolicy rules installed";

/** Changes arriving within this many milliseconds of each other are planned and installed as one. */
const COALESCE_MS = 10;
/** How long {@link NetworkPolicyEnforcer.podAddressed} waits for a ruleset in force. */
const IN_FORCE_TIMEOUT_MS = 10_000;
/** Back-off after a failed install, doubling up to the cap. */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

type Waiter = { generation: number; resolve: () => void };

/**
 * The applier of the NetworkPolicy planner (plan.ts) in the local node: keeps the node's addressed
 * pods, the cluster's namespaces and NetworkPolicies, and after every change (coalesced) plans again
 * and installs the ruleset with `nft -f -` — skipped when its text did not change, logged (which pods
 * are isolated, by which policies, allowing what) when it did. A failed install is retried with
 * back-off; pods waiting in {@link podAddressed} keep waiting, so none starts unprotected. Until both
 * NetworkPolicies and namespaces have been listed once, nothing is installed and no pod starts.
 */
export class NetworkPolicyEnforcer implements PodPolicyEnforcement {
  private readonly options: EnforcerOptions;
  private readonly install: (script: string) => Promise<void>;
  private readonly policies = new Map<string, V1NetworkPolicy>();
  private readonly namespaces = new Map<string, V1Namespace>();
  private readonly pods = new Map<string, { pod: V1Pod; ip: string }>();
  private policiesSynced = false;
  private namespacesSynced = false;
  private generation = 0;
  private inForce = 0;
  private waiters: Waiter[] = [];
  private installed: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private failures = 0;
  private lastError: string | undefined;
  private stopped = false;

  constructor(options: EnforcerOptions) {
    this.options = options;
    this.install =
      options.install ??
      (async (script) => {
        await runCommand("nft", ["-f", "-"], { input: script, timeoutMs: 10_000 });
      });
  }

  /** Follows NetworkPolicies (all namespaces). */
  readonly policyHandler: ReflectorHandler<V1NetworkPolicy> = {
    upsert: (policy) => this.change(() => this.policies.set(policy.metadata?.uid ?? "", policy)),
    remove: (uid) => this.change(() => this.policies.delete(uid)),
    synced: () => this.change(() => (this.policiesSynced = true)),
  };

  /** Follows namespaces (their labels are what namespace selectors match). */
  readonly namespaceHandler: ReflectorHandler<V1Namespace> = {
    upsert: (namespace) => this.change(() => this.namespaces.set(namespace.metadata?.uid ?? "", namespace)),
    remove: (uid) => this.change(() => this.namespaces.delete(uid)),
    synced: () => this.change(() => (this.namespacesSynced = true)),
  };

  /** See {@link PodPolicyEnforcement.podAddressed}. */
  podAddressed(uid: string, pod: V1Pod, ip: string): Promise<void> {
    this.change(() => this.pods.set(uid, { pod, ip }));
    const generation = this.generation;
    if (this.inForce >= generation) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        const why = this.lastError ?? (this.synced() ? "still installing" : "NetworkPolicies not listed yet");
        reject(new HarnessError("unavailable", `NetworkPolicy rules for the pod are not in force: ${why}`));
      }, IN_FORCE_TIMEOUT_MS);
      const waiter: Waiter = {
        generation,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** See {@link PodPolicyEnforcement.podChanged}. */
  podChanged(uid: string, pod: V1Pod): void {
    const known = this.pods.get(uid);
    if (!known) return;
    // Most updates are the node's own status writes: only labels and whether the pod has finished
    // matter to a plan (Pending → Running changes nothing, so it is not planned again).
    const before = planPodFromV1(known.pod, known.ip);
    const after = planPodFromV1(pod, known.ip);
    known.pod = pod;
    if (
      podFinished(before.phase) === podFinished(after.phase) &&
      isDeepStrictEqual(before.labels, after.labels)
    ) {
      return;
    }
    this.change(() => undefined);
  }

  /** See {@link PodPolicyEnforcement.podReleased}. */
  podReleased(uid: string): void {
    if (this.pods.has(uid)) this.change(() => this.pods.delete(uid));
  }

  /** Stops installing and removes the table (the node is stopping; its pods are gone). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await removeNetworkPolicyTable(this.options.bridgeName);
  }

  /** The plan of the current state (for tests and logs). */
  plan(): NetworkPolicyPlan {
    return planNetworkPolicies({
      bridgeName: this.options.bridgeName,
      hostIPs: [this.options.bridgeIP],
      pods: [...this.pods.values()].map(({ pod, ip }) => planPodFromV1(pod, ip)),
      namespaces: [...this.namespaces.values()].map(planNamespaceFromV1),
      policies: [...this.policies.values()],
    });
  }

  private synced(): boolean {
    return this.policiesSynced && this.namespacesSynced;
  }

  private change(apply: () => unknown): void {
    apply();
    this.generation++;
    this.schedule(COALESCE_MS);
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.running || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.reconcile();
    }, delayMs);
  }

  /** Plans and installs until what is in force is the latest state. */
  private async reconcile(): Promise<void> {
    this.running = true;
    try {
      while (this.synced() && this.inForce < this.generation && !this.stopped) {
        const generation = this.generation;
        const planStarted = performance.now();
        const plan = this.plan();
        const script = networkPolicyRuleset(plan);
        // Planning runs on the node's event loop: every pod worker waits while it does.
        const planMs = Math.round(performance.now() - planStarted);
        const waiting = this.waiters.length;
        if (script === this.installed) {
          this.options.log.info({ planMs, pods: plan.pods.length, waiting }, RULES_UNCHANGED_MESSAGE);
        } else {
          const started = performance.now();
          try {
            await this.install(script);
          } catch (err) {
            this.failures++;
            this.lastError = err instanceof Error ? err.message : String(err);
            const backoffMs = Math.min(RETRY_MIN_MS * 2 ** (this.failures - 1), RETRY_MAX_MS);
            this.options.log.error(
              { err, backoffMs },
              "NetworkPolicy rules could not be installed; retrying",
            );
            this.running = false;
            this.schedule(backoffMs);
            return;
          }
          this.installed = script;
          this.failures = 0;
          this.lastError = undefined;
          if (this.options.rulesetPath) writeFileSync(this.options.rulesetPath, script);
          this.options.log.info(
            {
              table: networkPolicyTable(plan.bridgeName),
              ms: Math.round(performance.now() - started),
              planMs,
              pods: plan.pods.length,
              waiting,
              rules: planSummary(plan),
              ignored: plan.ignoredPods.map((p) => `${p.namespace}/${p.name}: ${p.reason}`),
            },
            RULES_INSTALLED_MESSAGE,
          );
        }
        this.inForce = generation;
        const ready = this.waiters.filter((w) => w.generation <= generation);
        this.waiters = this.waiters.filter((w) => w.generation > generation);
        for (const waiter of ready) waiter.resolve();
      }
    } finally {
      this.running = false;
    }
  }
}

const BRIDGE_NETFILTER = [
  "/proc/sys/net/bridge/bridge-nf-call-iptables",
  "/proc/sys/net/bridge/bridge-nf-call-ip6tables",
];

/**
 * Makes traffic bridged between pods pass the inet forward hook, where the NetworkPolicy table filters
 * it (`net.bridge.bridge-nf-call-iptables` and `…-ip6tables` = 1; a host-wide setting). Throws an
 * `unavailable` HarnessError naming the fix when the kernel's `br_netfilter` module is not loaded.
 */
export function ensureBridgeNetfilter(): void {
  for (const path of BRIDGE_NETFILTER) {
    if (!existsSync(path)) {
      throw new HarnessError(
        "unavailable",
        `${path} does not exist: load the kernel module br_netfilter (modprobe br_netfilter) so the local node can enforce NetworkPolicy`,
      );
    }
    if (readFileSync(path, "utf8").trim() !== "1") writeFileSync(path, "1\n");
  }
}

/** Removes the NetworkPolicy table of `bridgeName`; a missing table is fine. */
export async function removeNetworkPolicyTable(bridgeName: string): Promise<void> {
  await runCommand("nft", ["delete", "table", "inet", networkPolicyTable(bridgeName)]).catch(() => undefined);
}
