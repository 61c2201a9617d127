/**
 * Helpers of the agent-runtime e2e tests (agent-runtime.test.ts, reference-story.test.ts): sessions in the example namespace
 * whose task text is unique, so the scripted model's recorded requests of one conversation can be
 * told apart from every other; the session object as the API server shows it; its pod, killed while it
 * waits for a decision; its transcript and
 * execution rows in Postgres; and the rules a Chat Completions conversation must keep for a real
 * endpoint to accept it (each tool call answered by exactly one tool message, right after its
 * assistant message, in call order; arguments that are JSON objects).
 */
import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import type { SessionEngine } from "../../operator/src/api/agentsession.ts";
import { chatMessagesOf, type RecordedRequest } from "../fakes/src/model/index.ts";
import type { Environment } from "./environment.ts";
import { NAMESPACE } from "./environment.ts";
import { decisionPatch, eventually, pendingApprovalOf } from "./story.ts";

/** The task every runtime session is given; a unique tag follows it. */
export const TASK = "Push next week's production plan back by one day.";

/** An AgentSession these tests started. `text` is its first message, unique to it. */
export interface RuntimeSession {
  name: string;
  uid: string;
  text: string;
}

/** The parts of an AgentSession these tests read. */
export interface SessionObject {
  metadata: { name: string; uid: string };
  status?: {
    phase?: string;
    result?: string;
    podName?: string;
    podUID?: string;
    attempt?: number;
    continuations?: number;
    runStartTime?: string;
    startTime?: string;
    podFailures?: Array<{ podName: string; reason: string; exitCode?: number }>;
    usage?: { inputTokens: number; outputTokens: number };
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

/** What a session asks for besides its model. */
export interface SessionOptions {
  limits?: Record<string, number>;
  approval?: { holdPodForSeconds?: number };
  /** spec.engine; default none (builtin). */
  engine?: SessionEngine;
  /** spec.agent.image, with engine `external`. */
  agentImage?: string;
}

/** alice creates a session asking `model` (e.g. `scripted/reference-story`); returns its name, uid and text. */
export async function startSession(
  env: Environment,
  prefix: string,
  model: string,
  options: SessionOptions = {},
): Promise<RuntimeSession> {
  const tag = randomBytes(3).toString("hex");
  const name = `${prefix}-${tag}`;
  const text = `${TASK} (${name})`;
  await env.kubectl.ok(
    "alice",
    ["create", "-f", "-"],
    JSON.stringify({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name, namespace: NAMESPACE },
      spec: {
        subject: { user: "alice" },
        model: { name: model },
        messages: [{ text }],
        ...(options.limits ? { limits: options.limits } : {}),
        ...(options.approval ? { approval: options.approval } : {}),
        ...(options.engine ? { engine: options.engine } : {}),
        ...(options.agentImage ? { agent: { image: options.agentImage } } : {}),
      },
    }),
  );
  const uid = (
    await env.kubectl.ok("alice", ["get", "ags", name, "-n", NAMESPACE, "-o", "jsonpath={.metadata.uid}"])
  ).stdout;
  return { name, uid, text };
}

/** The session as the API server has it now. */
export function sessionOf(env: Environment, name: string): Promise<SessionObject> {
  return env.kubectl.json<SessionObject>("admin", ["get", "agentsession", name, "-n", NAMESPACE]);
}

/** Waits until the session's phase is one of `phases`; returns the session then. */
export async function sessionInPhase(
  env: Environment,
  name: string,
  phases: string[],
  timeoutMs = 180_000,
): Promise<SessionObject> {
  return eventually(`session ${name} to be ${phases.join(" or ")}`, timeoutMs, async () => {
    const session = await sessionOf(env, name);
    return phases.includes(session.status?.phase ?? "") ? session : undefined;
  });
}

/** The pod `name` of the example namespace as the API server has it (undefined once it is gone). */
export async function podOf(env: Environment, name: string): Promise<V1Pod | undefined> {
  const result = await env.kubectl.run("admin", ["get", "pod", name, "-n", NAMESPACE, "-o", "json"]);
  return result.code === 0 ? (JSON.parse(result.stdout) as V1Pod) : undefined;
}

/** Waits until the session runs a Running agent pod other than `notUid`; returns that pod. */
export async function runningPod(env: Environment, session: RuntimeSession, notUid?: string): Promise<V1Pod> {
  return eventually(`a running agent pod of ${session.name}`, 120_000, async () => {
    const status = (await sessionOf(env, session.name)).status;
    if (!status?.podName || !status.podUID || status.podUID === notUid) return undefined;
    const pod = await podOf(env, status.podName);
    return pod?.metadata?.uid === status.podUID && pod.status?.phase === "Running" ? pod : undefined;
  });
}

/** alice decides `approval` by appending her decision (DESIGN §2). */
export async function decide(
  env: Environment,
  approval: string,
  verdict: "Approve" | "Reject",
  reason?: string,
) {
  await env.kubectl.ok("alice", [
    "patch",
    "approval",
    approval,
    "-n",
    NAMESPACE,
    "--type",
    "json",
    "-p",
    decisionPatch("alice", verdict, reason),
  ]);
}

/**
 * Plays the reference story up to the publish proposal, kills the agent pod while it waits for the
 * decision (force delete: no grace, the process is killed), waits for the pod the operator starts in
 * its place, then decides. Returns the session once it ended.
 */
export async function killedWhileAwaiting(
  env: Environment,
  prefix: string,
  decision: { verdict: "Approve" | "Reject"; reason?: string } & Pick<
    SessionOptions,
    "engine" | "agentImage"
  >,
) {
  const session = await startSession(env, prefix, "scripted/reference-story", {
    ...(decision.engine ? { engine: decision.engine } : {}),
    ...(decision.agentImage ? { agentImage: decision.agentImage } : {}),
  });
  const approval = await pendingApprovalOf(env, session.uid);
  await sessionInPhase(env, session.name, ["AwaitingApproval"]);
  const killed = await runningPod(env, session);
  await env.kubectl.ok("admin", [
    "delete",
    "pod",
    killed.metadata!.name!,
    "-n",
    NAMESPACE,
    "--grace-period=0",
    "--force",
  ]);
  const replacement = await runningPod(env, session, killed.metadata!.uid);
  await decide(env, approval.metadata.name, decision.verdict, decision.reason);
  const ended = await sessionInPhase(env, session.name, ["Completed", "Failed"], 240_000);
  return { session, ended, killed, replacement, approval: approval.metadata.name };
}

/** The Chat Completions requests the scripted model received for the conversation opened by `text`. */
export function conversationRequests(env: Environment, text: string): RecordedRequest[] {
  return env.model.requests().filter((request) => {
    const first = messagesOf(request).find((message) => message.role === "user");
    return typeof first?.content === "string" && first.content === text;
  });
}

/** A message of a recorded request, as far as these rules care. */
type Message = NonNullable<RecordedRequest["chat"]>["messages"][number];

/**
 * A recorded model request's conversation as Chat Completions messages, whichever wire the engine
 * spoke (Codex speaks Responses): the scripted model reads both as one conversation.
 */
export function messagesOf(request: RecordedRequest): Message[] {
  if (request.chat) return request.chat.messages;
  return request.responses ? chatMessagesOf(request.responses) : [];
}

/**
 * What makes `messages` a conversation a real endpoint refuses (empty when none): every assistant
 * message's tool calls are answered by exactly one tool message each, directly after it and in call
 * order; no tool message answers anything else; each call's arguments are a JSON object.
 */
export function conversationProblems(messages: Message[]): string[] {
  const problems: string[] = [];
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index]!;
    if (message.role === "tool") {
      problems.push(`message ${index}: tool message for ${message.tool_call_id} answers no call before it`);
      continue;
    }
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    for (const [offset, call] of message.tool_calls.entries()) {
      const answer = messages[index + 1 + offset];
      if (answer?.role !== "tool" || answer.tool_call_id !== call.id) {
        problems.push(`message ${index}: call ${call.id} is not answered by message ${index + 1 + offset}`);
      }
      try {
        const value: unknown = JSON.parse(call.function.arguments);
        if (typeof value !== "object" || value === null || Array.isArray(value))
          throw new Error("not an object");
      } catch {
        problems.push(`message ${index}: call ${call.id} has arguments that are not a JSON object`);
      }
    }
    index += message.tool_calls.length;
  }
  return problems;
}

