/**
 * The gateway's model proxy on the real control plane (DESIGN §5, §7; issue 9). The test is the agent:
 * each session's pod only sleeps (`AGENT_IMAGE=gatehouse/sleeper:dev`); the test mints that pod's token
 * and calls `<gateway>/v1/model/chat/completions` with the openai SDK, the key being the pod's token —
 * the only credential an agent pod has. Behind the gateway is the scripted model, which records every
 * request it gets, so the test sees exactly what the proxy sent: the key from Secret
 * gatehouse-system/gatehouse-model-key, `stream_options.include_usage`, never the pod's token. The
 * metered tokens must show in the session's `status.usage`, and a used-up token budget must stop the
 * session's model requests with the budget named.
 */

import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUDGET_EXCEEDED, isBudgetExceeded } from "../../operator/src/api/agent-protocol.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Agent, coreNamespace, getSession, SLEEPER_IMAGE, startAgent } from "./core-agent.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

/** The model the sleeper sessions ask for (core-agent.ts): a one-message answer. */
const MODEL = "scripted/answer";

let env: Environment;
let namespace: string;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo(), { componentEnv: { AGENT_IMAGE: SLEEPER_IMAGE } });
  namespace = await coreNamespace(env, "model-proxy");
}, 600_000);

afterAll(async () => {
  if (namespace) await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  await env?.stop();
});

/** An openai client as the agent pod has one: the gateway's proxy as base URL, its token as the key. */
function clientOf(agent: Agent, maxRetries = 0): OpenAI {
  return new OpenAI({ baseURL: `${env.gatewayUrl}/v1/model`, apiKey: agent.token, maxRetries });
}

/** The scripted model's last recorded request seq, to read only what comes after it. */
function lastSeq(): number {
  return env.model.requests().at(-1)?.seq ?? 0;
}

const question = [{ role: "user" as const, content: "Is the plan fine as it is?" }];

interface SessionUsage {
  status?: { usage?: { inputTokens: number; outputTokens: number } };
}

describe("the model proxy", () => {
  let agent: Agent;
  /** What the model reported per request, summed: what status.usage must show. */
  const reported = { inputTokens: 0, outputTokens: 0 };

  beforeAll(async () => {
    agent = await startAgent(env, namespace, "proxied");
  });

  it("gives the agent pod the proxy as its model endpoint and no key", async () => {
    const pod = await env.kubectl.json<{
      spec: { containers: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> };
    }>("admin", ["get", "pod", agent.session.podName, "-n", namespace]);
    const environment = pod.spec.containers.find((c) => c.name === "agent")?.env ?? [];
    expect(environment.find((e) => e.name === "MODEL_BASE_URL")?.value).toBe(`${env.gatewayUrl}/v1/model`);
    expect(environment.map((e) => e.name).filter((name) => /KEY|SECRET|TOKEN$/.test(name))).toEqual([]);
    expect(JSON.stringify(pod)).not.toContain(env.modelKey);
  });

  it("answers a request sent with only the pod's token, adding the key from the Secret", async () => {
    const since = lastSeq();
    const completion = await clientOf(agent).chat.completions.create({ model: MODEL, messages: question });
    expect(completion.choices[0]?.message.content).toBe("Nothing to change; the plan stands.");
    expect(completion.usage).toBeDefined();
    reported.inputTokens += completion.usage!.prompt_tokens;
    reported.outputTokens += completion.usage!.completion_tokens;

    const [received, ...more] = env.model.requests(since);
    expect(more).toEqual([]);
    expect(received?.path).toBe("/v1/chat/completions");
    expect(received?.authorization).toBe(`Bearer ${env.modelKey}`);
    expect(JSON.stringify(received?.headers)).not.toContain(agent.token);
    expect(received?.body).toEqual({ model: MODEL, messages: question });
  });

  it("streams an answer through, asking the model for its usage", async () => {
    const since = lastSeq();
    // The agent asks for no usage: the proxy asks for it all the same, and the last chunk carries it.
    const stream = await clientOf(agent).chat.completions.create({
      model: MODEL,
      messages: question,
      stream: true,
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Nothing to change; the plan stands.");
    expect(usage).toBeDefined();
    reported.inputTokens += usage!.prompt_tokens;
    reported.outputTokens += usage!.completion_tokens;

    const [received] = env.model.requests(since);
    expect(received?.stream).toBe(true);
    expect(received?.chat?.stream_options).toEqual({ include_usage: true });
    expect(received?.authorization).toBe(`Bearer ${env.modelKey}`);
  });

  it("shows the metered tokens in the session's status.usage", async () => {
    const usage = await eventually("status.usage to show both requests", 60_000, async () => {
      const session = (await getSession(env, namespace, agent.session.name)) as SessionUsage;
      const shown = session.status?.usage;
      return shown?.inputTokens === reported.inputTokens && shown.outputTokens === reported.outputTokens
        ? shown
        : undefined;
    });
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
  });

  it("refuses a model other than the session's, without asking the endpoint", async () => {
    const since = lastSeq();
    const error = await clientOf(agent)
      .chat.completions.create({ model: "scripted/reference-story", messages: question })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("model_not_allowed");
    expect(env.model.requests(since)).toEqual([]);
  });

  it("refuses a token that is not a pod's", async () => {
    const stranger = new OpenAI({
      baseURL: `${env.gatewayUrl}/v1/model`,
      apiKey: env.modelKey,
      maxRetries: 0,
    });
    const since = lastSeq();
    const error = await stranger.chat.completions
      .create({ model: MODEL, messages: question })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(env.model.requests(since)).toEqual([]);
  });
});

describe("the token budget", () => {
  it("stops a session's model requests once its budget is used, naming it, and nothing retries", async () => {
    const agent = await startAgent(env, namespace, "budget", { limits: { tokenBudget: 10 } });
    // The SDK would retry what it may retry: the refusal must not be such a thing.
    const client = clientOf(agent, 3);
    const since = lastSeq();
    const first = await client.chat.completions.create({ model: MODEL, messages: question, stream: true });
    for await (const _chunk of first) {
      // Read to the end: the usage chunk comes last.
    }
    const used = env.model.requests(since);
    expect(used).toHaveLength(1);

    // The first answer's tokens are recorded before its stream ends: the very next request is refused.
    const refusal = (await client.chat.completions
      .create({ model: MODEL, messages: question })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refusal.status).toBe(BUDGET_EXCEEDED.status);
    expect(isBudgetExceeded(refusal)).toBe(true);
    expect(refusal.code).toBe(BUDGET_EXCEEDED.code);
    expect(refusal.message).toMatch(/Token budget exhausted: this session used \d+ of its 10 tokens/);
    expect(refusal.headers?.get("x-should-retry")).toBe("false");
    expect(env.model.requests(since)).toHaveLength(1);

    await eventually("status.usage to show the budget spent", 60_000, async () => {
      const usage = ((await getSession(env, namespace, agent.session.name)) as SessionUsage).status?.usage;
      return usage && usage.inputTokens + usage.outputTokens >= 10 ? usage : undefined;
    });
    const recorded = await env.pool.query<{ payload: { message: string; tokenBudget: number } }>(
      "SELECT payload FROM session_events WHERE session_uid = $1 AND kind = 'budget_exceeded' AND source = 'core'",
      [agent.session.uid],
    );
    expect(recorded.rows).toHaveLength(1);
    expect(recorded.rows[0]?.payload.tokenBudget).toBe(10);
  });
});
