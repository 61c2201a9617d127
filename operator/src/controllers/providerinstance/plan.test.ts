/**
 * The ProviderInstance reconciler without a cluster: planProviderInstance and planHealthCheck over every
 * condition reason and transition a ProviderInstance can have (a table, one row each), and the applier
 * over the in-memory writer, counting what one pass applies, reads and writes.
 */
import type { Manifest } from "@gatehouse/provider-sdk";
import type { V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { describe, expect, it } from "vitest";
import type { Condition } from "../../api/common.ts";
import type { ProviderInstance } from "../../api/kinds.ts";
import { metaTimeOf } from "../../kube/runtime/conditions.ts";
import { inMemoryProviderInstanceWriter } from "./in-memory-writer.ts";
import {
  HEALTH_INTERVAL_MS,
  type HealthObservation,
  type ManifestFetch,
  observationsFor,
  type PlannedLog,
  type ProviderInstancePlanInput,
  type ProviderInstanceSettings,
  type ProviderInstanceStatus,
  planHealthCheck,
  planProviderInstance,
  WAITING_INTERVAL_MS,
} from "./plan.ts";
import { applyProviderInstance, type ManifestSource, type ProviderInstanceReads } from "./reconciler.ts";

const NOW = new Date("2026-12-01T10:00:00.250Z");
const EARLIER = "2026-12-01T09:00:00Z";
const ENDPOINT = "http://10.88.0.9:8080";
const SETTINGS: ProviderInstanceSettings = {
  providerPort: 8080,
  gatewayUrl: "http://gatehouse.gatehouse-system:8443",
  operatorNamespace: "gatehouse-system",
  watchNamespaces: [],
};

const MANIFEST: Manifest = {
  provider: "aps",
  version: "1.2.0",
  requiresIdentity: true,
  capabilities: [
    {
      id: "aps.schedule.read",
      description: "Reads the schedule.",
      effect: "read",
      mode: "sync",
      idempotency: "natural",
      inputSchema: { type: "object" },
      outputSchema: { type: "object" },
    },
    {
      id: "aps.schedule.publish",
      description: "Publishes a plan.",
      effect: "write",
      mode: "sync",
      idempotency: "key",
      inputSchema: { type: "object", properties: { planId: { type: "string" } } },
      outputSchema: { type: "object" },
    },
  ],
};
const OLD_MANIFEST = {
  provider: "aps",
  version: "1.1.0",
  requiresIdentity: true,
  capabilities: [],
} satisfies ProviderInstanceStatus["manifest"];

function providerOf(
  options: {
    disabled?: boolean;
    placement?: "Shared" | "Sidecar";
    replicas?: number;
    namespace?: string;
    deleting?: boolean;
    status?: ProviderInstanceStatus;
  } = {},
): ProviderInstance {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: {
      name: "aps",
      namespace: options.namespace ?? "plant-a",
      uid: "prov-uid-1",
      generation: 3,
      resourceVersion: "11",
      ...(options.deleting ? { deletionTimestamp: "2026-12-01T09:59:00Z" } : {}),
    },
    spec: {
      type: "aps",
      image: "gatehouse/provider-aps:dev",
      placement: options.placement ?? "Shared",
      replicas: options.replicas ?? 2,
      ...(options.disabled ? { disabled: true } : {}),
    },
    ...(options.status ? { status: options.status } : {}),
  } as ProviderInstance;
}

const condition = (type: string, status: "True" | "False", reason: string): Condition => ({
  type,
  status,
  reason,
  message: `${reason} before`,
  observedGeneration: 2,
  lastTransitionTime: EARLIER,
});

/** A pod of provider `provider` whose container waits for `reason`. */
const waitingPod = (name: string, provider: string, reason: string, message?: string): V1Pod => ({
  metadata: { name, labels: { "gatehouse.dev/provider": provider, "pod-template-hash": "5d9f" } },
  status: { containerStatuses: [{ name: "provider", state: { waiting: { reason, message } } }] } as never,
});

const fetched: ManifestFetch = { endpoint: ENDPOINT, manifest: MANIFEST };
const refused: ManifestFetch = {
  endpoint: ENDPOINT,
  error: new Error("connect ECONNREFUSED 10.88.0.9:8080"),
};
const noEndpoints = (pods: V1Pod[] = []): HealthObservation => ({ endpoints: [], pods });
const answered = (manifest: ManifestFetch): HealthObservation => ({ endpoints: [ENDPOINT], manifest });

