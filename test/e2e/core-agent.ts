/**
 * The test plays the agent (Core's e2e tests): the operator runs with AGENT_IMAGE
 * `gatehouse/sleeper:dev`, so a session's agent pod only sleeps; the test mints that pod's own
 * credential as admin through the TokenRequest API — audience `gatehouse`, bound to the pod by name and
 * UID, exactly what the node projects into the pod — and calls the gateway's /v1 endpoints with it, as
 * the pod would (DESIGN §4, §5).
 */
import { randomBytes } from "node:crypto";
import { InvokeAnswer, type InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import { IDENTITY_BINDINGS_ROLE, roleBinding, serviceAccountSubject } from "../../operator/src/api/rbac.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import type { Environment } from "./environment.ts";
import { eventually } from "./story.ts";

/** The agent image of these tests: a pod that sleeps until it is deleted. */
export const SLEEPER_IMAGE = "gatehouse/sleeper:dev";

/** The AgentSession fields these tests read. */
export interface SessionObject {
  metadata: { name: string; namespace: string; uid: string };
  status?: { phase?: string; podName?: string; podUID?: string; pendingApprovals?: string[] };
}

/** A session whose agent pod is running (and sleeping): the pod the test speaks for. */
export interface SleepingSession {
  namespace: string;
  name: string;
  uid: string;
  podName: string;
  podUID: string;
}

/** One session's agent pod, as the test acts through it with the pod's gatehouse token. */
export interface Agent {
  session: SleepingSession;
  /** The pod's token: audience gatehouse, bound to the pod. */
  token: string;
  /**
   * `POST /v1/invoke` as this pod (`callId` defaults to `call-<position>`); throws unless the gateway
   * answers 200 with an InvokeAnswer.
   */
  invoke(call: Omit<InvokeCall, "callId"> & { callId?: string }): Promise<InvokeAnswer>;
}

/** One answer of the gateway: HTTP status and body, parsed as JSON when it is JSON, else the text. */
export interface GatewayReply<T = unknown> {
  status: number;
  body: T;
  /** The `Retry-After` header, when the gateway sent one (a 429). */
  retryAfter?: string;
}

/**
 * A fresh namespace `<prefix>-<random>` where alice holds the session-user and approver personas (as
 * the plant-a overlay of examples/gitops grants them); returns its name.
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
        // What the chart's rbac.identityBindingNamespaces does for a provider namespace: the controller
        // may list and watch its identity-binding Secrets (and publishes them for the gateway).
        roleBinding(
          IDENTITY_BINDINGS_ROLE,
          namespace,
          { kind: "ClusterRole", name: IDENTITY_BINDINGS_ROLE },
          [serviceAccountSubject("controller", OPERATOR_NAMESPACE)],
        ),
      ],
    }),
  );
  return namespace;
}

/** Reads an AgentSession as admin. */
export function getSession(env: Environment, namespace: string, name: string): Promise<SessionObject> {
  return env.kubectl.json<SessionObject>("admin", ["get", "agentsession", name, "-n", namespace]);
}

/**
 * Creates AgentSession `name` as alice in `namespace`, asking the scripted model's `answer` script,
 * with `spec` fields added to or replacing the default ones (e.g. `model`, `limits`).
 */
export async function createAliceSession(
  env: Environment,
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
): Promise<void> {
  await env.kubectl.ok(
    "alice",
    ["create", "-f", "-"],
    JSON.stringify({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name, namespace },
      spec: {
        subject: { user: "alice" },
        model: { name: "scripted/answer" },
        messages: [{ text: "Place the orders the test asks for." }],
        ...spec,
      },
    }),
  );
}

/**
 * Creates AgentSession `<prefix>-<random>` as alice in `namespace` (with `spec` fields added to or
 * replacing the default ones, e.g. `limits`) and waits (≤ 180 s) until it is Running with a pod named
 * in status and that pod exists under the status's UID (the sleeper pod runs until the session's
 * timeout).
 */
export async function sleepingSession(
  env: Environment,
  namespace: string,
  prefix: string,
  spec: Record<string, unknown> = {},
): Promise<SleepingSession> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await createAliceSession(env, namespace, name, spec);
  return eventually(`session ${name} to be Running with its pod`, 180_000, async () => {
    const session = await getSession(env, namespace, name);
    const { phase, podName, podUID } = session.status ?? {};
    if (phase !== "Running" || !podName || !podUID) return undefined;
    // The status is written from the operator's cache; the pod itself must be the one it names.
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
      ? { namespace, name, uid: session.metadata.uid, podName, podUID }
      : undefined;
  });
}

