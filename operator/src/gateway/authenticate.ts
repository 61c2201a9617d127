/**
 * Authenticates an agent pod (DESIGN §4 step 1): TokenReview with audience `gatehouse` must say
 * authenticated, list `gatehouse` in status.audiences, name the `gatehouse-agent` ServiceAccount, and
 * carry the pod UID that the session's status.podUID records. Verdicts are cached by token hash so a
 * busy agent does not cost one API call per request — an acceptance for at most 10 s, a refusal for
 * 5 s, so a caller repeating a bad token does not cost one either — each in an LRU cache of bounded
 * size, so a caller sending ever new garbage tokens cannot grow memory nor evict the pods' acceptances.
 * Only the API server's verdicts are cached, never its failure to answer.
 */
import { createHash } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import type { AgentSession } from "../api/kinds.ts";
import { isTerminalSessionPhase } from "../api/status/agentsession.ts";
import { AGENT_SERVICE_ACCOUNT, GATEHOUSE_AUDIENCE } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { sessionByPodUid } from "../kube/cache-indexes.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import type { KubeClients } from "../kube/runtime/client.ts";
import { changesOf, watchOf } from "./cache-changes.ts";

const POD_UID_KEY = "authentication.kubernetes.io/pod-uid";
const POD_NAME_KEY = "authentication.kubernetes.io/pod-name";

/** How long an accepted token's identity is reused without a TokenReview, in milliseconds. */
export const ACCEPTED_TOKEN_CACHE_MS = 10_000;
/** How long a refused token is refused again without a TokenReview, in milliseconds. */
export const REFUSED_TOKEN_CACHE_MS = 5_000;
/**
 * How long a request waits for the cache to show its new pod bound to its session (the controller's
 * status write of podUID), in milliseconds.
 */
export const SESSION_ARRIVAL_MS = 5_000;
/** Most verdicts each of the two caches (accepted, refused) holds; the least recently used go first. */
export const TOKEN_CACHE_MAX_ENTRIES = 10_000;

/** The pod a token belongs to. */
export interface PodIdentity {
  namespace: string;
  podName: string;
  podUID: string;
}

/** Options of {@link tokenReviewer}. */
export interface TokenReviewerOptions {
  /** Clock in milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Default {@link ACCEPTED_TOKEN_CACHE_MS}. */
  acceptedMs?: number;
  /** Default {@link REFUSED_TOKEN_CACHE_MS}. */
  refusedMs?: number;
  /** Default {@link TOKEN_CACHE_MAX_ENTRIES}. */
  maxEntries?: number;
}

/** Reviews tokens through the API server, caching the verdicts by token hash (see the file comment). */
export function tokenReviewer(
  clients: Pick<KubeClients, "authentication">,
  options: TokenReviewerOptions = {},
) {
  const now = options.now ?? Date.now;
  // ttlResolution 0: the clock is read on every look-up, so an injected clock is obeyed exactly.
  const cacheOptions = {
    max: options.maxEntries ?? TOKEN_CACHE_MAX_ENTRIES,
    ttlResolution: 0,
    perf: { now },
  };
  const accepted = new LRUCache<string, PodIdentity>({
    ...cacheOptions,
    ttl: options.acceptedMs ?? ACCEPTED_TOKEN_CACHE_MS,
  });
  const refused = new LRUCache<string, string>({
    ...cacheOptions,
    ttl: options.refusedMs ?? REFUSED_TOKEN_CACHE_MS,
  });
  return async function review(token: string): Promise<PodIdentity> {
    const key = createHash("sha256").update(token).digest("hex");
    const identity = accepted.get(key);
    if (identity) return identity;
    const refusal = refused.get(key);
    if (refusal !== undefined) throw new GatehouseError("forbidden", refusal);
    // The API server's failure to answer propagates uncached; its verdict is remembered either way.
    const review = await clients.authentication.createTokenReview({
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token, audiences: [GATEHOUSE_AUDIENCE] },
      },
    });
    try {
      const found = identityOf(review.status);
      accepted.set(key, found);
      return found;
    } catch (error) {
      if (error instanceof GatehouseError) refused.set(key, error.message);
      throw error;
    }
  };
}

/** The pod a TokenReview's status names. Errors: `forbidden` when the token does not qualify. */
function identityOf(
  status: Awaited<ReturnType<KubeClients["authentication"]["createTokenReview"]>>["status"],
): PodIdentity {
  if (!status?.authenticated || !status.audiences?.includes(GATEHOUSE_AUDIENCE)) {
    throw new GatehouseError(
      "forbidden",
      `Token not accepted for audience ${GATEHOUSE_AUDIENCE}: ${status?.error ?? "not authenticated"}.`,
    );
  }
  const match = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(status.user?.username ?? "");
  if (!match || match[2] !== AGENT_SERVICE_ACCOUNT) {
    throw new GatehouseError(
      "forbidden",
      `Only the ${AGENT_SERVICE_ACCOUNT} ServiceAccount may call the gateway.`,
    );
  }
  const podUID = status.user?.extra?.[POD_UID_KEY]?.[0];
  const podName = status.user?.extra?.[POD_NAME_KEY]?.[0];
  if (!podUID || !podName) throw new GatehouseError("forbidden", "The token is not bound to a pod.");
  return { namespace: match[1]!, podName, podUID };
}

