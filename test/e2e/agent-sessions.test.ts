/**
 * The AgentSession controller on the real control plane and local node (DESIGN §7): the agent
 * pod it creates is hardened field by field and admitted under Pod Security `restricted`; the session
 * follows its pod to Completed, retries a failing pod and then fails with a reason, honours
 * `spec.cancel`, and cancels its Pending Approvals before it may be deleted. The namespace's agent
 * NetworkPolicy is the operator's: edited, narrowed, deleted or there before, it is restored.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultSessionCeilings } from "../../operator/src/core/limits.ts";
import { clusterInfo } from "./cluster-info.ts";
import { createAliceSession } from "./core-agent.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually, pendingApprovalOf } from "./story.ts";

interface SessionObject {
  metadata: { name: string; uid: string; finalizers?: string[] };
  status?: {
    phase?: string;
    result?: string;
    podName?: string;
    podUID?: string;
    attempt?: number;
    podFailures?: Array<{ podName: string; reason: string; exitCode?: number }>;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
    effectiveLimits?: Record<string, number>;
  };
}

let env: Environment;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

/**
 * A fresh namespace with `labels` where alice holds the session-user persona (as the plant-a overlay of
 * examples/gitops grants it); returns its name.
 */
async function sessionNamespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const namespace = `${prefix}-${randomBytes(3).toString("hex")}`;
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace, labels } },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: "session-users", namespace },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: "gatehouse-session-user",
          },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
        },
      ],
    }),
  );
  return namespace;
}

/** Creates, as alice, a session in `namespace` asking `model`; returns its name. */
async function createSession(
  namespace: string,
  model: string,
  prefix: string,
  name = `${prefix}-${randomBytes(3).toString("hex")}`,
): Promise<string> {
  await createAliceSession(env, namespace, name, {
    model: { name: model },
    messages: [{ text: "Push next week's production plan back by one day." }],
  });
  return name;
}

interface EventObject {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string };
}

/** The Events recorded about `kind/name`, oldest first. */
async function eventsOf(namespace: string, kind: string, name: string): Promise<EventObject[]> {
  const events = await env.kubectl.json<{ items: EventObject[] }>("admin", [
    "get",
    "events",
    "-n",
    namespace,
    "--field-selector",
    `involvedObject.name=${name}`,
    "--sort-by=.lastTimestamp",
  ]);
  return events.items.filter((e) => e.involvedObject.kind === kind);
}

/** Reasons of the Events recorded about `kind/name`, oldest first. */
async function eventReasons(namespace: string, kind: string, name: string): Promise<string[]> {
  return (await eventsOf(namespace, kind, name)).map((e) => e.reason);
}

/** The Events recorded about AgentSession `name`, oldest first. */
function sessionEvents(namespace: string, name: string): Promise<EventObject[]> {
  return eventsOf(namespace, "AgentSession", name);
}

function getSession(namespace: string, name: string): Promise<SessionObject> {
  return env.kubectl.json<SessionObject>("admin", ["get", "agentsession", name, "-n", namespace]);
}

async function sessionInPhase(namespace: string, name: string, phase: string, timeoutMs = 180_000) {
  return eventually(`session ${name} to be ${phase}`, timeoutMs, async () => {
    const session = await getSession(namespace, name);
    return session.status?.phase === phase ? session : undefined;
  });
}

