import { KubeConfig, type KubernetesObject, type V1Pod } from "@kubernetes/client-node";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AgentSession } from "../api/kinds.ts";
import { AGENT_SERVICE_ACCOUNT, GATEHOUSE_AUDIENCE } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { GATEHOUSE_INDEXERS } from "../kube/cache-indexes.ts";
import type { Indexers } from "../kube/runtime/indexer.ts";
import { Informer } from "../kube/runtime/informer.ts";
import {
  ACCEPTED_TOKEN_CACHE_MS,
  REFUSED_TOKEN_CACHE_MS,
  SESSION_ARRIVAL_MS,
  sessionOfPod,
  type TokenReviewerOptions,
  tokenReviewer,
} from "./authenticate.ts";

/** The TokenReview status the API server gives a pod-bound token of `account` in `ns`. */
function podTokenStatus(account = AGENT_SERVICE_ACCOUNT, ns = "team-a") {
  return {
    authenticated: true,
    audiences: [GATEHOUSE_AUDIENCE],
    user: {
      username: `system:serviceaccount:${ns}:${account}`,
      extra: {
        "authentication.kubernetes.io/pod-uid": ["uid-1"],
        "authentication.kubernetes.io/pod-name": ["agent-1"],
      },
    },
  };
}

/**
 * A reviewer over a counting stand-in for the API server's TokenReview: tokens starting `good` are
 * the agent's pod-bound tokens, `other-sa` another ServiceAccount's, `down` fails to be answered,
 * anything else is not authenticated. A manual clock.
 */
function setup(options: Omit<TokenReviewerOptions, "now"> = {}) {
  const clock = { ms: 1_000_000 };
  const reviews: string[] = [];
  const clients = {
    authentication: {
      async createTokenReview({ body }: { body: { spec: { token: string } } }) {
        const token = body.spec.token;
        reviews.push(token);
        if (token.startsWith("down")) throw new Error("connect ECONNREFUSED");
        if (token.startsWith("good")) return { status: podTokenStatus() };
        if (token.startsWith("other-sa")) return { status: podTokenStatus("default") };
        return { status: { authenticated: false, error: "invalid bearer token" } };
      },
    },
  } as unknown as Parameters<typeof tokenReviewer>[0];
  const review = tokenReviewer(clients, { ...options, now: () => clock.ms });
  return { clock, reviews, review };
}

async function refusal(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  return error as GatehouseError;
}

describe("tokenReviewer's verdict caches", () => {
  it("reuses an accepted token's identity for 10 s, then reviews it again", async () => {
    const { clock, reviews, review } = setup();
    const identity = { namespace: "team-a", podName: "agent-1", podUID: "uid-1" };
    expect(await review("good-1")).toEqual(identity);
    clock.ms += ACCEPTED_TOKEN_CACHE_MS;
    expect(await review("good-1")).toEqual(identity);
    expect(reviews).toEqual(["good-1"]);
    clock.ms += 1;
    expect(await review("good-1")).toEqual(identity);
    expect(reviews).toEqual(["good-1", "good-1"]);
  });

  it("refuses a repeated garbage token for 5 s without another TokenReview, then reviews it again", async () => {
    const { clock, reviews, review } = setup();
    const first = await refusal(review("garbage"));
    expect(first.kind).toBe("forbidden");
    expect(first.message).toMatch(/Token not accepted.*invalid bearer token/);
    for (let i = 0; i < 50; i++) {
      const again = await refusal(review("garbage"));
      expect(again.kind).toBe("forbidden");
      expect(again.message).toBe(first.message);
    }
    clock.ms += REFUSED_TOKEN_CACHE_MS;
    await refusal(review("garbage"));
    expect(reviews).toEqual(["garbage"]);
    clock.ms += 1;
    await refusal(review("garbage"));
    expect(reviews).toEqual(["garbage", "garbage"]);
  });

  it("caches the refusal of another ServiceAccount's token too", async () => {
    const { reviews, review } = setup();
    for (let i = 0; i < 3; i++) {
      expect((await refusal(review("other-sa-token"))).message).toMatch(/Only the gatehouse-agent/);
    }
    expect(reviews).toEqual(["other-sa-token"]);
  });

  it("never caches the API server's failure to answer", async () => {
    const { reviews, review } = setup();
    for (let i = 0; i < 3; i++) {
      const error = await review("down-token").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as Error).message).toMatch(/ECONNREFUSED/);
    }
    expect(reviews).toEqual(["down-token", "down-token", "down-token"]);
  });

  it("holds at most maxEntries refusals: a flood of distinct garbage evicts the oldest, not the pods' acceptances", async () => {
    const { reviews, review } = setup({ maxEntries: 100 });
    await review("good-pod");
    await refusal(review("garbage-first"));
    for (let i = 0; i < 1_000; i++) await refusal(review(`garbage-${i}`));
    expect(reviews).toHaveLength(1_002);
    // The flood pushed the first refusal out of its bounded cache: it costs a review again…
    await refusal(review("garbage-first"));
    expect(reviews).toHaveLength(1_003);
    // …the latest ones are still held…
    await refusal(review("garbage-999"));
    expect(reviews).toHaveLength(1_003);
    // …and the pod's acceptance, in its own cache, is untouched.
    await review("good-pod");
    expect(reviews).toHaveLength(1_003);
  });
});

