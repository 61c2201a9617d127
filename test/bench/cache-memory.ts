/**
 * Benchmark of the informer caches' memory (`make bench-cache`, not `make test`): how many bytes each
 * cached object of each kind costs, with and without the transform the caches apply
 * (kube/runtime/cache-transform.ts), in the same run; and what one installation caching 10 000
 * AgentSessions and 10 000 Approvals (plus Capabilities, ProviderInstances and agent pods) holds.
 *
 * Objects are shaped as the API server sends them (managedFields of each writer, a client-side
 * `kubectl apply` annotation on what people apply) and reach a real Informer with the operator's
 * indexes through its own watch path (`apply("ADDED", …)`), each parsed from its own JSON text as a
 * watch event is. Two measures per kind: the heap the cache grows by over N objects (after a full GC,
 * divided by N: the object, its strings, the store and index entries), and the v8.serialize size of
 * one object (no heap overhead, deterministic). The installation runs in a fresh process per set of
 * V8 flags (node's defaults, 2 MiB semi-spaces, and each component with the chart's NODE_OPTIONS and its
 * own pod and session transforms — gateway/ and controllers/ pod-cache.ts, session-cache.ts — beside the
 * same component without them), with a component program's modules loaded, so its RSS is a component's
 * before its servers and pools; then
 * every object is modified three times through the watch path, and the process's peak RSS (VmHWM) is
 * what that garbage cost on top. Index lookups are timed against the scans they replaced. Needs
 * `--expose-gc`.
 *
 * Writes test/bench/results/cache-memory.json.
 *
 *   node --expose-gc test/bench/cache-memory.ts [--objects N] [--sessions N] [--approvals N]
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serialize } from "node:v8";
import { KubeConfig, type KubernetesObject, type V1Pod } from "@kubernetes/client-node";
import pino from "pino";
import type { AgentSession } from "../../operator/src/api/kinds.ts";
import { agentPodFor } from "../../operator/src/controllers/agentsession/pod.ts";
import { podForController } from "../../operator/src/controllers/pod-cache.ts";
import { sessionForController } from "../../operator/src/controllers/session-cache.ts";
import { podForGateway } from "../../operator/src/gateway/pod-cache.ts";
import { sessionForGateway } from "../../operator/src/gateway/session-cache.ts";
import { approvalsOfSession, GATEHOUSE_INDEXERS } from "../../operator/src/kube/cache-indexes.ts";
import { LAST_APPLIED_ANNOTATION, stripForCache } from "../../operator/src/kube/runtime/cache-transform.ts";
import type { Caches } from "../../operator/src/kube/runtime/caches.ts";
import type { Indexers } from "../../operator/src/kube/runtime/indexer.ts";
import { Informer } from "../../operator/src/kube/runtime/informer.ts";
import { chartMallocEnv, chartNodeOptions } from "../e2e/component-node-options.ts";

const RESULTS = fileURLToPath(new URL("./results/cache-memory.json", import.meta.url));
const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const PER_KIND = flag("--objects", 5_000);
const SESSIONS = flag("--sessions", 10_000);
const APPROVALS = flag("--approvals", 10_000);
const NAMESPACES = 20;
const CHURN_ROUNDS = 3;
const MiB = 1024 * 1024;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error("run with node --expose-gc");
  process.exit(2);
}

type Json = Record<string, unknown>;

/** The API server's FieldsV1 of `value`: every field path as `f:<name>`, leaves `{}`. */
function fieldsOf(value: unknown): Json {
  if (!value || typeof value !== "object" || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [`f:${k}`, fieldsOf(v)]));
}

function managedField(manager: string, fields: Json, subresource?: string): Json {
  return {
    manager,
    operation: "Update",
    apiVersion: "gatehouse.dev/v1alpha1",
    time: "2026-12-06T10:00:00Z",
    fieldsType: "FieldsV1",
    fieldsV1: fields,
    ...(subresource ? { subresource } : {}),
  };
}