/**
 * A ServiceAccount token of `gatehouse-agent` in `pod.namespace` bound to the pod `podName`/`podUID`,
 * valid for 1 h, for `audiences` (default `gatehouse`; none = the API server's own): `kubectl create
 * token` as admin, i.e. the TokenRequest API the node uses for the pod's projected token. Throws when the
 * API server refuses (e.g. the pod is gone).
 */
export async function podToken(
  env: Environment,
  pod: { namespace: string; podName: string; podUID: string },
  audiences: string[] = ["gatehouse"],
): Promise<string> {
  const result = await env.kubectl.ok("admin", [
    "create",
    "token",
    "gatehouse-agent",
    "-n",
    pod.namespace,
    ...audiences.flatMap((a) => ["--audience", a]),
    "--bound-object-kind",
    "Pod",
    "--bound-object-name",
    pod.podName,
    "--bound-object-uid",
    pod.podUID,
    "--duration",
    "1h",
  ]);
  return result.stdout.trim();
}

/** A static-token user's bearer token from the environment's kubeconfig (`--token-auth-file` users). */
export async function staticUserToken(env: Environment, user: string): Promise<string> {
  const result = await env.kubectl.ok("admin", [
    "config",
    "view",
    "--raw",
    "-o",
    `jsonpath={.users[?(@.name=="${user}")].user.token}`,
  ]);
  const token = result.stdout.trim();
  if (!token) throw new Error(`no token for user ${user} in ${env.cluster.kubeconfigPath}`);
  return token;
}

/** A sleeping session in `namespace` (see sleepingSession; `spec` as there) and its pod's gatehouse token. */
export async function startAgent(
  env: Environment,
  namespace: string,
  prefix = "agent",
  spec: Record<string, unknown> = {},
): Promise<Agent> {
  const session = await sleepingSession(env, namespace, prefix, spec);
  const token = await podToken(env, session);
  return {
    session,
    token,
    invoke: async (call) =>
      answerOf(await invokeAs(env, token, { callId: `call-${call.position}`, ...call })),
  };
}

/**
 * `method <gatewayUrl><path>` with bearer `token` and an optional JSON `body`. Never throws on an HTTP
 * status: the reply carries it, and a body that is not JSON is kept as text so the failing assertion
 * shows it.
 */
export async function gatewayRequest<T = unknown>(
  env: Environment,
  token: string,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<GatewayReply<T>> {
  const response = await fetch(`${env.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Kept as text: the assertion that fails will show it.
  }
  const retryAfter = response.headers.get("retry-after");
  return { status: response.status, body: parsed as T, ...(retryAfter === null ? {} : { retryAfter }) };
}

/** `POST /v1/session/events` with `token`: an assistant_text report of turn 1, as the agent posts one. */
export function postEventAs(env: Environment, token: string, text = "still here"): Promise<GatewayReply> {
  return gatewayRequest(env, token, "POST", "/v1/session/events", { kind: "assistant_text", turn: 1, text });
}

/** `GET /v1/session` with `token`. */
export function getSessionView(env: Environment, token: string): Promise<GatewayReply> {
  return gatewayRequest(env, token, "GET", "/v1/session");
}

/** `GET /v1/approvals/NAME/wait` with `token`: the long-poll an agent makes after pending_approval. */
export function waitAs(
  env: Environment,
  token: string,
  approval: string,
  timeoutSeconds = 1,
): Promise<GatewayReply<{ name: string; phase: string; done: boolean }>> {
  return gatewayRequest(env, token, "GET", `/v1/approvals/${approval}/wait?timeoutSeconds=${timeoutSeconds}`);
}

/**
 * `POST /v1/invoke` with `token`: one tool call as the model produced it (`arguments` is raw text). The
 * body is an InvokeAnswer when the status is 200, else the gateway's error body.
 */
export function invokeAs(
  env: Environment,
  token: string,
  call: InvokeCall,
): Promise<GatewayReply<InvokeAnswer>> {
  return gatewayRequest<InvokeAnswer>(env, token, "POST", "/v1/invoke", call);
}

/** The InvokeAnswer of a `/v1/invoke` reply; throws with the status and body unless it is 200. */
function answerOf(reply: GatewayReply<InvokeAnswer>): InvokeAnswer {
  if (reply.status !== 200) {
    throw new Error(`POST /v1/invoke answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  }
  return InvokeAnswer.parse(reply.body);
}