describe("the agent pod", () => {
  let namespace: string;
  let session: SessionObject;
  let pod: V1Pod;
  let phases: string[];

  beforeAll(async () => {
    namespace = await sessionNamespace("hardened", {
      "pod-security.kubernetes.io/enforce": "restricted",
      "pod-security.kubernetes.io/enforce-version": "latest",
    });
    const name = `hardened-${randomBytes(3).toString("hex")}`;
    await createSession(namespace, "scripted/answer", "hardened", name);
    // Poll rather than sleep: every phase seen until Completed.
    phases = [];
    session = await eventually(`session ${name} to be Completed`, 180_000, async () => {
      const current = await getSession(namespace, name);
      const phase = current.status?.phase;
      if (phase && phases.at(-1) !== phase) phases.push(phase);
      return phase === "Completed" ? current : undefined;
    });
    pod = await env.kubectl.json<V1Pod>("admin", [
      "get",
      "pod",
      session.status?.podName ?? "",
      "-n",
      namespace,
    ]);
  }, 300_000);

  afterAll(async () => {
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });

  it("is admitted under Pod Security restricted and runs the session to Completed", () => {
    // The session followed its pod: Running while the agent worked, then Completed.
    expect(phases).toContain("Running");
    expect(phases.at(-1)).toBe("Completed");
    expect(phases.indexOf("Running")).toBeLessThan(phases.lastIndexOf("Completed"));
    expect(pod.metadata?.namespace).toBe(namespace);
    expect(pod.status?.phase).toBe("Succeeded");
    expect(session.status?.result).toBeTruthy();
    expect(session.status?.podUID).toBe(pod.metadata?.uid);
    expect(session.metadata.finalizers).toContain("gatehouse.dev/cancel-approvals");
  });

  it("records Events on the session for its pod and its end", async () => {
    const reasons = await eventually("the session's Events", 30_000, async () => {
      const r = await eventReasons(namespace, "AgentSession", session.metadata.name);
      return r.includes("SessionCompleted") ? r : undefined;
    });
    // Event timestamps have whole seconds, so two Events of one second list in either order.
    expect([...reasons].sort()).toEqual(["AgentPodCreated", "SessionCompleted"]);
  });

  it("has a deterministic name and a controlling owner reference to its session", () => {
    expect(pod.metadata?.name).toBe(`${session.metadata.name}-agent-1`);
    const owner = pod.metadata?.ownerReferences?.[0];
    expect(owner).toMatchObject({
      kind: "AgentSession",
      name: session.metadata.name,
      uid: session.metadata.uid,
    });
    expect(owner?.controller).toBe(true);
    expect(pod.metadata?.labels?.["gatehouse.dev/session-uid"]).toBe(session.metadata.uid);
  });

  it("runs as the RBAC-less gatehouse-agent ServiceAccount without its API token", async () => {
    expect(pod.spec?.serviceAccountName).toBe("gatehouse-agent");
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.enableServiceLinks).toBe(false);
    const account = await env.kubectl.json<{ automountServiceAccountToken?: boolean }>("admin", [
      "get",
      "serviceaccount",
      "gatehouse-agent",
      "-n",
      namespace,
    ]);
    expect(account.automountServiceAccountToken).toBe(false);
    const bindings = await env.kubectl.json<{
      items: Array<{ subjects?: Array<{ kind: string; name: string }> }>;
    }>("admin", ["get", "rolebindings", "-n", namespace]);
    expect(bindings.items.flatMap((b) => b.subjects ?? []).some((s) => s.name === "gatehouse-agent")).toBe(
      false,
    );
  });

  it("holds only a projected token for audience gatehouse, bound to the pod", () => {
    expect(pod.spec?.volumes).toHaveLength(1);
    const token = pod.spec?.volumes?.[0]?.projected?.sources?.[0]?.serviceAccountToken;
    expect(token).toMatchObject({ audience: "gatehouse", path: "token" });
    expect(token?.expirationSeconds).toBe(600);
    expect(pod.spec?.volumes?.some((v) => v.hostPath || v.secret)).toBe(false);
  });

  it("drops every privilege at pod level", () => {
    expect(pod.spec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(pod.spec?.hostNetwork ?? false).toBe(false);
    expect(pod.spec?.hostPID ?? false).toBe(false);
    expect(pod.spec?.hostIPC ?? false).toBe(false);
  });

  it("drops every privilege at container level and bounds its resources", () => {
    expect(pod.spec?.containers).toHaveLength(1);
    const container = pod.spec?.containers[0];
    expect(container?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container?.securityContext?.privileged ?? false).toBe(false);
    expect(container?.resources?.limits).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container?.resources?.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container?.env?.some((e) => e.valueFrom?.secretKeyRef)).toBe(false);
    expect(container?.envFrom ?? []).toEqual([]);
  });

  it("never restarts in place and ends by the session's remaining timeout", () => {
    expect(pod.spec?.restartPolicy).toBe("Never");
    expect(pod.spec?.activeDeadlineSeconds).toBeGreaterThan(0);
    expect(pod.spec?.activeDeadlineSeconds).toBeLessThanOrEqual(3600);
  });

  it("is confined by the namespace's gatehouse-agent NetworkPolicy: egress to the gateway and DNS only", async () => {
    const policy = await env.kubectl.json<V1NetworkPolicy>("admin", [
      "get",
      "networkpolicy",
      "gatehouse-agent",
      "-n",
      namespace,
    ]);
    expect(policy.spec?.podSelector?.matchLabels).toEqual({ "app.kubernetes.io/name": "gatehouse-agent" });
    expect(policy.spec?.policyTypes).toEqual(["Ingress", "Egress"]);
    // Ingress only from the operator's pods, only to the Sidecar providers' ports.
    expect(policy.spec?.ingress).toHaveLength(1);
    expect(policy.spec?.ingress?.[0]?.ports).toEqual([{ protocol: "TCP", port: 18080, endPort: 18099 }]);
    const peers = policy.spec?.egress?.flatMap((rule) => rule.to ?? []) ?? [];
    // The gateway's pods, the gateway this environment runs on the host (OFF_CLUSTER_GATEWAYS), DNS.
    expect(
      peers.map((p) => p.ipBlock?.cidr ?? p.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"]),
    ).toEqual(["gatehouse-system", `${env.cluster.bridgeIP}/32`, "kube-system"]);
  });
});

