/**
 * The test plays the agent (Core's e2e tests): the operator runs with AGENT_IMAGE
 * `gatehouse/sleeper:dev`, so a session's agent pod only sleeps; the test mints that pod's token as
 * admin through the TokenRequest API (audience `gatehouse`, bound to the pod, exactly as the node
 * projects it) and calls the gateway's `POST /v1/invoke` with it, as the pod would (DESIGN §4, §5).
 */
import { randomBytes } from "node:crypto";
import { InvokeAnswer, type InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import type { Environment } from "./environment.ts";
import { eventually } from "./story.ts";

/** The agent image of these tests: a pod that sleeps until it is deleted. */
export const SLEEPER_IMAGE = "gatehouse/sleeper:dev";

/** One session's agent pod, as the test acts through it. */
export interface Agent {
  namespace: string;
  session: string;
  sessionUid: string;
  podName: string;
  podUID: string;
  /** The pod's token: audience gatehouse, bound to the pod. */
  token: string;
  /** `POST /v1/invoke` as this pod; throws unless the gateway answers 200 with an InvokeAnswer. */
  invoke(call: Omit<InvokeCall, "callId"> & { callId?: string }): Promise<InvokeAnswer>;
}

/**
 * A fresh namespace `<prefix>-<random>` where alice holds the session-user and approver personas (as
 * examples/plant-a/rbac.yaml grants them); returns its name.
 */
export async function coreNamespace(env: Environment, prefix: string): Promise<string> {
  const namespace = `${prefix}-${randomBytes(3).toString("hex")}`;
  const binding = (name: string, role: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name, namespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
  });
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
        binding("session-users", "gatehouse-session-user"),
        binding("approvers", "gatehouse-approver"),
      ],
    }),
  );
  return namespace;
}

/**
 * Creates an AgentSession as alice in `namespace`, waits for its (sleeping) agent pod, and mints the
 * pod's token as admin with `kubectl create token … --bound-object-kind Pod`.
 */
export async function startAgent(env: Environment, namespace: string, prefix = "agent"): Promise<Agent> {
  const session = `${prefix}-${randomBytes(3).toString("hex")}`;
  await env.kubectl.ok(
    "alice",
    ["create", "-f", "-"],
    JSON.stringify({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name: session, namespace },
      spec: {
        subject: { user: "alice" },
        model: { name: "scripted/answer" },
        messages: [{ text: "Publish next week's production plan." }],
      },
    }),
  );
  const bound = await eventually(`the agent pod of session ${session}`, 120_000, async () => {
    const object = await env.kubectl.json<{
      metadata: { uid: string };
      status?: { podName?: string; podUID?: string };
    }>("admin", ["get", "agentsession", session, "-n", namespace]);
    const { podName, podUID } = object.status ?? {};
    if (!podName || !podUID) return undefined;
    const pod = await env.kubectl.run("admin", [
      "get",
      "pod",
      podName,
      "-n",
      namespace,
      "-o",
      "jsonpath={.metadata.uid}",
    ]);
    return pod.code === 0 && pod.stdout === podUID
      ? { sessionUid: object.metadata.uid, podName, podUID }
      : undefined;
  });
  const token = (
    await env.kubectl.ok("admin", [
      "create",
      "token",
      "gatehouse-agent",
      "-n",
      namespace,
      "--audience",
      "gatehouse",
      "--bound-object-kind",
      "Pod",
      "--bound-object-name",
      bound.podName,
      "--bound-object-uid",
      bound.podUID,
    ])
  ).stdout.trim();
  return {
    namespace,
    session,
    ...bound,
    token,
    invoke: (call) => invokeAs(env.gatewayUrl, token, { callId: `call-${call.position}`, ...call }),
  };
}

/** `POST <gatewayUrl>/v1/invoke` with `token`; throws with the body unless it answers 200. */
export async function invokeAs(gatewayUrl: string, token: string, call: InvokeCall): Promise<InvokeAnswer> {
  const response = await fetch(`${gatewayUrl}/v1/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(call),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST /v1/invoke answered ${response.status}: ${text}`);
  return InvokeAnswer.parse(JSON.parse(text));
}
