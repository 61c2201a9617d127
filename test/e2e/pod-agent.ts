/**
 * The test as the agent (issue 7): sessions whose agent pod only sleeps (the environment runs with
 * `AGENT_IMAGE=gatehouse/sleeper:dev`), and the pod's own credential minted by admin with the
 * TokenRequest API — audience `gatehouse`, bound to the pod by name and UID, exactly what the node
 * projects into the pod — so the test calls the gateway's /v1 endpoints as that pod would.
 */
import { randomBytes } from "node:crypto";
import type { InvokeAnswer, InvokeCall } from "../../operator/src/api/agent-protocol.ts";
import type { Environment } from "./environment.ts";
import { eventually } from "./story.ts";

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

/** One answer of the gateway: HTTP status and parsed JSON body. */
export interface GatewayReply<T = unknown> {
  status: number;
  body: T;
}

/** Reads an AgentSession as admin. */
export function getSession(env: Environment, namespace: string, name: string): Promise<SessionObject> {
  return env.kubectl.json<SessionObject>("admin", ["get", "agentsession", name, "-n", namespace]);
}

/**
 * Creates an AgentSession as alice in `namespace` and waits until it is Running with a pod named in
 * status (the sleeper pod runs until the session's timeout).
 */
export async function sleepingSession(
  env: Environment,
  namespace: string,
  prefix: string,
): Promise<SleepingSession> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
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
      },
    }),
  );
  const session = await eventually(`session ${name} to be Running`, 180_000, async () => {
    const s = await getSession(env, namespace, name);
    return s.status?.phase === "Running" && s.status.podName && s.status.podUID ? s : undefined;
  });
  return {
    namespace,
    name,
    uid: session.metadata.uid,
    podName: session.status?.podName ?? "",
    podUID: session.status?.podUID ?? "",
  };
}

/**
 * A ServiceAccount token of `gatehouse-agent` in `namespace` bound to the pod `podName`/`podUID`, for
 * `audiences` (default `gatehouse`; none = the API server's own): `kubectl create token` as admin, i.e.
 * the TokenRequest API the node uses for the pod's projected token. Throws when the API server refuses
 * (e.g. the pod is gone).
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
    "10m",
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

async function send<T>(
  env: Environment,
  token: string,
  path: string,
  init: RequestInit,
): Promise<GatewayReply<T>> {
  const response = await fetch(`${env.gatewayUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Kept as text: the assertion that fails will show it.
  }
  return { status: response.status, body: body as T };
}

/** `GET /v1/session` with `token`. */
export function getSessionView(env: Environment, token: string): Promise<GatewayReply> {
  return send(env, token, "/v1/session", { method: "GET" });
}

/** `POST /v1/invoke` with `token`: one tool call as the model produced it (`arguments` is raw text). */
export function invokeAs(
  env: Environment,
  token: string,
  call: InvokeCall,
): Promise<GatewayReply<InvokeAnswer>> {
  return send<InvokeAnswer>(env, token, "/v1/invoke", { method: "POST", body: JSON.stringify(call) });
}