/** The tool messages of `messages` as [tool_call_id, content]. */
export function toolMessages(messages: Message[]): Array<[string | undefined, string]> {
  return messages
    .filter((message) => message.role === "tool")
    .map((message) => [message.tool_call_id, typeof message.content === "string" ? message.content : ""]);
}

/** One transcript row of a session (Postgres `session_events`). */
export interface TranscriptRow {
  seq: number;
  source: string;
  kind: string;
  payload: Record<string, unknown>;
}

/** The session's transcript, in order. */
export async function transcriptOf(env: Environment, sessionUid: string): Promise<TranscriptRow[]> {
  const rows = await env.pool.query<TranscriptRow>(
    "SELECT seq::int AS seq, source, kind, payload FROM session_events WHERE session_uid = $1 ORDER BY seq",
    [sessionUid],
  );
  return rows.rows;
}

/** An execution row with its receipt (Postgres `executions`). */
export interface ExecutionWithReceipt {
  id: string;
  capability: string;
  state: string;
  receipt: { result?: unknown } | null;
  /** Bytes of the receipt's JSON text as Postgres stores it. */
  receiptBytes: number;
}

/** The session's execution rows with their receipts, oldest first. */
export async function executionsWithReceipts(
  env: Environment,
  sessionUid: string,
): Promise<ExecutionWithReceipt[]> {
  const rows = await env.pool.query<ExecutionWithReceipt>(
    `SELECT id, capability, state, receipt, octet_length(receipt::text) AS "receiptBytes"
       FROM executions WHERE session_uid = $1 ORDER BY created_at_us, id`,
    [sessionUid],
  );
  return rows.rows;
}
