/**
 * A pod's token ends with its session (gateway/authenticate.ts), on the real control plane and local
 * node. The test is the agent (AGENT_IMAGE `gatehouse/sleeper:dev`) and mints the pod's own gatehouse
 * token with the TokenRequest API. A session that times out ends Failed while its pod object stays
 * (Failed, DeadlineExceeded), so the pod's token still passes the API server's TokenReview — the
 * attacker's case: a leaked token of a finished session. The gateway refuses it on GET /v1/session and
 * POST /v1/session/events, saying the session has finished; the same token was accepted while the
 * session ran (positive control), as a running session's token still is.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "./cluster-info.ts";
import {
  coreNamespace,
  type GatewayReply,
  getSession,
  getSessionView,
  podToken,
  SLEEPER_IMAGE,
  sleepingSession,
} from "./core-agent.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

/** The finishing session's wall-clock budget: long enough for the test to see it Running first. */
const TIMEOUT_SECONDS = 45;

let env: Environment;
let namespace: string;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE } });
  namespace = await coreNamespace(env, "token-life");
}, 600_000);

afterAll(async () => {
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** `POST /v1/session/events` with `token`: an assistant_text report, as the agent posts one. */
async function postEventAs(token: string): Promise<GatewayReply> {
  const response = await fetch(`${env.gatewayUrl}/v1/session/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ kind: "assistant_text", turn: 1, text: "still here" }),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    return { status: response.status, body: text };
  }
}

describe("a pod's token after its session has finished", () => {
  it("is refused on GET /v1/session and POST /v1/session/events, while a running session's token is accepted", async () => {
    const running = await sleepingSession(env, namespace, "life-run");
    const finishing = await sleepingSession(env, namespace, "life-end", {
      limits: { timeoutSeconds: TIMEOUT_SECONDS },
    });
    const token = await podToken(env, finishing);
    const runningToken = await podToken(env, running);

    // Positive control: while the session runs, its pod's token reads the session and posts events.
    expect((await getSessionView(env, token)).status).toBe(200);
    expect(await postEventAs(token)).toEqual({ status: 200, body: { accepted: true } });

    // The session's time runs out: the node fails the pod (DeadlineExceeded), the session ends Failed.
    const ended = await eventually(`session ${finishing.name} to end`, 180_000, async () => {
      const session = await getSession(env, namespace, finishing.name);
      return session.status?.phase === "Failed" ? session : undefined;
    });
    expect(ended.status?.podUID).toBe(finishing.podUID);
    // The pod object is still there under the same uid, so the API server still accepts its token:
    // minting another one bound to it succeeds (it is refused for a pod that is gone).
    await podToken(env, finishing);

    // The gateway's informer may lag the status by a moment; then every request is refused.
    const refusal = await eventually("the finished session's token to be refused", 30_000, async () => {
      const reply = await getSessionView(env, token);
      return reply.status === 200 ? undefined : reply;
    });
    expect(refusal.status).toBe(403);
    expect(refusal.body).toMatchObject({
      kind: "forbidden",
      message: expect.stringMatching(new RegExp(`AgentSession ${finishing.name} has finished \\(Failed\\)`)),
    });
    const posted = await postEventAs(token);
    expect(posted.status).toBe(403);
    expect(posted.body).toMatchObject({ kind: "forbidden", message: expect.stringMatching(/has finished/) });
    // Refused again past the accepted verdict's cache (10 s): the check is not cached with the token.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    expect((await getSessionView(env, token)).status).toBe(403);

    // The running session's pod token is still accepted on both.
    expect((await getSessionView(env, runningToken)).status).toBe(200);
    expect(await postEventAs(runningToken)).toEqual({ status: 200, body: { accepted: true } });
  });
});