/** What a row expects of one condition: type, status, reason, and words of its message. */
interface ExpectedCondition {
  type: "Ready" | "Healthy";
  status: "True" | "False";
  reason: string;
  message?: RegExp;
  /** Whether lastTransitionTime moved to now (default: it did, unless the row started from a condition). */
  transitioned?: boolean;
  /** Left as it was: this pass did not set it. */
  kept?: boolean;
}

/** One pass as the applier makes it: the first plan, and the health check when it applies the workload. */
function planPass(input: ProviderInstancePlanInput, observed: HealthObservation | undefined) {
  const plan = planProviderInstance(input);
  if (!plan.apply) return { apply: undefined, status: plan.status, requeueAfterMs: undefined, log: [] };
  if (!observed) throw new Error("the row applies the workload: give it what the health check observed");
  return { apply: plan.apply, ...planHealthCheck(input, observed) };
}

describe("a ProviderInstance pass: conditions, applied objects, requeue", () => {
  const rows: Array<{
    name: string;
    provider: ProviderInstance;
    settings?: Partial<ProviderInstanceSettings>;
    observed?: HealthObservation;
    /** The conditions as written, by type (all of them). */
    conditions: ExpectedCondition[] | undefined;
    /** The kinds applied, in order; none when absent. */
    applied?: string[];
    requeueAfterMs: number | undefined;
    endpoints?: string[];
    manifestVersion?: string;
    log?: string[];
  }> = [
    {
      name: "NoReadyEndpoints: no provider pod is ready yet, and none says why (containers being created)",
      provider: providerOf(),
      observed: noEndpoints([waitingPod("prov-aps-1", "aps", "ContainerCreating")]),
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "NoReadyEndpoints",
          message: /^No provider pod is ready yet\.$/,
        },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [],
    },
    {
      name: "NoReadyEndpoints: the message says what the provider's pods wait for, not another provider's",
      provider: providerOf(),
      observed: noEndpoints([
        waitingPod("prov-aps-1", "aps", "ImagePullBackOff", "Back-off pulling image"),
        waitingPod("prov-erp-1", "erp", "CrashLoopBackOff"),
      ]),
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "NoReadyEndpoints",
          message:
            /^No provider pod is ready yet\. pod prov-aps-1, container provider waits: ImagePullBackOff \(Back-off pulling image\)\.$/,
        },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [],
    },
    {
      name: "ManifestFetched / ManifestAnswered: the provider answered its manifest (Ready, Healthy)",
      provider: providerOf(),
      observed: answered(fetched),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered", message: /answered \/v1\/manifest/ },
        {
          type: "Ready",
          status: "True",
          reason: "ManifestFetched",
          message: /^Provider aps 1\.2\.0 offers 2 capabilities\.$/,
        },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: HEALTH_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.2.0",
    },
    {
      name: "ManifestUnavailable: GET /v1/manifest failed (Ready and Healthy False, the last manifest kept, logged)",
      provider: providerOf({ status: { manifest: OLD_MANIFEST } }),
      observed: answered(refused),
      conditions: [
        {
          type: "Healthy",
          status: "False",
          reason: "ManifestUnavailable",
          message: /^GET \/v1\/manifest at http:\/\/10\.88\.0\.9:8080 failed: connect ECONNREFUSED/,
        },
        {
          type: "Ready",
          status: "False",
          reason: "ManifestUnavailable",
          message: /^GET \/v1\/manifest at http:\/\/10\.88\.0\.9:8080 failed: connect ECONNREFUSED/,
        },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.1.0",
      log: ["warn/provider manifest unavailable"],
    },
    {
      name: "Disabled over ManifestFetched: Ready=False, Healthy stays True, the manifest recorded",
      provider: providerOf({ disabled: true }),
      observed: answered(fetched),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered" },
        {
          type: "Ready",
          status: "False",
          reason: "Disabled",
          message: /^spec\.disabled is set: new calls are refused; the workloads are kept\.$/,
        },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: HEALTH_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.2.0",
    },
    {
      name: "Disabled over NoReadyEndpoints: the workload is still applied, looked at again soon",
      provider: providerOf({ disabled: true }),
      observed: noEndpoints(),
      conditions: [{ type: "Ready", status: "False", reason: "Disabled", message: /spec\.disabled/ }],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [],
    },
    {
      name: "Disabled over ManifestUnavailable: Healthy=False ManifestUnavailable stays",
      provider: providerOf({ disabled: true }),
      observed: answered(refused),
      conditions: [
        { type: "Healthy", status: "False", reason: "ManifestUnavailable", message: /ECONNREFUSED/ },
        { type: "Ready", status: "False", reason: "Disabled", message: /spec\.disabled/ },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [ENDPOINT],
      log: ["warn/provider manifest unavailable"],
    },
    {
      name: "NamespaceNotServed: nothing applied, no endpoint listed, no requeue; Healthy left as it was",
      provider: providerOf({
        namespace: "plant-b",
        status: {
          conditions: [
            condition("Healthy", "True", "ManifestAnswered"),
            condition("Ready", "True", "ManifestFetched"),
          ],
          endpoints: [ENDPOINT],
          manifest: OLD_MANIFEST,
        },
      }),
      settings: { watchNamespaces: ["plant-a", "plant-c"] },
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered", transitioned: false, kept: true },
        {
          type: "Ready",
          status: "False",
          reason: "NamespaceNotServed",
          transitioned: true,
          message:
            /only in namespaces plant-a, plant-c .*not in plant-b: ask the platform team to add plant-b/,
        },
      ],
      requeueAfterMs: undefined,
      endpoints: [],
      manifestVersion: "1.1.0",
    },
    {
      name: "NamespaceNotServed wins over Disabled (nothing is checked there)",
      provider: providerOf({ namespace: "plant-b", disabled: true }),
      settings: { watchNamespaces: ["plant-a"] },
      conditions: [{ type: "Ready", status: "False", reason: "NamespaceNotServed", message: /plant-b/ }],
      requeueAfterMs: undefined,
      endpoints: [],
    },
    {
      name: "being deleted: nothing applied, nothing written (owner references clean up)",
      provider: providerOf({ deleting: true }),
      conditions: undefined,
      requeueAfterMs: undefined,
    },
    {
      name: "NoReadyEndpoints → ManifestFetched: Ready turns True (transition time moves), endpoints listed",
      provider: providerOf({
        status: { conditions: [condition("Ready", "False", "NoReadyEndpoints")], endpoints: [] },
      }),
      observed: answered(fetched),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered" },
        { type: "Ready", status: "True", reason: "ManifestFetched", transitioned: true },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: HEALTH_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.2.0",
    },
    {
      name: "ManifestFetched → ManifestUnavailable: both turn False (transition times move)",
      provider: providerOf({
        status: {
          conditions: [
            condition("Healthy", "True", "ManifestAnswered"),
            condition("Ready", "True", "ManifestFetched"),
          ],
          manifest: OLD_MANIFEST,
        },
      }),
      observed: answered(refused),
      conditions: [
        { type: "Healthy", status: "False", reason: "ManifestUnavailable", transitioned: true },
        { type: "Ready", status: "False", reason: "ManifestUnavailable", transitioned: true },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.1.0",
      log: ["warn/provider manifest unavailable"],
    },
    {
      name: "ManifestFetched → ManifestFetched (a later health check): transition times kept",
      provider: providerOf({
        status: {
          conditions: [
            condition("Healthy", "True", "ManifestAnswered"),
            condition("Ready", "True", "ManifestFetched"),
          ],
        },
      }),
      observed: answered(fetched),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered", transitioned: false },
        { type: "Ready", status: "True", reason: "ManifestFetched", transitioned: false },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: HEALTH_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.2.0",
    },
    {
      name: "ManifestFetched → NoReadyEndpoints: Ready turns False, Healthy is left as the last check that reached it",
      provider: providerOf({
        status: {
          conditions: [
            condition("Healthy", "True", "ManifestAnswered"),
            condition("Ready", "True", "ManifestFetched"),
          ],
          endpoints: [ENDPOINT],
          manifest: OLD_MANIFEST,
        },
      }),
      observed: noEndpoints(),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered", transitioned: false, kept: true },
        { type: "Ready", status: "False", reason: "NoReadyEndpoints", transitioned: true },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [],
      manifestVersion: "1.1.0",
    },
    {
      name: "Disabled → Disabled over ManifestFetched: Ready's transition time kept (no True on the way)",
      provider: providerOf({
        disabled: true,
        status: {
          conditions: [
            condition("Healthy", "True", "ManifestAnswered"),
            condition("Ready", "False", "Disabled"),
          ],
          endpoints: [ENDPOINT],
        },
      }),
      observed: answered(fetched),
      conditions: [
        { type: "Healthy", status: "True", reason: "ManifestAnswered", transitioned: false },
        { type: "Ready", status: "False", reason: "Disabled", transitioned: false },
      ],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: HEALTH_INTERVAL_MS,
      endpoints: [ENDPOINT],
      manifestVersion: "1.2.0",
    },
    {
      name: "Disabled → Disabled with no ready endpoint: Ready's transition time kept",
      provider: providerOf({
        disabled: true,
        status: { conditions: [condition("Ready", "False", "Disabled")] },
      }),
      observed: noEndpoints(),
      conditions: [{ type: "Ready", status: "False", reason: "Disabled", transitioned: false }],
      applied: ["Deployment", "Service", "NetworkPolicy"],
      requeueAfterMs: WAITING_INTERVAL_MS,
      endpoints: [],
    },
  ];

  for (const row of rows) {
    it(row.name, () => {
      const input = { provider: row.provider, settings: { ...SETTINGS, ...row.settings }, now: NOW };
      const pass = planPass(input, row.observed);
      const conditions = pass.status?.conditions;
      expect(conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual(
        row.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`),
      );
      for (const expected of row.conditions ?? []) {
        const actual = conditions?.find((c) => c.type === expected.type);
        if (expected.message) expect(actual?.message).toMatch(expected.message);
        const previous = row.provider.status?.conditions?.some((c) => c.type === expected.type);
        const moved = expected.transitioned ?? !previous;
        expect(actual?.lastTransitionTime, `${expected.type} transition`).toBe(
          moved ? metaTimeOf(NOW) : EARLIER,
        );
        // A condition the pass set is at this generation; one it left keeps what it had.
        const before = row.provider.status?.conditions?.find((c) => c.type === expected.type);
        if (expected.kept) expect(actual).toEqual(before);
        else expect(actual?.observedGeneration).toBe(row.provider.metadata.generation);
      }
      expect(pass.apply ? Object.values(pass.apply).map((o) => o.kind) : undefined).toEqual(row.applied);
      expect(pass.requeueAfterMs).toBe(row.requeueAfterMs);
      expect(pass.status?.endpoints).toEqual(row.endpoints);
      expect(pass.status?.manifest?.version).toBe(row.manifestVersion);
      expect(pass.log.map((l: PlannedLog) => `${l.level}/${l.message}`)).toEqual(row.log ?? []);
      if (pass.status) expect(pass.status.observedGeneration).toBe(row.provider.metadata.generation);
      // Only a health check records when it ran.
      expect(pass.status?.lastHealthCheck).toBe(
        pass.apply ? NOW.toISOString() : row.provider.status?.lastHealthCheck,
      );
    });
  }
});

describe("planProviderInstance: the applied workload", () => {
  const applied = (provider: ProviderInstance) => {
    const plan = planProviderInstance({ provider, settings: SETTINGS, now: NOW });
    if (!plan.apply) throw new Error("nothing applied");
    return plan.apply;
  };

  it("runs a Shared provider's replicas, a Sidecar provider's single discovery replica", () => {
    expect(applied(providerOf({ replicas: 3 })).deployment.spec?.replicas).toBe(3);
    expect(applied(providerOf({ placement: "Sidecar", replicas: 3 })).deployment.spec?.replicas).toBe(1);
  });

  it("names the objects prov-<name> in the provider's namespace, owned by it, on the provider port", () => {
    const { deployment, service, networkPolicy } = applied(providerOf());
    for (const object of [deployment, service, networkPolicy]) {
      expect(object.metadata).toMatchObject({
        name: "prov-aps",
        namespace: "plant-a",
        ownerReferences: [{ kind: "ProviderInstance", uid: "prov-uid-1", controller: true }],
      });
    }
    expect(service.spec?.ports).toEqual([{ name: "http", port: 8080, targetPort: 8080 }]);
    expect(networkPolicy.spec?.ingress?.[0]?.ports).toEqual([{ protocol: "TCP", port: 8080 }]);
  });

  it("serves every namespace when WATCH_NAMESPACES is empty, and only those listed otherwise", () => {
    const inNamespace = (namespace: string, watchNamespaces: string[]) =>
      planProviderInstance({
        provider: providerOf({ namespace }),
        settings: { ...SETTINGS, watchNamespaces },
        now: NOW,
      }).apply !== undefined;
    expect(inNamespace("anywhere", [])).toBe(true);
    expect(inNamespace("plant-a", ["plant-a"])).toBe(true);
    expect(inNamespace("plant-b", ["plant-a"])).toBe(false);
  });
});

describe("planHealthCheck", () => {
  const input = { provider: providerOf(), settings: SETTINGS, now: NOW };

  it("records the manifest's capabilities with their schema digests", () => {
    const { status } = planHealthCheck(input, answered(fetched));
    expect(status.manifest).toMatchObject({ provider: "aps", version: "1.2.0", requiresIdentity: true });
    expect(status.manifest?.capabilities.map((c) => [c.id, c.effect, c.mode, c.idempotency])).toEqual([
      ["aps.schedule.read", "read", "sync", "natural"],
      ["aps.schedule.publish", "write", "sync", "key"],
    ]);
    const digests = status.manifest?.capabilities.map((c) => c.schemaDigest) ?? [];
    expect(digests[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(digests[0]).not.toBe(digests[1]);
  });

  it("keeps the rest of the status it does not set", () => {
    const provider = providerOf({ status: { manifest: OLD_MANIFEST, lastHealthCheck: EARLIER } });
    const { status } = planHealthCheck({ ...input, provider }, noEndpoints());
    expect(status).toMatchObject({
      manifest: OLD_MANIFEST,
      lastHealthCheck: NOW.toISOString(),
      endpoints: [],
    });
  });

  it("throws when a read observationsFor asks for is missing", () => {
    expect(() => planHealthCheck(input, { endpoints: [] })).toThrow(/the pods/);
    expect(() => planHealthCheck(input, { endpoints: [ENDPOINT] })).toThrow(/the manifest fetch/);
  });
});

describe("observationsFor", () => {
  it("reads the pods when no endpoint is ready, else fetches the manifest from the first", () => {
    expect(observationsFor([])).toEqual({ manifestFrom: undefined, pods: true });
    expect(observationsFor([ENDPOINT, "http://10.88.0.10:8080"])).toEqual({
      manifestFrom: ENDPOINT,
      pods: false,
    });
  });
});

describe("the applier over the in-memory writer", () => {
  const quiet = { info() {}, warn() {}, error() {} } as unknown as Logger;

  /** A slice the EndpointSlice controller keeps for Service prov-aps of uid `uid`. */
  const sliceOf = (uid: string, ip: string): V1EndpointSlice => ({
    addressType: "IPv4",
    metadata: {
      labels: {
        "kubernetes.io/service-name": "prov-aps",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
      },
      ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "prov-aps", uid, controller: true }],
    },
    ports: [{ name: "http", port: 8080 }],
    endpoints: [{ addresses: [ip], conditions: { ready: true } }],
  });

  /** Reads over fixed slices and pods, counting what was read and fetched. */
  function readsOf(slices: V1EndpointSlice[], source: ManifestSource) {
    const seen: string[] = [];
    const reads: ProviderInstanceReads = {
      endpointSlices: (ns) => {
        seen.push(`slices ${ns}`);
        return slices;
      },
      pods: (ns) => {
        seen.push(`pods ${ns}`);
        return [];
      },
      manifests: {
        fetchManifest: (endpoint) => {
          seen.push(`fetch ${endpoint}`);
          return source.fetchManifest(endpoint);
        },
      },
    };
    return { reads, seen };
  }
  const answering: ManifestSource = { fetchManifest: async () => MANIFEST };
  const failing: ManifestSource = {
    fetchManifest: async () => {
      throw new Error("timeout after 5000 ms");
    },
  };

  it("applies the workload, then fetches from the applied Service's endpoint (not a forged slice's), then writes", async () => {
    const writer = inMemoryProviderInstanceWriter({ uids: { Service: "svc-uid-1" } });
    const { reads, seen } = readsOf(
      [sliceOf("svc-uid-0", "10.99.0.66"), sliceOf("svc-uid-1", "10.88.0.9")],
      answering,
    );
    const result = await applyProviderInstance(
      writer,
      reads,
      { provider: providerOf(), settings: SETTINGS, now: NOW },
      quiet,
    );
    expect(result).toEqual({ requeueAfterMs: HEALTH_INTERVAL_MS });
    expect(writer.calls.map((c) => c.kind)).toEqual(["apply", "apply", "apply", "writeStatus"]);
    expect(writer.applied()).toEqual(["Deployment", "Service", "NetworkPolicy"]);
    expect(seen).toEqual(["slices plant-a", `fetch ${ENDPOINT}`]);
    expect(writer.statusWrites()[0]?.endpoints).toEqual([ENDPOINT]);
  });

  it("reads the pods, and fetches nothing, while no endpoint is ready", async () => {
    const writer = inMemoryProviderInstanceWriter();
    const { reads, seen } = readsOf([], answering);
    const result = await applyProviderInstance(
      writer,
      reads,
      { provider: providerOf(), settings: SETTINGS, now: NOW },
      quiet,
    );
    expect(result).toEqual({ requeueAfterMs: WAITING_INTERVAL_MS });
    expect(seen).toEqual(["slices plant-a", "pods plant-a"]);
    expect(writer.statusWrites()[0]?.conditions?.map((c) => c.reason)).toEqual(["NoReadyEndpoints"]);
  });

  it("turns a failed fetch into ManifestUnavailable and a warning, not an error", async () => {
    const writer = inMemoryProviderInstanceWriter({ uids: { Service: "svc-uid-1" } });
    const { reads } = readsOf([sliceOf("svc-uid-1", "10.88.0.9")], failing);
    const warnings: unknown[] = [];
    const log = { ...quiet, warn: (fields: unknown, message: string) => warnings.push([fields, message]) };
    const result = await applyProviderInstance(
      writer,
      reads,
      { provider: providerOf(), settings: SETTINGS, now: NOW },
      log as unknown as Logger,
    );
    expect(result).toEqual({ requeueAfterMs: WAITING_INTERVAL_MS });
    expect(warnings).toEqual([
      [
        { endpoint: ENDPOINT, err: `GET /v1/manifest at ${ENDPOINT} failed: timeout after 5000 ms` },
        "provider manifest unavailable",
      ],
    ]);
    expect(writer.statusWrites()[0]?.conditions?.map((c) => `${c.type}/${c.reason}`)).toEqual([
      "Healthy/ManifestUnavailable",
      "Ready/ManifestUnavailable",
    ]);
  });

  it("writes only the status outside the served namespaces, reading nothing, and not again when unchanged", async () => {
    const writer = inMemoryProviderInstanceWriter();
    const { reads, seen } = readsOf([], answering);
    const input = {
      provider: providerOf(),
      settings: { ...SETTINGS, watchNamespaces: ["plant-z"] },
      now: NOW,
    };
    expect(await applyProviderInstance(writer, reads, input, quiet)).toBeUndefined();
    expect(writer.calls.map((c) => c.kind)).toEqual(["writeStatus"]);
    expect(seen).toEqual([]);
    const written = { ...input.provider, status: writer.statusWrites()[0] };
    await applyProviderInstance(writer, reads, { ...input, provider: written }, quiet);
    expect(writer.statusWrites()).toHaveLength(1);
  });

  it("writes nothing on a repeat at the same instant over what it wrote", async () => {
    const writer = inMemoryProviderInstanceWriter({ uids: { Service: "svc-uid-1" } });
    const { reads } = readsOf([sliceOf("svc-uid-1", "10.88.0.9")], answering);
    const input = { provider: providerOf(), settings: SETTINGS, now: NOW };
    await applyProviderInstance(writer, reads, input, quiet);
    const written = { ...input.provider, status: writer.statusWrites()[0] };
    await applyProviderInstance(writer, reads, { ...input, provider: written }, quiet);
    expect(writer.statusWrites()).toHaveLength(1);
    expect(writer.applied()).toHaveLength(6);
  });

  it("does nothing for a provider being deleted", async () => {
    const writer = inMemoryProviderInstanceWriter();
    const { reads, seen } = readsOf([], answering);
    const input = { provider: providerOf({ deleting: true }), settings: SETTINGS, now: NOW };
    expect(await applyProviderInstance(writer, reads, input, quiet)).toBeUndefined();
    expect(writer.calls).toEqual([]);
    expect(seen).toEqual([]);
  });
});