/**
 * The session that controls `pod` and has not recorded any pod of that name yet: the operator created
 * the pod and has not written status.podName/podUID (a leader that died between the two, or a slow
 * status write). Undefined for every other pod — one the session moved past, a same-name copy, a pod
 * of a finished session — which is refused outright.
 */
function sessionAboutToBind(caches: Pick<Caches, "sessions">, pod: V1Pod): AgentSession | undefined {
  const owner = pod.metadata?.ownerReferences?.find((o) => o.controller && o.kind === "AgentSession");
  if (!owner || pod.metadata?.deletionTimestamp) return undefined;
  const session = caches.sessions.get(owner.name, pod.metadata?.namespace ?? "");
  if (!session || session.metadata.uid !== owner.uid || session.spec.cancel) return undefined;
  if (isTerminalSessionPhase(session.status?.phase)) return undefined;
  return session.status?.podName === pod.metadata?.name ? undefined : session;
}

/**
 * The session whose status.podUID is the pod's UID. The controller writes podUID right after creating
 * the pod, so a very early request may find the cache behind: it waits up to `waitMs` for the cache's
 * change events of the pod or of a session naming it (cache-changes.ts, as the approval wait does),
 * reading the cache again at each, and is answered as soon as the informer delivers the binding.
 * A finished session (Completed, Failed, Cancelled) is refused: the pod's projected token stays valid
 * for as long as the pod object exists, and must not read or write the session any more. Nothing
 * legitimate is cut off: Completed and the Failed that follow a pod's end are written only once the
 * pod has ended; Cancelled deletes the pod, whose agent stops without a word (a terminating pod is
 * refused anyway); a Failed written while the pod runs (its model endpoint gone) means the agent must
 * stop. This runs on every request, against the informer cache: never cached with the token's verdict.
 * Errors: `forbidden` when no session is bound to this pod, the pod is terminating, or the session
 * has finished; `unavailable` (retry later) when the pod's controlling session has not recorded it
 * yet — the agent's client retries that while the operator (perhaps a new leader) catches up.
 */
export async function sessionOfPod(
  caches: Pick<Caches, "sessions" | "pods">,
  identity: PodIdentity,
  waitMs = SESSION_ARRIVAL_MS,
): Promise<AgentSession> {
  const bound = boundSession(caches, identity);
  if (bound) return bound;
  const deadline = Date.now() + waitMs;
  // Subscribed before the cache is read again, so no change between that read and the wait is missed.
  const changes = changesOf([
    watchOf(
      caches.sessions,
      (session) =>
        session.metadata.namespace === identity.namespace && session.status?.podUID === identity.podUID,
    ),
    watchOf(
      caches.pods,
      (pod) => pod.metadata?.namespace === identity.namespace && pod.metadata?.name === identity.podName,
    ),
  ]);
  try {
    for (;;) {
      const session = boundSession(caches, identity);
      if (session) return session;
      if (Date.now() >= deadline) {
        const pod = samePod(caches, identity);
        const pending = pod ? sessionAboutToBind(caches, pod) : undefined;
        if (pending) {
          throw new GatehouseError(
            "unavailable",
            `AgentSession ${pending.metadata.name} has not recorded this pod as its pod yet; retry shortly.`,
          );
        }
        throw new GatehouseError("forbidden", "No AgentSession is bound to this pod.");
      }
      await changes.next(deadline - Date.now());
    }
  } finally {
    changes.close();
  }
}

/** The cached pod of `identity`, when it is that very pod (same UID). */
function samePod(caches: Pick<Caches, "pods">, identity: PodIdentity): V1Pod | undefined {
  const pod = caches.pods.get(identity.podName, identity.namespace);
  return pod?.metadata?.uid === identity.podUID ? pod : undefined;
}

/**
 * The session bound to the pod of `identity` when the cache has both; undefined while it has not.
 * Errors: `forbidden` for a terminating pod or a finished session.
 */
function boundSession(
  caches: Pick<Caches, "sessions" | "pods">,
  identity: PodIdentity,
): AgentSession | undefined {
  const session = sessionByPodUid(caches, identity.namespace, identity.podUID);
  const pod = samePod(caches, identity);
  if (!session || !pod) return undefined;
  if (pod.metadata?.deletionTimestamp) throw new GatehouseError("forbidden", "The pod is terminating.");
  const phase = session.status?.phase;
  if (isTerminalSessionPhase(phase)) {
    throw new GatehouseError(
      "forbidden",
      `AgentSession ${session.metadata.name} has finished (${phase}); its pod's token no longer reads or writes it.`,
    );
  }
  return session;
}