type CachedSession = AgentSession & KubernetesObject;
type CachedPod = V1Pod & KubernetesObject;

/** Session `name` of `namespace` (uid `<name>-uid`), Running on the pod of `podUID` once it records one. */
function session(name: string, podUID?: string, namespace = "team-a"): CachedSession {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: { name, namespace, uid: `${name}-uid`, resourceVersion: podUID ? "2" : "1" },
    spec: {},
    status: podUID ? { phase: "Running", podName: `${name}-agent-1`, podUID } : { phase: "Pending" },
  } as unknown as CachedSession;
}

/** Agent pod `name` of `namespace` with `uid`, controlled by session `owner` (name and uid) when given. */
function pod(name: string, uid: string, owner?: string, namespace = "team-a"): CachedPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      uid,
      resourceVersion: "1",
      ...(owner
        ? {
            ownerReferences: [
              {
                apiVersion: "gatehouse.dev/v1alpha1",
                kind: "AgentSession",
                name: owner,
                uid: `${owner}-uid`,
                controller: true,
              },
            ],
          }
        : {}),
    },
  } as CachedPod;
}

/**
 * The gateway's session and pod caches, never started: objects arrive through the watch path's own
 * entry point. `lookups` counts the reads of the session index sessionOfPod makes, one per look.
 */
function bindingCaches() {
  const informer = <T extends KubernetesObject>(path: string, indexers: Indexers<T>) =>
    new Informer<T>(new KubeConfig(), { path, log: pino({ level: "silent" }), resyncMs: 0, indexers });
  const sessions = informer<CachedSession>(
    "/apis/gatehouse.dev/v1alpha1/agentsessions",
    GATEHOUSE_INDEXERS.sessions,
  );
  const pods = informer<CachedPod>("/api/v1/pods", GATEHOUSE_INDEXERS.pods as Indexers<CachedPod>);
  const counted = { lookups: 0 };
  const byIndex = sessions.byIndex.bind(sessions);
  sessions.byIndex = (name, value) => {
    counted.lookups++;
    return byIndex(name, value);
  };
  return { sessions, pods, counted, caches: { sessions, pods } };
}

/** The token's identity of pod `agent-1` (uid `pod-uid`) in team-a. */
const IDENTITY = { namespace: "team-a", podName: "agent-1", podUID: "pod-uid" };

