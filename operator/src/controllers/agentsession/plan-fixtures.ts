/**
 * Builders and the pass runner shared by the AgentSession's table tests (plan.test.ts, plan-status.test.ts):
 * a row names a session, what the caches and Postgres show, and what its pass must do; {@link pass}
 * runs the applier (reconciler.ts) over the in-memory writer and {@link problemsOf} compares.
 */
import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject, V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentSession, Approval, Capability, ProviderInstance } from "../../api/kinds.ts";
import { SessionPhase } from "../../api/status/agentsession.ts";
import { SESSION_FINALIZER } from "../../api/well-known.ts";
import { defaultSessionCeilings } from "../../core/limits.ts";
import type { SessionRecord } from "../../core/session-record.ts";
import { GATEHOUSE_INDEXERS } from "../../kube/cache-indexes.ts";
import { metaTimeOf } from "../../kube/runtime/conditions.ts";
import { staticCache } from "../../kube/runtime/static-cache.ts";
import { inMemoryAgentSessionWriter } from "./in-memory-writer.ts";
import { agentNetworkPolicy } from "./network-policy.ts";
import type { AgentSessionSettings } from "./plan-types.ts";
import { agentPodName } from "./pod.ts";
import { applyAgentSession } from "./reconciler.ts";

export const NOW = new Date("2026-12-01T10:00:00.000Z");
export const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();
export const UID = "sess-uid";
export const STAMP = metaTimeOf(NOW);

export const SETTINGS: AgentSessionSettings = {
  watchNamespaces: [],
  modelEndpoints: [{ name: "ep1", baseURL: "http://model", models: ["m1"], default: true }],
  agentPodRetries: 2,
  sessionCeilings: defaultSessionCeilings,
  agentImage: "gatehouse/agent:dev",
  gatewayUrl: "http://gatehouse.gatehouse-system:8443",
  gatewayPort: 8443,
  operatorNamespace: "gatehouse-system",
  offClusterGateways: [],
  agentResources: {},
};

export const RECORD: SessionRecord = {
  finalAnswers: 0,
  turns: 1,
  toolCalls: 0,
  writes: 0,
  releases: 0,
  compactions: 2,
  agentEvents: 1,
  agentEventBytes: 10,
  usage: { inputTokens: 5, outputTokens: 7 },
};

export type Status = NonNullable<AgentSession["status"]>;

export function sessionOf(
  o: {
    status?: Status;
    finalizer?: boolean;
    deleting?: boolean;
    generation?: number;
    messages?: number;
    cancel?: boolean;
    model?: string;
    endpointRef?: string;
    capabilities?: string[];
    limits?: Record<string, number>;
  } = {},
): AgentSession {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: {
      name: "s1",
      namespace: "plant-a",
      uid: UID,
      generation: o.generation ?? 1,
      resourceVersion: "7",
      ...(o.finalizer === false ? {} : { finalizers: [SESSION_FINALIZER] }),
      ...(o.deleting ? { deletionTimestamp: at(-1_000) } : {}),
    },
    spec: {
      subject: { user: "alice", groups: [] },
      model: { name: o.model ?? "m1", ...(o.endpointRef ? { endpointRef: o.endpointRef } : {}) },
      messages: Array.from({ length: o.messages ?? 1 }, (_, i) => ({ text: `message ${i + 1}` })),
      ...(o.cancel ? { cancel: true } : {}),
      ...(o.capabilities ? { capabilities: o.capabilities } : {}),
      ...(o.limits ? { limits: o.limits } : {}),
    },
    ...(o.status ? { status: o.status } : {}),
  } as unknown as AgentSession;
}

type Owner = "own" | "foreign" | "earlier";
export function podOf(
  session: AgentSession,
  phase: string | undefined,
  o: { owner?: Owner; reason?: string; exitCode?: number; finishedMsAgo?: number } = {},
): V1Pod {
  const s = session.status;
  const owner = o.owner ?? "own";
  return {
    metadata: {
      name: agentPodName(session, s?.attempt ?? 1, s?.resumes ?? 0, s?.continuations ?? 0),
      namespace: "plant-a",
      uid: "pod-uid-1",
      ownerReferences:
        owner === "foreign"
          ? [{ apiVersion: "batch/v1", kind: "Job", name: "j", uid: "j", controller: true }]
          : [
              {
                apiVersion: "gatehouse.dev/v1alpha1",
                kind: "AgentSession",
                name: "s1",
                uid: owner === "own" ? UID : "earlier-uid",
                controller: true,
              },
            ],
    },
    status: {
      ...(phase ? { phase } : {}),
      ...(o.reason ? { reason: o.reason } : {}),
      containerStatuses: [
        {
          name: "agent",
          image: "a",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: {
              exitCode: o.exitCode ?? 1,
              finishedAt: new Date(NOW.getTime() - (o.finishedMsAgo ?? 120_000)),
            },
          },
        },
      ],
    },
  } as V1Pod;
}

export const approval = (phase: string): Approval =>
  ({
    metadata: { name: `apr-${phase.toLowerCase()}`, namespace: "plant-a" },
    spec: { sessionRef: { name: "s1", uid: UID } },
    status: { phase },
  }) as unknown as Approval;