describe("the agent NetworkPolicy", () => {
  /** A session of NAMESPACE waiting for a decision: it runs, so its reconciles keep the policy. */
  let waiting: string;
  /** The policy's spec as the operator wrote it. */
  let written: V1NetworkPolicy["spec"];

  const policyOf = (namespace: string) =>
    env.kubectl.json<V1NetworkPolicy>("admin", ["get", "networkpolicy", "gatehouse-agent", "-n", namespace]);
  /** Waits until `namespace`'s agent NetworkPolicy has the spec the operator writes again. */
  const restored = (namespace: string, what: string) =>
    eventually(`the agent NetworkPolicy of ${namespace} restored after ${what}`, 60_000, async () => {
      const policy = await policyOf(namespace).catch(() => undefined);
      return policy && JSON.stringify(policy.spec) === JSON.stringify(written) ? policy : undefined;
    });
  /** Patches NAMESPACE's agent NetworkPolicy as an administrator would; returns the patched object. */
  const patchPolicy = async (patch: unknown[]): Promise<V1NetworkPolicy> =>
    JSON.parse(
      (
        await env.kubectl.ok("admin", [
          "patch",
          "networkpolicy",
          "gatehouse-agent",
          "-n",
          NAMESPACE,
          "--type=json",
          "-p",
          JSON.stringify(patch),
          "-o",
          "json",
        ])
      ).stdout,
    );

  beforeAll(async () => {
    waiting = await createSession(NAMESPACE, "scripted/reference-story", "netpol");
    await sessionInPhase(NAMESPACE, waiting, "AwaitingApproval");
    written = (await policyOf(NAMESPACE)).spec;
    expect(written?.egress?.length).toBe(3); // the gateway's pods, the host's gateway, DNS
  }, 240_000);

  afterAll(async () => {
    await env.kubectl.run("admin", [
      "patch",
      "agentsession",
      waiting,
      "-n",
      NAMESPACE,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { cancel: true } }),
    ]);
  });

  it("is restored when someone adds an egress rule allowing everything", async () => {
    const edited = await patchPolicy([{ op: "add", path: "/spec/egress/-", value: {} }]);
    expect(edited.spec?.egress).toHaveLength(4);
    await restored(NAMESPACE, "an allow-all egress rule");
  });

  it("is restored when someone narrows its podSelector so it confines no agent pod", async () => {
    // podSelector is an atomic field: the operator's forced apply takes all of it back, decoy and all.
    const edited = await patchPolicy([
      { op: "add", path: "/spec/podSelector/matchLabels/decoy", value: "x" },
    ]);
    expect(edited.spec?.podSelector?.matchLabels).toHaveProperty("decoy", "x");
    await restored(NAMESPACE, "a podSelector label");
  });

  it("is created again when someone deletes it, and then left alone", async () => {
    await env.kubectl.ok("admin", ["delete", "networkpolicy", "gatehouse-agent", "-n", NAMESPACE]);
    const again = await restored(NAMESPACE, "its deletion");
    // The session's reconciles every 2 s compare with the cache: nothing is written while it holds.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect((await policyOf(NAMESPACE)).metadata?.resourceVersion).toBe(again.metadata?.resourceVersion);
  });

  it("replaces a policy of its name that was there before the namespace's first session", async () => {
    const namespace = await sessionNamespace("netpol");
    // Someone's own policy under the operator's name: it selects no agent pod and leaves egress open.
    await env.kubectl.ok(
      "admin",
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: "gatehouse-agent", namespace },
        spec: {
          podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-agent", decoy: "x" } },
          policyTypes: ["Ingress"],
          ingress: [{}],
        },
      }),
    );
    const name = await createSession(namespace, "scripted/answer", "netpol");
    const policy = await restored(namespace, "its first session");
    expect(policy.metadata?.labels).toMatchObject({ "app.kubernetes.io/managed-by": "gatehouse" });
    await sessionInPhase(namespace, name, "Completed");
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });
});