const uid = (kind: string, n: number) =>
  `${kind.slice(0, 8).padEnd(8, "0")}-${String(n).padStart(4, "0").slice(-4)}-4000-8000-${String(n).padStart(12, "0")}`;
const namespaceOf = (n: number) => `plant-${n % NAMESPACES}`;
const words = (n: number, seed: number) =>
  Array.from(
    { length: n },
    (_, i) => ["replan", "week", "line", "order", "shift", "check"][(i + seed) % 6],
  ).join(" ");

/** Metadata as the API server returns it, with one managedFields entry per writer of `object`. */
function served(object: Json, writers: Array<[string, Json, string?]>, applied: boolean): Json {
  const metadata = object.metadata as Json;
  if (applied) {
    metadata.annotations = {
      ...(metadata.annotations as Json | undefined),
      [LAST_APPLIED_ANNOTATION]: JSON.stringify({ ...object, metadata: { name: metadata.name } }),
    };
  }
  metadata.managedFields = writers.map(([manager, fields, subresource]) =>
    managedField(manager, fields, subresource),
  );
  return object;
}

function session(n: number): Json {
  const s: Json = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: {
      name: `session-${n}`,
      namespace: namespaceOf(n),
      uid: uid("session", n),
      resourceVersion: String(1000 + n),
      generation: 1,
      creationTimestamp: "2026-12-06T10:00:00Z",
      finalizers: ["gatehouse.dev/session"],
      labels: { "app.kubernetes.io/part-of": "planning" },
    },
    spec: {
      model: { endpointRef: { name: "default" }, name: "gpt-5-mini" },
      engine: "builtin",
      instructions: words(120, n),
      messages: [{ text: words(60, n + 1) }],
      capabilities: ["aps-schedule-read", "aps-schedule-publish", "mes-order-read"],
      limits: { maxTurns: 40, maxWrites: 5 },
    },
    status: {
      phase: "Running",
      attempt: 1,
      podName: `session-${n}-agent-1`,
      podUID: uid("pod", n),
      startTime: "2026-12-06T10:00:05Z",
      observedGeneration: 1,
      conditions: ["PodReady", "CapabilitiesResolved", "Progressing"].map((type) => ({
        type,
        status: "True",
        reason: "AsExpected",
        message: `${type} holds for session-${n}.`,
        lastTransitionTime: "2026-12-06T10:00:05Z",
        observedGeneration: 1,
      })),
    },
  };
  return served(
    s,
    [
      ["kubectl-client-side-apply", { "f:metadata": fieldsOf({ labels: 1 }), "f:spec": fieldsOf(s.spec) }],
      [
        "gatehouse-controller",
        { "f:metadata": { "f:finalizers": { ".": {}, 'v:"gatehouse.dev/session"': {} } } },
      ],
      ["gatehouse-controller", { "f:status": fieldsOf(s.status) }, "status"],
    ],
    true,
  );
}

