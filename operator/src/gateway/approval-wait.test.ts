import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import { Informer } from "../kube/runtime/informer.ts";
import { APPROVAL_ARRIVAL_MS, APPROVAL_CHECK_MS, waitForApproval } from "./approval-wait.ts";

type Cached = Approval & KubernetesObject;

const session = {
  metadata: { name: "replan", namespace: "plant-a", uid: "session-uid" },
  spec: {},
} as unknown as AgentSession;

function approval(name: string, phase?: string, sessionUid = "session-uid", resourceVersion = "1"): Cached {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: { name, namespace: "plant-a", uid: `${name}-uid`, resourceVersion },
    spec: { sessionRef: { name: "replan", uid: sessionUid } },
    ...(phase ? { status: { phase } } : {}),
  } as unknown as Cached;
}

/** The gateway's Approval cache, never started: objects arrive through the watch path's own entry point. */
function approvals() {
  return new Informer<Cached>(new KubeConfig(), {
    path: "/apis/gatehouse.dev/v1alpha1/approvals",
    log: pino({ level: "silent" }),
    resyncMs: 0,
  });
}

function wait(cache: Informer<Cached>, overrides: { signal?: AbortSignal; stopping?: () => boolean } = {}) {
  return waitForApproval({ approvals: cache } as unknown as Caches, {
    name: "apr-1",
    session,
    timeoutMs: 600_000,
    signal: overrides.signal ?? new AbortController().signal,
    stopping: overrides.stopping ?? (() => false),
  });
}

/** Lets promise callbacks run, with every timer frozen. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("waitForApproval", () => {
  beforeEach(() => {
    // Timers (and Date) stand still unless a test moves them: what resolves did so on an event.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers on the update event that settles the Approval, with no timer having fired", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1"));
    let answered: Approval | undefined;
    const waiting = wait(cache).then((a) => {
      answered = a;
    });
    await settle();
    expect(answered).toBeUndefined();
    cache.apply("MODIFIED", approval("apr-1", ApprovalPhase.Rejected, "session-uid", "2"));
    await waiting;
    expect(answered?.status?.phase).toBe(ApprovalPhase.Rejected);
  });

  it("answers once the Approval created a moment ago arrives in the cache already settled", async () => {
    const cache = approvals();
    const waiting = wait(cache);
    await settle();
    cache.apply("ADDED", approval("apr-1", ApprovalPhase.Rejected));
    expect((await waiting).status?.phase).toBe(ApprovalPhase.Rejected);
  });

  it("keeps waiting through changes that do not settle it or that are another Approval's", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1"));
    let answered = false;
    const waiting = wait(cache).then(() => {
      answered = true;
    });
    cache.apply("ADDED", approval("apr-2", ApprovalPhase.Rejected));
    cache.apply("MODIFIED", approval("apr-1", ApprovalPhase.Approved, "session-uid", "2"));
    await settle();
    expect(answered).toBe(false);
    cache.apply("MODIFIED", approval("apr-1", ApprovalPhase.Failed, "session-uid", "3"));
    await waiting;
    expect(answered).toBe(true);
  });

  it("ends unsettled at its deadline", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1"));
    const waiting = wait(cache);
    await vi.advanceTimersByTimeAsync(600_000);
    expect((await waiting).status?.phase).toBeUndefined();
  });

  it("ends at once, unsettled, when the client goes away", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1"));
    const client = new AbortController();
    const waiting = wait(cache, { signal: client.signal });
    await settle();
    client.abort();
    expect((await waiting).metadata.name).toBe("apr-1");
  });

  it("ends unsettled within one check once the replica begins to stop", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1"));
    let stopping = false;
    let answered = false;
    const waiting = wait(cache, { stopping: () => stopping }).then(() => {
      answered = true;
    });
    await settle();
    stopping = true;
    await vi.advanceTimersByTimeAsync(APPROVAL_CHECK_MS);
    await waiting;
    expect(answered).toBe(true);
  });

  it("refuses another session's Approval once the arrival window has passed", async () => {
    const cache = approvals();
    cache.apply("ADDED", approval("apr-1", undefined, "someone-else"));
    const waiting = wait(cache);
    const refused = expect(waiting).rejects.toMatchObject({ kind: "not_found" });
    await vi.advanceTimersByTimeAsync(APPROVAL_ARRIVAL_MS);
    await refused;
  });
});