describe("the session lifecycle", () => {
  it("replaces a failing agent pod twice, then fails the session with a reason", async () => {
    // The model endpoint stays unavailable (503): the agent gives up with a failure that is not final
    // (exit 1), so the operator replaces its pod.
    const name = await createSession(NAMESPACE, "scripted/always-unavailable", "crashing");
    const session = await sessionInPhase(NAMESPACE, name, "Failed", 240_000);
    expect(session.status?.attempt).toBe(3);
    expect(session.status?.podFailures?.map((f) => f.podName)).toEqual([
      `${name}-agent-1`,
      `${name}-agent-2`,
    ]);
    expect(session.status?.podFailures?.every((f) => (f.exitCode ?? 0) !== 0)).toBe(true);
    const failed = session.status?.conditions?.find((c) => c.type === "Failed");
    expect(failed).toMatchObject({ status: "True", reason: "RetriesExhausted" });
    expect(failed?.message).toMatch(/3 agent pods failed/);
    const reasons = await eventually("the session's Events", 30_000, async () => {
      const r = await eventReasons(NAMESPACE, "AgentSession", name);
      return r.includes("SessionFailed") ? r : undefined;
    });
    expect(reasons.filter((r) => r === "AgentPodCreated")).toHaveLength(3);
    expect(reasons.filter((r) => r === "AgentPodFailed")).toHaveLength(2);
  });

  it("records the limits it runs under, and warns once that the ceiling lowered the pod hold it asked for", async () => {
    // The environment runs with the default ceilings: a pod hold of at most 60 s.
    const name = `lowered-${randomBytes(3).toString("hex")}`;
    await createAliceSession(env, NAMESPACE, name, {
      limits: { maxTurns: 5 },
      approval: { holdPodForSeconds: 900 },
    });
    const done = await sessionInPhase(NAMESPACE, name, "Completed");
    expect(done.status?.effectiveLimits).toEqual({
      ...defaultSessionCeilings,
      maxTurns: 5,
      holdPodForSeconds: 60,
    });
    const events = await eventually("the session's Events", 30_000, async () => {
      const all = await sessionEvents(NAMESPACE, name);
      return all.some((e) => e.reason === "SessionCompleted") ? all : undefined;
    });
    // Every status write of the run (pod created, Running, Completed) saw the lowered limit: one Event.
    const lowered = events.filter((e) => e.reason === "LimitLowered");
    expect(lowered).toHaveLength(1);
    expect(lowered[0]).toMatchObject({
      type: "Warning",
      message:
        "spec.approval.holdPodForSeconds asks for 900, but the operator's ceiling is 60, so the session runs with 60. The platform team sets the ceilings with the chart value sessionCeilings (the operator's SESSION_CEILINGS); status.effectiveLimits shows every limit the session runs under.",
    });
  });

  it("fails a session whose spec.model.endpointRef names no endpoint, listing the ones there are", async () => {
    const name = `no-endpoint-${randomBytes(3).toString("hex")}`;
    await createAliceSession(env, NAMESPACE, name, {
      model: { name: "scripted/answer", endpointRef: "nope" },
      messages: [{ text: "Push next week's production plan back by one day." }],
    });
    const failed = await sessionInPhase(NAMESPACE, name, "Failed");
    expect(failed.status?.conditions?.find((c) => c.type === "Failed")).toMatchObject({
      reason: "ModelEndpointNotFound",
      message: expect.stringMatching(
        /^spec\.model\.endpointRef nope: the operator has no model endpoint of that name; it has \S.*chart value modelEndpoints/,
      ),
    });
  });

  it("moves to Cancelled on spec.cancel and cancels the session's Pending Approval", async () => {
    const name = await createSession(NAMESPACE, "scripted/reference-story", "cancelled");
    const waiting = await sessionInPhase(NAMESPACE, name, "AwaitingApproval");
    const approval = await pendingApprovalOf(env, waiting.metadata.uid);
    await env.kubectl.ok("alice", [
      "patch",
      "agentsession",
      name,
      "-n",
      NAMESPACE,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { cancel: true } }),
    ]);
    const cancelled = await sessionInPhase(NAMESPACE, name, "Cancelled");
    // Nothing waits for a decision any more, though the Approval may not be Cancelled yet.
    expect(cancelled.status?.conditions?.find((c) => c.type === "AwaitingApproval")).toMatchObject({
      status: "False",
      reason: "SessionEnded",
    });
    await eventually("the Approval to be Cancelled", 60_000, async () => {
      const a = await env.kubectl.json<{ status?: { phase?: string } }>("admin", [
        "get",
        "approval",
        approval.metadata.name,
        "-n",
        NAMESPACE,
      ]);
      return a.status?.phase === "Cancelled" ? true : undefined;
    });
  });

  it("cancels Pending Approvals before a deleted session goes, and lets its namespace finish deleting", async () => {
    const namespace = await sessionNamespace("doomed");
    const name = await createSession(NAMESPACE, "scripted/reference-story", "deleted");
    const waiting = await sessionInPhase(NAMESPACE, name, "AwaitingApproval");
    const approval = await pendingApprovalOf(env, waiting.metadata.uid);
    await env.kubectl.ok("admin", ["delete", "agentsession", name, "-n", NAMESPACE, "--wait=false"]);
    await eventually("the session to be gone", 60_000, async () => {
      const result = await env.kubectl.run("admin", ["get", "agentsession", name, "-n", NAMESPACE]);
      return result.code !== 0 && /NotFound/.test(result.stderr) ? true : undefined;
    });
    // The Approval went with its session (owner reference); the audit chain shows it was cancelled first.
    const cancelled = await env.pool.query<{ payload: { approval: string; reason: string } }>(
      "SELECT convert_from(canonical, 'UTF8')::jsonb -> 'payload' AS payload FROM audit_log WHERE kind = 'approval.cancelled'",
    );
    expect(cancelled.rows.map((r) => r.payload.approval)).toContain(`${NAMESPACE}/${approval.metadata.name}`);

    // A session namespace with a running session deletes to the end: the finalizer is released.
    await createSession(namespace, "scripted/reference-story", "in-doomed-ns");
    await env.kubectl.ok("admin", ["delete", "namespace", namespace, "--wait=false"]);
    await eventually(`namespace ${namespace} to be gone`, 180_000, async () => {
      const result = await env.kubectl.run("admin", ["get", "namespace", namespace]);
      return result.code !== 0 && /NotFound/.test(result.stderr) ? true : undefined;
    });
    // Creating in the terminating namespace is refused (NamespaceTerminating): that is no error.
    const errors = readFileSync(env.controller.logPath, "utf8")
      .split("\n")
      .filter((line) => line.includes('"level":50') && line.includes(namespace));
    expect(errors).toEqual([]);
  });
});