function approval(n: number, sessions: number): Json {
  const owner = n % sessions;
  const args = JSON.stringify({
    line: `L${n % 12}`,
    orders: [n, n + 1, n + 2],
    week: 47,
    note: words(30, n),
  });
  const a: Json = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: {
      name: `apr-${n.toString(16).padStart(20, "0")}`,
      namespace: namespaceOf(owner),
      uid: uid("approval", n),
      resourceVersion: String(50_000 + n),
      generation: 1,
      creationTimestamp: "2026-12-06T10:01:00Z",
      finalizers: ["gatehouse.dev/approval"],
      labels: {
        "app.kubernetes.io/managed-by": "gatehouse",
        "gatehouse.dev/session-uid": uid("session", owner),
      },
      ownerReferences: [
        {
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "AgentSession",
          name: `session-${owner}`,
          uid: uid("session", owner),
          controller: true,
        },
      ],
    },
    spec: {
      executionId: "e".repeat(64),
      sessionRef: { name: `session-${owner}`, uid: uid("session", owner) },
      capability: "aps-schedule-publish",
      capabilityId: "aps.schedule.publish",
      providerRef: { name: "aps" },
      arguments: args,
      argumentsDigest: "d".repeat(64),
      schemaDigest: "s".repeat(64),
      requester: { user: "system:serviceaccount:planning:gatehouse-agent", groups: ["planners"] },
      approvers: { users: ["alice"], groups: ["plant-leads"] },
      requiredApprovals: 1,
      allowSelfApproval: false,
      expiresAt: "2026-12-06T11:01:00Z",
      decisions: n % 2 ? [{ approver: "alice", verdict: "Approve", reason: "checked the line plan" }] : [],
      resolutions: [],
    },
    status: {
      phase: n % 2 ? "Succeeded" : "Pending",
      observedGeneration: 1,
      approvals: n % 2,
      observedDecisions: n % 2,
      conditions: ["Decided", "Executed"].map((type) => ({
        type,
        status: "True",
        reason: "Approved",
        message: `${type} by alice.`,
        lastTransitionTime: "2026-12-06T10:02:00Z",
        observedGeneration: 1,
      })),
    },
  };
  return served(
    a,
    [
      ["gatehouse-gateway", { "f:metadata": fieldsOf(a.metadata), "f:spec": fieldsOf(a.spec) }],
      ["gatehouse-controller", { "f:status": fieldsOf(a.status) }, "status"],
      ["kubectl-patch", { "f:spec": { "f:decisions": {} } }],
    ],
    false,
  );
}

function capability(n: number): Json {
  const schema = {
    type: "object",
    properties: { line: { type: "string" }, week: { type: "integer" }, orders: { type: "array" } },
    required: ["line", "week"],
  };
  const c: Json = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Capability",
    metadata: {
      name: `cap-${n}`,
      namespace: namespaceOf(n),
      uid: uid("capability", n),
      resourceVersion: String(90_000 + n),
      generation: 1,
      creationTimestamp: "2026-12-06T09:00:00Z",
    },
    spec: {
      id: `aps.tool${n}.publish`,
      providerRef: { name: `aps-${n % 10}` },
      policy: { requireApproval: true },
    },
    status: { effect: "write", mode: "sync", idempotency: "key", inputSchema: schema, outputSchema: schema },
  };
  return served(
    c,
    [
      ["kubectl-client-side-apply", { "f:spec": fieldsOf(c.spec) }],
      ["gatehouse-controller", { "f:status": fieldsOf(c.status) }, "status"],
    ],
    true,
  );
}

function provider(n: number): Json {
  const p: Json = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: {
      name: `aps-${n}`,
      namespace: namespaceOf(n),
      uid: uid("provider", n),
      resourceVersion: String(95_000 + n),
      generation: 1,
    },
    spec: { type: "aps", image: "registry.example/aps-provider:1.4.2", replicas: 2, placement: "Shared" },
    status: {
      endpoints: [`http://10.0.${n % 250}.4:8080`],
      manifest: {
        provider: "aps",
        version: "1.4.2",
        requiresIdentity: false,
        capabilities: [{ id: `aps.tool${n}.publish`, schemaDigest: "s".repeat(64) }],
      },
    },
  };
  return served(
    p,
    [
      ["kubectl-client-side-apply", { "f:spec": fieldsOf(p.spec) }],
      ["gatehouse-controller", { "f:status": fieldsOf(p.status) }, "status"],
    ],
    true,
  );
}

/**
 * The controller's own agent pod for session `n` (controllers/agentsession/pod.ts: its containers,
 * environment, volumes and security contexts), with the status the kubelet writes once it runs.
 */
