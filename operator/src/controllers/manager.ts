/**
 * Starts the four controllers and routes informer events to their work queues: an object's own
 * changes queue it; a pod, or an Approval whose phase moved, queues its session; a ProviderInstance or EndpointSlice queues
 * its provider and the Capabilities that reference it; an agent NetworkPolicy that drifted queues the
 * running sessions of its namespace; a transcript append's notice (store/session-notices.ts) queues its
 * running session.
 */
import { isDeepStrictEqual } from "node:util";
import type { Manifest } from "@gatehouse/provider-sdk";
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentSession, Approval } from "../api/kinds.ts";
import { isTerminalSessionPhase } from "../api/status/agentsession.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { PROVIDER_LABEL, SESSION_UID_LABEL } from "../api/well-known.ts";
import { type OperatorConfig, settingsOf } from "../config.ts";
import type { CoreDeps, DecisionRulesVerdict } from "../core/ports.ts";
import { toolNameOf } from "../core/tool-names.ts";
import {
  approvalsOfSession,
  approvalsOnCapability,
  capabilitiesByToolName,
  capabilitiesOfProvider,
  sessionByUid,
  sessionsNamingCapability,
  sessionWithBareUid,
} from "../kube/cache-indexes.ts";
import { startIdentityMirror } from "../kube/identity-mirror.ts";
import type { Caches } from "../kube/runtime/caches.ts";
import type { KubeClients } from "../kube/runtime/client.ts";
import { eventRecorder } from "../kube/runtime/events.ts";
import type { InformerEvent, ObjectCache } from "../kube/runtime/informer.ts";
import type { OperatorMetrics } from "../observability/metrics.ts";
import type { SessionNoticeHandlers } from "../store/session-notices.ts";
import type { SessionRecords } from "../store/session-records.ts";
import type { TranscriptStore } from "../store/transcripts.ts";
import { AGENT_SESSION_SETTINGS, type AgentSessionSettings } from "./agentsession/plan.ts";
import {
  AGENT_SESSION_WORKERS,
  agentNetworkPolicy,
  agentNetworkPolicyHolds,
  reconcileAgentSession,
} from "./agentsession/reconciler.ts";
import { startConflictSweep } from "./approval/conflict-sweep.ts";
import { APPROVAL_WORKERS, reconcileApproval } from "./approval/reconciler.ts";
import { APPROVAL_CONTROLLER_SETTINGS, type ApprovalControllerSettings } from "./approval/writer.ts";
import { reconcileCapability } from "./capability/reconciler.ts";
import { Controller } from "./controller.ts";
import { startExecutionRecovery } from "./execution-recovery.ts";
import { manifestsWithGrace } from "./manifest-grace.ts";
import { LEADER_SWEEPS, type SweepSettings } from "./periodic-sweep.ts";
import { PROVIDER_INSTANCE_SETTINGS, type ProviderInstanceSettings } from "./providerinstance/plan.ts";
import { reconcileProviderInstance } from "./providerinstance/reconciler.ts";
import { serves } from "./served-namespaces.ts";

export interface ManagerDeps {
  clients: KubeClients;
  caches: Caches;
  /** The agent NetworkPolicies (kube/runtime/caches.ts makeAgentPolicyCache). */
  agentPolicies: ObjectCache<V1NetworkPolicy>;
  core: CoreDeps;
  transcripts: TranscriptStore;
  /** Session records from the transcript, read incrementally (shared with the gateway). */
  records: SessionRecords;
  /** What each controller is given of the configuration ({@link controllerSettings}). */
  settings: ControllerSettings;
  log: Logger;
  metrics?: OperatorMetrics;
  now: () => Date;
  fetchManifest: (endpoint: string) => Promise<Manifest>;
  /** Whether admission enforces the Approval decision rules (kube/admission/guard.ts). */
  decisionRules: (sinceMs: number) => Promise<DecisionRulesVerdict>;
  /** Whether transcript notices arrive (store/session-notices.ts); none: running sessions are polled. */
  notices?: { live(): boolean };
}