describe("a Sidecar provider", () => {
  it("runs as a native sidecar of the agent pod, holds the credentials alone, and serves the session's call", async () => {
    const namespace = await sessionNamespace("sidecar");
    await env.kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: "fx-credentials", namespace },
            stringData: { "api-key": "s3cret" },
          },
          {
            apiVersion: "gatehouse.dev/v1alpha1",
            kind: "ProviderInstance",
            metadata: { name: "fx", namespace },
            spec: {
              type: "fixture",
              image: "gatehouse/provider-fixture:dev",
              placement: "Sidecar",
              config: { FIXTURE_CAPABILITIES: JSON.stringify([{ id: "fx.stock.read", effect: "read" }]) },
              auth: { kind: "apikey", secretRef: { name: "fx-credentials" } },
            },
          },
          {
            apiVersion: "gatehouse.dev/v1alpha1",
            kind: "Capability",
            metadata: { name: "stock-read", namespace },
            spec: { id: "fx.stock.read", providerRef: { name: "fx" } },
          },
        ],
      }),
    );
    await eventually("Capability stock-read Offered", 180_000, async () => {
      const c = await env.kubectl.json<{ status?: { conditions?: Array<{ type: string; reason: string }> } }>(
        "admin",
        ["get", "capability", "stock-read", "-n", namespace],
      );
      return c.status?.conditions?.some((x) => x.type === "Ready" && x.reason === "Offered")
        ? true
        : undefined;
    });
    const name = await createSession(namespace, "scripted/sidecar-read", "sidecar");
    const session = await sessionInPhase(namespace, name, "Completed");
    expect(session.status?.result).toMatch(/A-100/);

    const pod = await env.kubectl.json<V1Pod>("admin", ["get", "pod", `${name}-agent-1`, "-n", namespace]);
    const sidecar = pod.spec?.initContainers?.find((c) => c.name === "provider-fx");
    expect(sidecar?.restartPolicy).toBe("Always");
    expect(sidecar?.image).toBe("gatehouse/provider-fixture:dev");
    expect(sidecar?.ports?.[0]?.containerPort).toBe(18080);
    expect(sidecar?.volumeMounts?.map((m) => m.name)).toEqual(["provider-fx-credentials"]);
    const agent = pod.spec?.containers.find((c) => c.name === "agent");
    expect(agent?.volumeMounts?.map((m) => m.name)).toEqual(["gatehouse-token"]);
    expect(pod.spec?.volumes?.find((v) => v.name === "provider-fx-credentials")?.secret?.secretName).toBe(
      "fx-credentials",
    );
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });
});