function pod(n: number): Json {
  const built = agentPodFor(JSON.parse(JSON.stringify(session(n))) as AgentSession, 1, {
    image: "gatehouse/agent:0.1.0",
    gatewayUrl: "http://gatehouse-gateway.gatehouse-system.svc:8443",
    remainingSeconds: 1800,
    resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
  });
  const started = "2026-12-06T10:00:04Z";
  const p: Json = {
    ...built,
    metadata: { ...built.metadata, uid: uid("pod", n), resourceVersion: String(200_000 + n) },
    spec: { ...built.spec, nodeName: `node-${n % 20}` },
    status: {
      phase: "Running",
      hostIP: `10.0.0.${n % 20}`,
      podIP: `10.1.${n % 250}.${n % 200}`,
      podIPs: [{ ip: `10.1.${n % 250}.${n % 200}` }],
      qosClass: "Burstable",
      startTime: started,
      conditions: [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
      ].map((type) => ({ type, status: "True", lastTransitionTime: started })),
      containerStatuses: [
        {
          name: "agent",
          ready: true,
          started: true,
          restartCount: 0,
          image: "gatehouse/agent:0.1.0",
          imageID: `sha256:${"a".repeat(64)}`,
          containerID: `containerd://${uid("ctr", n)}`,
          state: { running: { startedAt: started } },
        },
      ],
    },
  };
  return served(
    p,
    [
      ["gatehouse-controller", { "f:metadata": fieldsOf(p.metadata), "f:spec": fieldsOf(p.spec) }],
      ["kubelet", { "f:status": fieldsOf(p.status) }, "status"],
    ],
    false,
  );
}

interface Kind {
  name: string;
  make: (n: number) => Json;
  indexers?: Indexers<KubernetesObject>;
}

const KINDS: Kind[] = [
  {
    name: "AgentSession",
    make: session,
    indexers: GATEHOUSE_INDEXERS.sessions as Indexers<KubernetesObject>,
  },
  {
    name: "Approval",
    make: (n) => approval(n, PER_KIND),
    indexers: GATEHOUSE_INDEXERS.approvals as Indexers<KubernetesObject>,
  },
  {
    name: "Capability",
    make: capability,
    indexers: GATEHOUSE_INDEXERS.capabilities as Indexers<KubernetesObject>,
  },
  { name: "ProviderInstance", make: provider },
  { name: "Pod", make: pod, indexers: GATEHOUSE_INDEXERS.pods as Indexers<KubernetesObject> },
];

const log = pino({ level: "silent" });
const passed = (name: string) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
/** The pod transforms of the components, by name (the installation's `--pod-transform`). */
const POD_TRANSFORMS: Record<string, (object: KubernetesObject) => KubernetesObject> = {
  stripForCache,
  podForGateway: (object) => podForGateway(object as V1Pod) as KubernetesObject,
  podForController: (object) => podForController(object as V1Pod) as KubernetesObject,
};
/** The AgentSession transforms of the components, by name (the installation's `--session-transform`). */
const SESSION_TRANSFORMS: Record<string, (object: KubernetesObject) => KubernetesObject> = {
  stripForCache,
  sessionForGateway: (object) => sessionForGateway(object as AgentSession & KubernetesObject),
  sessionForController: (object) => sessionForController(object as AgentSession & KubernetesObject),
};
/**
 * The cache transform as it was before kube/runtime/cache-transform.ts rebuilt the metadata: the same
 * fields dropped with `delete`, which leaves V8 a dictionary-mode metadata object. The same-run baseline
 * of the `…Before` installations and of `strippedByDelete`.
 */
function stripByDelete(object: KubernetesObject): KubernetesObject {
  const metadata = object.metadata;
  if (!metadata) return object;
  delete metadata.managedFields;
  const annotations = metadata.annotations;
  if (annotations && LAST_APPLIED_ANNOTATION in annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _dropped, ...kept } = annotations;
    if (Object.keys(kept).length > 0) metadata.annotations = kept;
    else delete metadata.annotations;
  }
  return object;
}

const informer = (kind: Kind, transform: boolean | ((object: KubernetesObject) => KubernetesObject)) =>
  new Informer<KubernetesObject>(new KubeConfig(), {
    path: `/bench/${kind.name}`,
    log,
    resyncMs: 0,
    indexers: kind.indexers,
    ...(transform ? { transform: transform === true ? stripForCache : transform } : {}),
  });

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

/** Feeds `count` objects of `make` (each from its own JSON text) through a new informer's watch path. */
function fill(cache: Informer<KubernetesObject>, make: (n: number) => Json, count: number, from = 0): void {
  for (let n = from; n < from + count; n++) {
    cache.apply("ADDED", JSON.parse(JSON.stringify(make(n))) as KubernetesObject);
  }
}

