import type { V1Namespace, V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NetworkPolicyEnforcer } from "./enforcer.ts";

const log = pino({ level: "silent" });

function pod(name: string, labels: Record<string, string> = {}, phase?: string): V1Pod {
  return {
    metadata: { namespace: "shop", name, uid: `uid-${name}`, labels },
    spec: { containers: [] },
    ...(phase ? { status: { phase } } : {}),
  };
}

const SHOP: V1Namespace = { metadata: { name: "shop", uid: "ns-shop", labels: { team: "shop" } } };
const DENY_ALL: V1NetworkPolicy = {
  metadata: { namespace: "shop", name: "deny-all", uid: "np-deny" },
  spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] },
};

/** An enforcer whose installs are recorded (and fail while `failing` is set). */
function setup() {
  const installs: string[] = [];
  const state = { failing: false };
  const enforcer = new NetworkPolicyEnforcer({
    bridgeName: "ghbr9",
    bridgeIP: "10.88.36.1",
    log,
    install: async (script) => {
      if (state.failing) throw new Error("nft: Operation not permitted");
      installs.push(script);
    },
  });
  const sync = () => {
    enforcer.namespaceHandler.upsert(SHOP);
    enforcer.namespaceHandler.synced?.();
    enforcer.policyHandler.synced?.();
  };
  return { enforcer, installs, state, sync };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("NetworkPolicyEnforcer", () => {
  it("holds a pod back until NetworkPolicies and namespaces have been listed, then installs once for the burst", async () => {
    const { enforcer, installs, sync } = setup();
    let started = false;
    const addressed = enforcer.podAddressed("uid-a", pod("a"), "10.88.36.2").then(() => {
      started = true;
    });
    enforcer.policyHandler.upsert(DENY_ALL);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(false);
    expect(installs).toEqual([]);
    sync();
    await addressed;
    expect(installs).toHaveLength(1);
    expect(installs[0]).toContain("10.88.36.2");
    expect(enforcer.plan().pods[0]?.egress?.policies).toEqual(["shop/deny-all"]);
  });

  it("skips a ruleset whose text did not change and installs again when a pod's labels change what applies", async () => {
    const { enforcer, installs, sync } = setup();
    sync();
    enforcer.policyHandler.upsert({
      ...DENY_ALL,
      spec: { podSelector: { matchLabels: { locked: "yes" } }, policyTypes: ["Ingress"] },
    });
    await enforcer.podAddressed("uid-a", pod("a"), "10.88.36.2");
    expect(installs).toHaveLength(1);
    // Neither a namespace sent again nor a pod no policy selects changes the text: nothing is installed.
    enforcer.namespaceHandler.upsert(SHOP);
    await enforcer.podAddressed("uid-b", pod("b"), "10.88.36.3");
    expect(installs).toHaveLength(1);
    enforcer.podChanged("uid-a", pod("a", { locked: "yes" }));
    await vi.waitFor(() => expect(installs).toHaveLength(2));
    expect(installs.at(-1)).toMatch(/ingress_isolated[\s\S]*10\.88\.36\.2/);
  });

  it("plans again when a pod finishes, not when it starts running (its phase changes nothing else)", async () => {
    vi.useFakeTimers();
    const { enforcer, installs, sync } = setup();
    const planned = vi.spyOn(enforcer, "plan");
    sync();
    enforcer.policyHandler.upsert(DENY_ALL);
    const addressed = enforcer.podAddressed("uid-a", pod("a", {}, "Pending"), "10.88.36.2");
    await vi.advanceTimersByTimeAsync(100);
    await addressed;
    const plans = planned.mock.calls.length;
    enforcer.podChanged("uid-a", pod("a", {}, "Running"));
    await vi.advanceTimersByTimeAsync(100);
    expect(planned.mock.calls.length).toBe(plans);
    enforcer.podChanged("uid-a", pod("a", {}, "Succeeded"));
    await vi.advanceTimersByTimeAsync(100);
    expect(planned.mock.calls.length).toBe(plans + 1);
    expect(installs.at(-1)).not.toContain("10.88.36.2");
  });

  it("forgets a released pod, so its address carries no rules for the next pod", async () => {
    const { enforcer, installs, sync } = setup();
    sync();
    enforcer.policyHandler.upsert(DENY_ALL);
    await enforcer.podAddressed("uid-a", pod("a"), "10.88.36.2");
    enforcer.podReleased("uid-a");
    await vi.waitFor(() => expect(installs.at(-1)).not.toContain("10.88.36.2"));
    expect(enforcer.plan().pods).toEqual([]);
  });

  it("keeps a pod waiting while installs fail, tells it why after the bound, and retries until one succeeds", async () => {
    vi.useFakeTimers();
    const { enforcer, installs, state, sync } = setup();
    state.failing = true;
    sync();
    const addressed = enforcer.podAddressed("uid-a", pod("a"), "10.88.36.2");
    const outcome = addressed.then(
      () => "in force",
      (err: Error) => err.message,
    );
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await outcome).toBe(
      "NetworkPolicy rules for the pod are not in force: nft: Operation not permitted",
    );
    expect(installs).toEqual([]);
    state.failing = false;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(installs).toHaveLength(1);
    const again = enforcer.podAddressed("uid-a", pod("a"), "10.88.36.2");
    await vi.advanceTimersByTimeAsync(100);
    await expect(again).resolves.toBeUndefined();
  });
});