/** The running controllers: `notices` takes the transcript listener's notices. */
export interface RunningControllers {
  stop(): Promise<void>;
  notices: SessionNoticeHandlers;
}

/**
 * Each controller's settings, built once from the configuration by {@link controllerSettings}; the
 * Capability controller reads none.
 */
export interface ControllerSettings {
  agentSession: AgentSessionSettings;
  approval: ApprovalControllerSettings;
  providerInstance: ProviderInstanceSettings;
  /** The identity mirror publishes identity bindings in the operator's namespace (kube/identity-mirror.ts). */
  identityMirror: Pick<OperatorConfig, "operatorNamespace">;
  /** Execution recovery and the conflict sweep. */
  sweeps: SweepSettings;
}

/** The controllers' settings from `config`: each takes the fields its settings type names, no others. */
export function controllerSettings(config: OperatorConfig): ControllerSettings {
  return {
    agentSession: settingsOf(config, AGENT_SESSION_SETTINGS),
    approval: settingsOf(config, APPROVAL_CONTROLLER_SETTINGS),
    providerInstance: settingsOf(config, PROVIDER_INSTANCE_SETTINGS),
    identityMirror: settingsOf(config, ["operatorNamespace"]),
    sweeps: LEADER_SWEEPS,
  };
}

/**
 * Whether an event about a controller's own kind should queue it: anything but an update that only
 * changed `status` (the controller's own write; controller-runtime's GenerationChangedPredicate, plus
 * metadata a reconcile reads). Without it every status write would queue the object again.
 */
export function specOrMetadataChanged(
  object: {
    metadata: { generation?: number; deletionTimestamp?: string; labels?: object; finalizers?: string[] };
  },
  event: InformerEvent,
  previous: typeof object | undefined,
): boolean {
  if (event !== "update" || !previous) return true;
  const now = object.metadata;
  const before = previous.metadata;
  return (
    now.generation !== before.generation ||
    now.deletionTimestamp !== before.deletionTimestamp ||
    !isDeepStrictEqual(now.labels, before.labels) ||
    !isDeepStrictEqual(now.finalizers, before.finalizers)
  );
}

/**
 * Whether an Approval event can change what its session's reconcile plans: the session reads only
 * its Approvals' names and phases (Pending, still open, decided), so an update that left the phase
 * as it was — a decision appended, a finalizer, a status write within a phase — does not queue it.
 */
export function approvalPhaseMoved(
  approval: Approval,
  event: InformerEvent,
  previous: Approval | undefined,
): boolean {
  if (event !== "update" || !previous) return true;
  return (
    (approval.status?.phase ?? ApprovalPhase.Pending) !== (previous.status?.phase ?? ApprovalPhase.Pending)
  );
}

/** True when `session` just started to end: deleted, being deleted, cancelled, or in a terminal phase. */
function sessionEnding(
  session: AgentSession,
  event: InformerEvent,
  previous: AgentSession | undefined,
): boolean {
  const ending = (s: AgentSession | undefined) =>
    s !== undefined &&
    (s.metadata.deletionTimestamp !== undefined ||
      s.spec.cancel === true ||
      isTerminalSessionPhase(s.status?.phase));
  if (event === "delete") return true;
  if (event === "add" || event === "resync") return ending(session);
  return ending(session) && !ending(previous);
}

/** Whether a session may still change (not cancelled, not ended). */
function sessionRunning(s: AgentSession): boolean {
  return !s.spec.cancel && !isTerminalSessionPhase(s.status?.phase);
}

/**
 * The session a transcript notice of `uid` queues: the running one with that uid, in any namespace.
 * A notice is a cue anyone with a database login may forge (store/session-notices.ts): it only queues
 * a pass, which reads the transcript itself; an ended session's pass would change nothing.
 */