/** Lets promise callbacks run, with every timer frozen. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("sessionOfPod: a new pod's token waiting for its session", () => {
  beforeEach(() => {
    // Timers (and Date) stand still unless a test moves them: what resolves did so on an event.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("binds at once when the cache already has the pod and its session, without subscribing", async () => {
    const { sessions, pods, counted, caches } = bindingCaches();
    pods.apply("ADDED", pod("agent-1", "pod-uid", "plan"));
    sessions.apply("ADDED", session("plan", "pod-uid"));
    const subscribe = vi.spyOn(sessions, "onChange");
    expect((await sessionOfPod(caches, IDENTITY)).metadata.uid).toBe("plan-uid");
    expect(counted.lookups).toBe(1);
    expect(subscribe).not.toHaveBeenCalled();
  });

  it("answers on the session's update that records the pod, with no timer having fired and one look per event", async () => {
    const { sessions, pods, counted, caches } = bindingCaches();
    pods.apply("ADDED", pod("agent-1", "pod-uid", "plan"));
    sessions.apply("ADDED", session("plan"));
    let bound: AgentSession | undefined;
    const waiting = sessionOfPod(caches, IDENTITY).then((s) => {
      bound = s;
    });
    await settle();
    // The first look, and the look after subscribing; then it sleeps until an event.
    expect(counted.lookups).toBe(2);
    expect(bound).toBeUndefined();
    sessions.apply("MODIFIED", session("plan", "pod-uid"));
    await waiting;
    expect(bound?.metadata.uid).toBe("plan-uid");
    expect(counted.lookups).toBe(3);
  });

  it("answers on the pod's arrival when the session recorded it first", async () => {
    const { sessions, pods, caches } = bindingCaches();
    sessions.apply("ADDED", session("plan", "pod-uid"));
    const waiting = sessionOfPod(caches, IDENTITY);
    await settle();
    pods.apply("ADDED", pod("agent-1", "pod-uid", "plan"));
    expect((await waiting).metadata.uid).toBe("plan-uid");
  });

  it("is not woken by other sessions' and pods' changes, and ends at the deadline with the same refusal", async () => {
    const { sessions, pods, counted, caches } = bindingCaches();
    pods.apply("ADDED", pod("agent-1", "pod-uid", "plan"));
    sessions.apply("ADDED", session("plan"));
    const waiting = sessionOfPod(caches, IDENTITY);
    const refused = expect(waiting).rejects.toMatchObject({
      kind: "unavailable",
      message: "AgentSession plan has not recorded this pod as its pod yet; retry shortly.",
    });
    await settle();
    expect(counted.lookups).toBe(2);
    sessions.apply("ADDED", session("other", "other-pod-uid"));
    pods.apply("ADDED", pod("agent-2", "other-pod-uid", "other"));
    await settle();
    expect(counted.lookups).toBe(2);
    await vi.advanceTimersByTimeAsync(SESSION_ARRIVAL_MS - 1);
    expect(counted.lookups).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    await refused;
    expect(counted.lookups).toBe(3);
  });

  it("refuses a pod no session ever records, once the deadline passes", async () => {
    const { pods, caches } = bindingCaches();
    pods.apply("ADDED", pod("agent-1", "pod-uid"));
    const waiting = sessionOfPod(caches, IDENTITY);
    const refused = expect(waiting).rejects.toMatchObject({
      kind: "forbidden",
      message: "No AgentSession is bound to this pod.",
    });
    await vi.advanceTimersByTimeAsync(SESSION_ARRIVAL_MS);
    await refused;
  });

  it("never binds a pod to a session of another namespace that names its UID, nor to another pod's session", async () => {
    const { sessions, pods, counted, caches } = bindingCaches();
    pods.apply("ADDED", pod("agent-1", "pod-uid"));
    const waiting = sessionOfPod(caches, IDENTITY);
    const refused = expect(waiting).rejects.toMatchObject({
      kind: "forbidden",
      message: "No AgentSession is bound to this pod.",
    });
    await settle();
    const looked = counted.lookups;
    // A session elsewhere claiming this pod's UID, and one here that records another pod of the same name.
    sessions.apply("ADDED", session("intruder", "pod-uid", "team-b"));
    pods.apply("ADDED", pod("agent-1", "pod-uid", "intruder", "team-b"));
    sessions.apply("ADDED", session("neighbour", "neighbour-pod-uid"));
    await settle();
    expect(counted.lookups).toBe(looked);
    await vi.advanceTimersByTimeAsync(SESSION_ARRIVAL_MS);
    await refused;
    // The other namespace's pod is that session's own, under its own identity.
    const theirs = { namespace: "team-b", podName: "agent-1", podUID: "pod-uid" };
    expect((await sessionOfPod(caches, theirs, 0)).metadata.name).toBe("intruder");
  });
});