/**
 * Each of `count` objects of `make` modified `times` times, as status writes reach a watch: every event
 * a new object parsed from its own text, replacing the cached one (the old one becomes garbage).
 */
function churn(
  cache: Informer<KubernetesObject>,
  make: (n: number) => Json,
  count: number,
  times: number,
): void {
  for (let round = 1; round <= times; round++) {
    for (let n = 0; n < count; n++) {
      const object = make(n) as { metadata: { resourceVersion: string } };
      object.metadata.resourceVersion = `${object.metadata.resourceVersion}${round}`;
      cache.apply("MODIFIED", JSON.parse(JSON.stringify(object)) as KubernetesObject);
    }
  }
}

/** This process's resident set now and its peak (VmHWM), in MiB. */
function residentMiB(): { rss: number; peak: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rss: round(kb("VmRSS") / 1024), peak: round(kb("VmHWM") / 1024) };
}

/** Heap bytes per cached object of `kind`, with or without the transform (or with the one given). */
function bytesPerObject(
  kind: Kind,
  transform: boolean | ((object: KubernetesObject) => KubernetesObject),
): number {
  const before = heapUsed();
  const cache = informer(kind, transform);
  fill(cache, kind.make, PER_KIND);
  const after = heapUsed();
  if (cache.size !== PER_KIND) throw new Error(`${kind.name}: cached ${cache.size} of ${PER_KIND}`);
  return Math.round((after - before) / PER_KIND);
}

function serializedBytes(kind: Kind, transform: boolean): number {
  let total = 0;
  for (let n = 0; n < 100; n++) {
    const object = JSON.parse(JSON.stringify(kind.make(n))) as KubernetesObject;
    total += serialize(transform ? stripForCache(object) : object).length;
  }
  return Math.round(total / 100);
}