export function sessionNoticed(caches: Pick<Caches, "sessions">, uid: string): AgentSession | undefined {
  const session = sessionWithBareUid(caches, uid);
  return session && sessionRunning(session) ? session : undefined;
}

/** Starts every controller; `stop()` drains them. */
export function startControllers(managerDeps: ManagerDeps): RunningControllers {
  const events = eventRecorder(managerDeps.clients.core, "gatehouse-operator", managerDeps.log);
  const deps = { ...managerDeps, events };
  const { caches, log } = deps;
  const manifests = manifestsWithGrace(
    { fetchManifest: deps.fetchManifest },
    {
      onStale: (endpoint, error, failingForMs) =>
        log.warn(
          { endpoint, err: String(error), failingForMs },
          "provider manifest fetch failed; keeping its last good manifest for now",
        ),
    },
  );
  const records = {
    recordOf: (uid: string) => deps.records.recordOf(uid),
  };
  const sessions = new Controller(
    "agentsession",
    (ns, name, l) =>
      reconcileAgentSession({ ...deps, records, settings: deps.settings.agentSession }, ns, name, l),
    log,
    deps.metrics,
    AGENT_SESSION_WORKERS,
  );
  // When the cache took in each Approval's current version: its decision rules need a check since then.
  const approvalsSeenAt = new Map<string, number>();
  const observedAt = (namespace: string, name: string) => approvalsSeenAt.get(`${namespace}/${name}`);
  const approvals = new Controller(
    "approval",
    (ns, name, l) =>
      reconcileApproval({ ...deps, settings: deps.settings.approval, observedAt }, ns, name, l),
    log,
    deps.metrics,
    APPROVAL_WORKERS,
  );
  const capabilities = new Controller(
    "capability",
    (ns, name, l) => reconcileCapability({ ...deps, manifests }, ns, name, l),
    log,
    deps.metrics,
  );
  const providers = new Controller(
    "providerinstance",
    (ns, name, l) =>
      reconcileProviderInstance(
        { ...deps, manifests, settings: deps.settings.providerInstance },
        ns,
        name,
        l,
      ),
    log,
    deps.metrics,
  );

  // A resync announces every cached object again (every 10 min): its passes are periodic looks, like
  // a running session's poll, so they wait behind every event-driven pass (low priority) — at
  // thousands of sessions and Approvals a resync otherwise queued them all in front of the decisions.
  caches.sessions.onChange((s, event, previous) => {
    const resync = event === "resync";
    if (specOrMetadataChanged(s, event, previous)) sessions.enqueue(s, resync);
    // A cancelled, ended or deleted session cancels its Pending Approvals: only then do they need a look
    // (a session's own status writes are frequent, and a session may hold many Approvals).
    if (sessionEnding(s, event, previous)) {
      for (const a of approvalsOfSession(caches, s.metadata.namespace, s.metadata.uid)) {
        approvals.enqueue(a, resync);
      }
    }
  });
  caches.approvals.onChange((a, event, previous) => {
    const resync = event === "resync";
    const key = `${a.metadata.namespace}/${a.metadata.name}`;
    if (event === "delete") approvalsSeenAt.delete(key);
    else if (!resync) approvalsSeenAt.set(key, deps.now().getTime());
    if (specOrMetadataChanged(a, event, previous)) approvals.enqueue(a, resync);
    if (!approvalPhaseMoved(a, event, previous)) return;
    const session = sessionByUid(caches, a.metadata.namespace, a.spec.sessionRef.uid);
    if (session) sessions.enqueue(session, resync);
  });
  caches.pods.onChange((pod, event) => {
    const resync = event === "resync";
    const session = sessionByUid(caches, pod.metadata?.namespace, pod.metadata?.labels?.[SESSION_UID_LABEL]);
    if (session) sessions.enqueue(session, resync);
    const provider = pod.metadata?.labels?.[PROVIDER_LABEL];
    if (provider) {
      providers.enqueue({ metadata: { namespace: pod.metadata?.namespace, name: provider } }, resync);
    }
  });
  caches.capabilities.onChange((c, event, previous) => {
    if (specOrMetadataChanged(c, event, previous)) {
      capabilities.enqueue(c);
      // Capabilities sharing its tool name, before or after the change, learn whether they still clash.
      const names = new Set([toolNameOf(c.spec.id), ...(previous ? [toolNameOf(previous.spec.id)] : [])]);
      for (const name of names) {
        for (const other of capabilitiesByToolName(caches, c.metadata.namespace, name)) {
          if (other.metadata.name !== c.metadata.name) capabilities.enqueue(other);
        }
      }
      // A policy made stricter applies to the Approvals still Pending on it: their status says so now.
      for (const a of approvalsOnCapability(caches, c.metadata.namespace, c.metadata.name)) {
        if ((a.status?.phase ?? ApprovalPhase.Pending) === ApprovalPhase.Pending) approvals.enqueue(a);
      }
    }
    // Sessions naming it learn whether it exists (condition CapabilitiesResolved).
    if (event !== "update") {
      for (const s of sessionsNamingCapability(caches, c.metadata.namespace, c.metadata.name)) {
        sessions.enqueue(s);
      }
    }
  });
  caches.providers.onChange((p, event, previous) => {
    if (specOrMetadataChanged(p, event, previous)) providers.enqueue(p);
    for (const c of capabilitiesOfProvider(caches, p.metadata.namespace, p.metadata.name)) {
      capabilities.enqueue(c);
    }
  });
  // An agent NetworkPolicy changed or deleted by anyone else: the namespace's running sessions restore it.
  deps.agentPolicies.onChange((policy, event) => {
    const namespace = policy.metadata?.namespace;
    if (!namespace || !serves(deps.settings.agentSession.watchNamespaces, namespace)) return;
    const desired = agentNetworkPolicy(namespace, deps.settings.agentSession);
    if (event !== "delete" && agentNetworkPolicyHolds(policy, desired)) return;
    for (const s of caches.sessions.list(namespace)) if (sessionRunning(s)) sessions.enqueue(s);
  });
  caches.endpointSlices.onChange((slice) => {
    const provider = slice.metadata?.labels?.[PROVIDER_LABEL];
    if (provider) providers.enqueue({ metadata: { namespace: slice.metadata?.namespace, name: provider } });
  });

  const all = [sessions, approvals, capabilities, providers];
  for (const controller of all) controller.start();
  // Objects already in the caches at start are queued once (informers announced them before onChange).
  for (const s of caches.sessions.list()) sessions.enqueue(s);
  for (const a of caches.approvals.list()) approvals.enqueue(a);
  for (const c of caches.capabilities.list()) capabilities.enqueue(c);
  for (const p of caches.providers.list()) providers.enqueue(p);
  const { sweeps } = deps.settings;
  const recovery = startExecutionRecovery(deps.core, log.child({ component: "execution-recovery" }), sweeps);
  const conflicts = startConflictSweep(deps, log.child({ component: "conflict-sweep" }), sweeps);
  const identities = startIdentityMirror({
    clients: deps.clients,
    caches,
    namespace: deps.settings.identityMirror.operatorNamespace,
    log: log.child({ component: "identity-mirror" }),
  });
  return {
    notices: {
      onNotice(uid) {
        const session = sessionNoticed(caches, uid);
        if (session) sessions.enqueue(session);
      },
      // Notices may have been lost while not listening: every running session looks, as on a resync.
      onMissed() {
        for (const s of caches.sessions.list()) if (sessionRunning(s)) sessions.enqueue(s, true);
      },
    },
    stop: async () =>
      void (await Promise.all([
        ...all.map((c) => c.stop()),
        recovery.stop(),
        conflicts.stop(),
        identities.stop(),
      ])),
  };
}
