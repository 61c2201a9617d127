/**
 * The indexes of the operator's caches and the lookups that read them, so no controller or gateway
 * path scans a whole kind to find the few objects it wants (kube/runtime/indexer.ts). Values are
 * scoped to a namespace (`namespace/value`) where the lookup is, so a lookup stays inside it.
 *
 * - AgentSessions by uid (an Approval's sessionRef, a pod's owner and session-uid label), by bare uid
 *   in any namespace (a transcript notice names only the uid: store/session-notices.ts), by the uid of
 *   their pod (status.podUID) and by each Capability they name (spec.capabilities);
 * - Approvals by session uid (sessionRef.uid), by Capability name (spec.capability) and by phase;
 * - Capabilities by tool name (spec.id as the model calls it) and by ProviderInstance (providerRef);
 * - pods by the provider they run (label gatehouse.dev/provider).
 */
import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import type { AgentSession, Approval, Capability } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { PROVIDER_LABEL } from "../api/well-known.ts";
import { toolNameOf } from "../core/tool-names.ts";
import type { CacheIndexers, Caches } from "./runtime/caches.ts";
import { indexValue } from "./runtime/indexer.ts";

export const SESSION_BY_UID = "uid";
export const SESSION_BY_BARE_UID = "bareUid";
export const SESSION_BY_POD_UID = "podUID";
export const SESSION_BY_CAPABILITY = "capability";
export const APPROVAL_BY_SESSION = "sessionUID";
export const APPROVAL_BY_CAPABILITY = "capability";
export const APPROVAL_BY_PHASE = "phase";
export const CAPABILITY_BY_TOOL_NAME = "toolName";
export const CAPABILITY_BY_PROVIDER = "provider";
export const POD_BY_PROVIDER = "provider";

type Cached<T> = T & KubernetesObject;

/** The phase an Approval shows; none written yet is Pending. */
function approvalPhaseOf(a: Approval): string {
  return a.status?.phase ?? ApprovalPhase.Pending;
}

/** The indexes the controller's and the gateway's caches keep (runtime/caches.ts makeCaches). */
export const GATEHOUSE_INDEXERS: CacheIndexers = {
  sessions: {
    [SESSION_BY_UID]: (s: Cached<AgentSession>) =>
      s.metadata.uid ? [indexValue(s.metadata.namespace, s.metadata.uid)] : [],
    [SESSION_BY_BARE_UID]: (s: Cached<AgentSession>) => (s.metadata.uid ? [s.metadata.uid] : []),
    [SESSION_BY_POD_UID]: (s: Cached<AgentSession>) =>
      s.status?.podUID ? [indexValue(s.metadata.namespace, s.status.podUID)] : [],
    [SESSION_BY_CAPABILITY]: (s: Cached<AgentSession>) =>
      (s.spec.capabilities ?? []).map((name) => indexValue(s.metadata.namespace, name)),
  },
  approvals: {
    [APPROVAL_BY_SESSION]: (a: Cached<Approval>) => [indexValue(a.metadata.namespace, a.spec.sessionRef.uid)],
    [APPROVAL_BY_CAPABILITY]: (a: Cached<Approval>) => [indexValue(a.metadata.namespace, a.spec.capability)],
    [APPROVAL_BY_PHASE]: (a: Cached<Approval>) => [approvalPhaseOf(a)],
  },
  capabilities: {
    [CAPABILITY_BY_TOOL_NAME]: (c: Cached<Capability>) => [
      indexValue(c.metadata.namespace, toolNameOf(c.spec.id)),
    ],
    [CAPABILITY_BY_PROVIDER]: (c: Cached<Capability>) => [
      indexValue(c.spec.providerRef.namespace ?? c.metadata.namespace, c.spec.providerRef.name),
    ],
  },
  providers: {},
  pods: {
    [POD_BY_PROVIDER]: (p: V1Pod) => {
      const provider = p.metadata?.labels?.[PROVIDER_LABEL];
      return provider ? [indexValue(p.metadata?.namespace, provider)] : [];
    },
  },
};

/** The session of `namespace` with uid `uid`, or undefined (also for no uid). */
export function sessionByUid(
  caches: Pick<Caches, "sessions">,
  namespace: string | undefined,
  uid: string | undefined,
): Cached<AgentSession> | undefined {
  return uid ? caches.sessions.byIndex(SESSION_BY_UID, indexValue(namespace, uid))[0] : undefined;
}

/**
 * The session with uid `uid` in whichever namespace: only for a cue that names no namespace (a
 * transcript notice), never to decide what a request may touch.
 */
export function sessionWithBareUid(
  caches: Pick<Caches, "sessions">,
  uid: string,
): Cached<AgentSession> | undefined {
  return caches.sessions.byIndex(SESSION_BY_BARE_UID, uid)[0];
}

/** The session of `namespace` whose status records pod uid `podUid`, or undefined. */
export function sessionByPodUid(
  caches: Pick<Caches, "sessions">,
  namespace: string,
  podUid: string,
): Cached<AgentSession> | undefined {
  return caches.sessions.byIndex(SESSION_BY_POD_UID, indexValue(namespace, podUid))[0];
}

/** The sessions of `namespace` that name Capability `name` in spec.capabilities. */
export function sessionsNamingCapability(
  caches: Pick<Caches, "sessions">,
  namespace: string,
  name: string,
): Cached<AgentSession>[] {
  return caches.sessions.byIndex(SESSION_BY_CAPABILITY, indexValue(namespace, name));
}

/** The Approvals of `namespace` proposed by the session with uid `sessionUid`. */
export function approvalsOfSession(
  caches: Pick<Caches, "approvals">,
  namespace: string,
  sessionUid: string,
): Cached<Approval>[] {
  return caches.approvals.byIndex(APPROVAL_BY_SESSION, indexValue(namespace, sessionUid));
}

/** The Approvals of `namespace` on Capability `name`. */
export function approvalsOnCapability(
  caches: Pick<Caches, "approvals">,
  namespace: string,
  name: string,
): Cached<Approval>[] {
  return caches.approvals.byIndex(APPROVAL_BY_CAPABILITY, indexValue(namespace, name));
}

/** How many cached Approvals are in `phase` (none written yet counts as Pending). */
export function approvalsInPhase(caches: Pick<Caches, "approvals">, phase: string): number {
  return caches.approvals.byIndex(APPROVAL_BY_PHASE, phase).length;
}

/** The Capabilities of `namespace` the model calls by `toolName`. */
export function capabilitiesByToolName(
  caches: Pick<Caches, "capabilities">,
  namespace: string,
  toolName: string,
): Cached<Capability>[] {
  return caches.capabilities.byIndex(CAPABILITY_BY_TOOL_NAME, indexValue(namespace, toolName));
}

/** The Capabilities (of any namespace) served by ProviderInstance `namespace/name`. */
export function capabilitiesOfProvider(
  caches: Pick<Caches, "capabilities">,
  namespace: string,
  name: string,
): Cached<Capability>[] {
  return caches.capabilities.byIndex(CAPABILITY_BY_PROVIDER, indexValue(namespace, name));
}

/** The pods of `namespace` that run provider `name` (its label). */
export function podsOfProvider(caches: Pick<Caches, "pods">, namespace: string, name: string): V1Pod[] {
  return caches.pods.byIndex(POD_BY_PROVIDER, indexValue(namespace, name));
}