function millis(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * One installation: every cache of one component, stripped and indexed as the programs keep them,
 * measured first so the process's RSS has not yet grown for the per-kind runs; then the lookup the
 * session controller and the gateway make most, by index and by the scan it replaced.
 */
function installation() {
  // The `…Before` variants: every object first stripped as before (stripByDelete), then the transform.
  const byDelete = process.argv.includes("--strip-by-delete");
  const before = (transform: (object: KubernetesObject) => KubernetesObject) =>
    byDelete ? (object: KubernetesObject) => transform(stripByDelete(object)) : transform;
  const rssBefore = process.memoryUsage().rss;
  const processBeforeMiB = round(rssBefore / MiB);
  const heapBefore = heapUsed();
  const started = process.hrtime.bigint();
  // The component's own session transform where the variant runs it (gateway/session-cache.ts,
  // controllers/session-cache.ts), else the whole object but managedFields.
  const sessionTransform = SESSION_TRANSFORMS[passed("--session-transform") ?? "stripForCache"];
  if (!sessionTransform) throw new Error(`no session transform ${passed("--session-transform")}`);
  const sessions = informer(KINDS[0]!, before(sessionTransform));
  const approvals = informer({ ...KINDS[1]!, make: (n) => approval(n, SESSIONS) }, before(stripForCache));
  fill(sessions, session, SESSIONS);
  fill(approvals, (n) => approval(n, SESSIONS), APPROVALS);
  const capabilities = informer(KINDS[2]!, before(stripForCache));
  fill(capabilities, capability, 200);
  const providers = informer(KINDS[3]!, before(stripForCache));
  fill(providers, provider, 20);
  // The component's own pod transform where the variant runs it (gateway/pod-cache.ts,
  // controllers/pod-cache.ts), else the whole pod but managedFields.
  const podTransform = POD_TRANSFORMS[passed("--pod-transform") ?? "stripForCache"];
  if (!podTransform) throw new Error(`no pod transform ${passed("--pod-transform")}`);
  const pods = informer(KINDS[4]!, before(podTransform));
  fill(pods, pod, SESSIONS);
  const fillSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const heapAfter = heapUsed();
  const rssAfter = process.memoryUsage().rss;
  // Then the watch's steady work: every session, Approval and pod modified 3 times.
  churn(sessions, session, SESSIONS, CHURN_ROUNDS);
  churn(approvals, (n) => approval(n, SESSIONS), APPROVALS, CHURN_ROUNDS);
  churn(pods, pod, SESSIONS, CHURN_ROUNDS);
  const afterChurn = residentMiB();
  const heapAfterChurn = heapUsed();
  const installation = {
    sessions: SESSIONS,
    approvals: APPROVALS,
    capabilities: 200,
    providers: 20,
    pods: SESSIONS,
    heapMiB: round((heapAfter - heapBefore) / MiB),
    rssGrowthMiB: round((rssAfter - rssBefore) / MiB),
    processRssBeforeMiB: processBeforeMiB,
    processRssMiB: round(rssAfter / MiB),
    targetRssMiB: 300,
    fillSeconds: round(fillSeconds, 2),
    churn: {
      eventsPerObject: CHURN_ROUNDS,
      rssMiB: afterChurn.rss,
      heapAfterGcMiB: round((heapAfterChurn - heapBefore) / MiB),
      peakRssMiB: afterChurn.peak,
    },
  };

  const caches = { approvals } as unknown as Caches;
  const lookups = 2_000;
  const sessionAt = (i: number) =>
    JSON.parse(JSON.stringify(session((i * 7919) % SESSIONS))) as {
      metadata: { namespace: string; uid: string };
    };
  const targets = Array.from({ length: lookups }, (_, i) => sessionAt(i));
  let found = 0;
  const indexedMs = millis(() => {
    for (const s of targets) found += approvalsOfSession(caches, s.metadata.namespace, s.metadata.uid).length;
  });
  let scanned = 0;
  const scanMs = millis(() => {
    for (const s of targets) {
      // As before the indexes: every cached Approval, then its namespace and session.
      scanned += approvals
        .list()
        .filter(
          (a) =>
            a.metadata?.namespace === s.metadata.namespace &&
            (a as unknown as { spec: { sessionRef: { uid: string } } }).spec.sessionRef.uid ===
              s.metadata.uid,
        ).length;
    }
  });
  if (found !== scanned) throw new Error(`the index found ${found} Approvals, the scan ${scanned}`);
  const approvalsOfASession = {
    lookups,
    indexedMicrosPerLookup: round((indexedMs * 1000) / lookups),
    scanMicrosPerLookup: round((scanMs * 1000) / lookups),
    speedup: round(scanMs / indexedMs),
  };

  return { installation, approvalsOfASession };
}

const program = (component: "gateway" | "controller") =>
  fileURLToPath(new URL(`../../operator/src/programs/${component}.ts`, import.meta.url));
const chartFlags = (component: "gateway" | "controller") =>
  chartNodeOptions(component).split(" ").filter(Boolean);
/**
 * V8 flags the installation is measured under, each in its own process, with a component's modules:
 * node's defaults on this machine, 2 MiB semi-spaces alone, and each component as the chart runs it
 * (its NODE_OPTIONS, the old space sized from its default memory limit, and its MALLOC_ARENA_MAX:
 * test/e2e/component-node-options.ts).
 */
const VARIANTS: Record<
  string,
  {
    flags: string[];
    program: string;
    env?: Record<string, string>;
    podTransform?: string;
    sessionTransform?: string;
    byDelete?: boolean;
  }
> = {
  default: { flags: [], program: program("gateway") },
  maxSemiSpace2MiB: { flags: ["--max-semi-space-size=2"], program: program("gateway") },
  // Each component as it caches (gateway/, controllers/ pod-cache.ts and session-cache.ts, the metadata
  // rebuilt by stripForCache), and as it did before (`…Before`: the fields `delete`d, no session
  // transform, the controller's pods whole), for the difference in one run.
  chartGateway: {
    flags: chartFlags("gateway"),
    program: program("gateway"),
    env: chartMallocEnv("gateway"),
    podTransform: "podForGateway",
    sessionTransform: "sessionForGateway",
  },
  chartGatewayBefore: {
    flags: chartFlags("gateway"),
    program: program("gateway"),
    env: chartMallocEnv("gateway"),
    podTransform: "podForGateway",
    byDelete: true,
  },
  chartController: {
    flags: chartFlags("controller"),
    program: program("controller"),
    env: chartMallocEnv("controller"),
    podTransform: "podForController",
    sessionTransform: "sessionForController",
  },
  chartControllerBefore: {
    flags: chartFlags("controller"),
    program: program("controller"),
    env: chartMallocEnv("controller"),
    byDelete: true,
  },
};

/**
 * The installation measured in a fresh process per variant, with the component program's modules
 * loaded (not started), so its RSS is what a component's would be before its servers and pools.
 */
function installations(): Record<string, unknown> {
  const measured: Record<string, unknown> = {};
  for (const [
    name,
    {
      flags,
      program,
      env = {},
      podTransform = "stripForCache",
      sessionTransform = "stripForCache",
      byDelete = false,
    },
  ] of Object.entries(VARIANTS)) {
    const args = [
      "--expose-gc",
      ...flags,
      "--import",
      program,
      fileURLToPath(import.meta.url),
      "--installation",
    ];
    const passed = [
      "--sessions",
      String(SESSIONS),
      "--approvals",
      String(APPROVALS),
      "--pod-transform",
      podTransform,
      "--session-transform",
      sessionTransform,
      ...(byDelete ? ["--strip-by-delete"] : []),
    ];
    const child = spawnSync(process.execPath, [...args, ...passed], {
      encoding: "utf8",
      env: { ...process.env, ...env },
    });
    const line = child.stdout.split("\n").find((l) => l.startsWith("RESULT "));
    if (child.status !== 0 || !line) throw new Error(`installation ${name} failed: ${child.stderr}`);
    measured[name] = {
      nodeFlags: flags,
      env,
      program: program.slice(program.indexOf("operator/")),
      podTransform,
      sessionTransform,
      stripTransform: byDelete ? "stripByDelete" : "stripForCache",
      ...(JSON.parse(line.slice("RESULT ".length)) as object),
    };
    console.log(`installation ${name}`, JSON.stringify(measured[name]));
  }
  return measured;
}

function main(): void {
  if (process.argv.includes("--installation")) {
    console.log(`RESULT ${JSON.stringify(installation())}`);
    return;
  }
  const oneInstallation = installations();
  const { approvalsOfASession } = oneInstallation.default as { approvalsOfASession: unknown };
  const perKind: Record<string, unknown> = {};
  for (const kind of KINDS) {
    // Alternating order: neither mode always runs on the heap the other left.
    const stripped = bytesPerObject(kind, true);
    const full = bytesPerObject(kind, false);
    const strippedByDelete = bytesPerObject(kind, stripByDelete);
    // A pod and a session as each component caches it (gateway/, controllers/ pod-cache.ts and
    // session-cache.ts).
    const own = { Pod: POD_TRANSFORMS, AgentSession: SESSION_TRANSFORMS }[kind.name] ?? {};
    const components = Object.fromEntries(
      Object.entries(own)
        .filter(([name]) => name !== "stripForCache")
        .map(([name, transform]) => [name, bytesPerObject(kind, transform)]),
    );
    const entry = {
      heapBytesPerObject: {
        full,
        stripped,
        saved: full - stripped,
        ratio: round(stripped / full, 3),
        strippedByDelete,
        ...components,
      },
      serializedBytesPerObject: { full: serializedBytes(kind, false), stripped: serializedBytes(kind, true) },
    };
    perKind[kind.name] = entry;
    console.log(kind.name, JSON.stringify(entry));
  }

  writeFileSync(
    RESULTS,
    `${JSON.stringify(
      {
        measuredAt: new Date().toISOString(),
        node: process.version,
        objectsPerKind: PER_KIND,
        perKind,
        installations: oneInstallation,
        approvalsOfSession: approvalsOfASession,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${RESULTS}`);
}

main();