export const HOLDING_POLICY = (() => {
  const wire = JSON.parse(JSON.stringify(agentNetworkPolicy("plant-a", SETTINGS)));
  wire.spec.ingress = wire.spec.ingress.map(({ _from, ...rule }: Record<string, unknown>) => ({
    ...rule,
    from: _from,
  }));
  return wire as V1NetworkPolicy;
})();
export const DRIFTED_POLICY = (() => {
  const wire = structuredClone(HOLDING_POLICY);
  wire.spec!.egress!.push({ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }] });
  return wire;
})();

export interface Row {
  name: string;
  session: AgentSession;
  pod?: (session: AgentSession) => V1Pod;
  approvals?: Approval[];
  record?: Partial<SessionRecord> | "unavailable";
  settings?: Partial<AgentSessionSettings>;
  policy?: V1NetworkPolicy;
  capabilities?: string[];
  /** The pod the API server holds under the name on create (409), else the create succeeds. */
  existingPod?: (session: AgentSession) => V1Pod;
  /** Expected: the writer's calls, in order (events as `event:<reason>`). */
  calls: string[];
  phase?: string;
  conditions?: Array<[type: string, status: "True" | "False", reason: string, words?: RegExp]>;
  status?: Partial<Status>;
  requeueAfterMs?: number | undefined;
  /** Expected: the requeue is the running session's poll, at low priority. */
  poll?: boolean;
  throws?: RegExp;
  log?: RegExp;
}

export const RUNNING: Status = { phase: SessionPhase.Running, attempt: 1, startTime: at(-60_000) };
export const completed = (o: Partial<Status> = {}): Status => ({
  phase: SessionPhase.Completed,
  observedGeneration: 1,
  completionTime: at(-5_000),
  startTime: at(-60_000),
  ...o,
});

type Cached<T> = T & KubernetesObject;

/** One pass of `row`'s session; `noticesLive`: whether transcript notices arrive (none given: polled). */
export async function pass(row: Row, noticesLive?: boolean) {
  const pod = row.pod?.(row.session);
  const capabilities = (row.capabilities ?? []).map(
    (name) =>
      ({
        metadata: { name, namespace: "plant-a" },
        spec: { id: `fixture.${name}`, providerRef: { name: "p" } },
      }) as Cached<Capability>,
  );
  const writer = inMemoryAgentSessionWriter(
    row.existingPod ? { existingPod: row.existingPod(row.session) } : {},
  );
  const lines: string[] = [];
  const log = { info: (...args: unknown[]) => lines.push(String(args.at(-1))) } as unknown as Logger;
  const deps = {
    caches: {
      approvals: staticCache((row.approvals ?? []) as Cached<Approval>[], GATEHOUSE_INDEXERS.approvals),
      pods: staticCache(pod ? [pod] : [], GATEHOUSE_INDEXERS.pods),
      capabilities: staticCache(capabilities, GATEHOUSE_INDEXERS.capabilities),
      providers: staticCache([] as Cached<ProviderInstance>[]),
    } as never,
    records: {
      recordOf: async () => {
        if (row.record === "unavailable") {
          throw Object.assign(new Error("connect ECONNREFUSED 10.0.0.5:5432"), {
            code: "ECONNREFUSED",
            syscall: "connect",
          });
        }
        return { ...RECORD, ...row.record };
      },
    },
    settings: { ...SETTINGS, ...row.settings },
    agentPolicies: staticCache(row.policy ? [row.policy] : []) as never,
    now: () => NOW,
    ...(noticesLive === undefined ? {} : { notices: { live: () => noticesLive } }),
  };
  let result: unknown;
  let error: unknown;
  try {
    result = await applyAgentSession(deps, writer, row.session, log);
  } catch (e) {
    error = e;
  }
  return { writer, lines, result, error };
}

/** What `row` expects that its pass did not do, as sentences; empty when the pass matches the row. */
export function problemsOf(row: Row, outcome: Awaited<ReturnType<typeof pass>>): string[] {
  const { writer, lines, result, error } = outcome;
  const problems: string[] = [];
  const differ = (a: unknown, b: unknown) => !isDeepStrictEqual(a, b);
  const calls = writer.calls.map((c) => (c.kind === "event" ? `event:${c.event.reason}` : c.kind));
  if (differ(calls, row.calls)) problems.push(`calls ${calls.join(", ")}`);
  if (row.throws ? !row.throws.test(String(error)) : error !== undefined)
    problems.push(`error ${String(error)}`);
  const requeue =
    row.requeueAfterMs === undefined
      ? undefined
      : { requeueAfterMs: row.requeueAfterMs, ...(row.poll ? { lowPriority: true } : {}) };
  if (!row.throws && differ(result, requeue)) problems.push(`returned ${JSON.stringify(result)}`);
  const written = writer.calls.flatMap((c) => (c.kind === "writeStatus" ? [c.status] : [])).at(-1);
  if (row.phase && written?.phase !== row.phase) problems.push(`phase ${written?.phase}`);
  for (const [type, status, reason, words] of row.conditions ?? []) {
    const c = written?.conditions?.find((x) => x.type === type);
    if (c?.status !== status || c.reason !== reason || (words && !words.test(c.message))) {
      problems.push(`condition ${type}: ${JSON.stringify(c)}`);
    }
  }
  for (const [key, value] of Object.entries(row.status ?? {})) {
    if (differ((written as Record<string, unknown> | undefined)?.[key], value)) {
      problems.push(
        `status.${key} ${JSON.stringify((written as Record<string, unknown> | undefined)?.[key])}`,
      );
    }
  }
  if (row.log && !row.log.test(lines.join("\n"))) problems.push(`log ${lines.join(" | ")}`);
  return problems;
}
