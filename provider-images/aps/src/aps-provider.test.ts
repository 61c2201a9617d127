import { type FakeAps, startFakeAps } from "@gatehouse/fakes/aps";
import {
  ExecutionStatus,
  type InvokeRequest,
  InvokeResponse,
  Manifest,
  ProtocolError,
  TargetVersion,
} from "@gatehouse/provider-sdk";
import { type ProviderServer, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApsClient } from "./aps-client.ts";
import { apsProvider } from "./aps-provider.ts";

const PLAN = "plan-2026-w49";
let aps: FakeAps;
let provider: ProviderServer;
let counter = 0;

async function startProvider(): Promise<ProviderServer> {
  return serveProvider({
    ...apsProvider(createApsClient(aps.url)),
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
  });
}

beforeEach(async () => {
  aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
  provider = await startProvider();
});
afterEach(async () => {
  await provider.close();
  await aps.close();
});

/** A request for `subject`, acting as `account` (default: the same name, as the examples bind them). */
function request(
  capability: string,
  args: Record<string, unknown>,
  {
    subject = "alice",
    account = subject,
    key,
  }: { subject?: string; account?: string | null; key?: string } = {},
): InvokeRequest {
  counter += 1;
  return {
    executionId: `exec-${counter}`,
    idempotencyKey: key ?? `key-${counter}`,
    capability,
    arguments: args,
    subject: { user: subject, groups: [] },
    ...(account === null ? {} : { account }),
  };
}

async function invoke(body: InvokeRequest): Promise<InvokeResponse> {
  const response = await fetch(`${provider.url}/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return InvokeResponse.parse(await response.json());
}

async function status(key: string): Promise<ExecutionStatus> {
  return ExecutionStatus.parse(await (await fetch(`${provider.url}/v1/executions/${key}`)).json());
}

async function target(planId: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${provider.url}/v1/targets/plan/${planId}`);
  return { status: response.status, body: await response.json() };
}

const draft = (options?: Parameters<typeof request>[2]) =>
  invoke(request("aps.schedule.draft", { planId: PLAN, shiftDays: 1 }, options));
const publishRequest = (version: number, options?: Parameters<typeof request>[2]) =>
  request("aps.schedule.publish", { planId: PLAN, version }, options);

describe("the aps manifest", () => {
  it("offers read, draft and write, requires identity, and names the publish target plan by planId and version", async () => {
    const manifest = Manifest.parse(await (await fetch(`${provider.url}/v1/manifest`)).json());
    expect(manifest.requiresIdentity).toBe(true);
    expect(manifest.capabilities.map((offer) => [offer.id, offer.effect, offer.idempotency])).toEqual([
      ["aps.schedule.read", "read", "natural"],
      ["aps.schedule.draft", "draft", "key"],
      ["aps.schedule.publish", "write", "key"],
    ]);
    expect(manifest.capabilities[2]?.target).toEqual({
      kind: "plan",
      idArgument: "planId",
      versionArgument: "version",
    });
  });
});

describe("aps calls as the bound APS account", () => {
  it("reads the published plan", async () => {
    const answer = await invoke(request("aps.schedule.read", { planId: PLAN }));
    expect(answer).toMatchObject({ status: "succeeded", result: { id: PLAN, version: 1 } });
  });

  it("drafts a shifted copy with a new version and publishes it once with evidence", async () => {
    expect(await draft()).toMatchObject({
      status: "succeeded",
      result: { version: 2, status: "draft" },
      evidence: { system: "aps", reference: `${PLAN}@v2` },
    });
    const published = await invoke(publishRequest(2));
    expect(published).toMatchObject({
      status: "succeeded",
      result: { planId: PLAN, version: 2, status: "published", publishedBy: "alice" },
      evidence: { system: "aps", reference: "pub-1" },
    });
    expect(aps.publishes()).toHaveLength(1);
  });

  it("returns the stored receipt for a repeated publish key without publishing again", async () => {
    await draft();
    const publish = publishRequest(2);
    const first = await invoke(publish);
    const repeated = await invoke({ ...publish, executionId: "exec-retry" });
    expect(repeated).toEqual(first);
    expect(aps.publishes()).toHaveLength(1);
    expect(await status(publish.idempotencyKey)).toEqual({
      idempotencyKey: publish.idempotencyKey,
      status: "succeeded",
      response: first,
    });
  });

  it("answers forbidden when the APS refuses bob's publish, and nothing is published", async () => {
    await draft({ subject: "bob" });
    const refused = await invoke(publishRequest(2, { subject: "bob" }));
    expect(refused).toMatchObject({ status: "failed", errorKind: "forbidden" });
    expect(refused.message).toMatch(/bob lacks the right plan\.publish/);
    expect(aps.publishes()).toHaveLength(0);
  });

  it("acts as the account, not as the Kubernetes user: alice bound to bob's account may not publish", async () => {
    await draft();
    const asBob = await invoke(publishRequest(2, { subject: "alice", account: "bob" }));
    expect(asBob).toMatchObject({ status: "failed", errorKind: "forbidden" });
    const asAlice = await invoke(publishRequest(2, { subject: "bob", account: "alice" }));
    expect(asAlice).toMatchObject({ status: "succeeded", result: { publishedBy: "alice" } });
  });

  it("refuses a call without a bound account as forbidden, without calling the APS", async () => {
    const answer = await invoke(
      request("aps.schedule.draft", { planId: PLAN, shiftDays: 1 }, { account: null }),
    );
    expect(answer).toMatchObject({ status: "failed", errorKind: "forbidden" });
    expect(answer.message).toMatch(/bound APS account/);
    expect(aps.state.plans.get(PLAN)?.versions.size).toBe(1);
  });

  it("maps a stale version to conflict and an unknown plan to not_found", async () => {
    const stale = await invoke(publishRequest(1));
    expect(stale).toMatchObject({ status: "failed", errorKind: "conflict" });
    const missing = await invoke(request("aps.schedule.read", { planId: "plan-1999-w01" }));
    expect(missing).toMatchObject({ status: "failed", errorKind: "not_found" });
  });

  it("refuses arguments outside the strict input schema without calling the APS", async () => {
    const answer = await invoke(request("aps.schedule.publish", { planId: PLAN, version: "2", extra: 1 }));
    expect(answer).toMatchObject({ status: "failed", errorKind: "invalid_arguments" });
    expect(aps.publishes()).toHaveLength(0);
  });

  it("answers unavailable when the APS cannot be reached, and does not remember it", async () => {
    const port = Number(new URL(aps.url).port);
    await aps.close();
    const read = request("aps.schedule.read", { planId: PLAN });
    expect(await invoke(read)).toMatchObject({ status: "failed", errorKind: "unavailable" });
    aps = await startFakeAps({ host: "127.0.0.1", port });
    expect(await invoke({ ...read, executionId: "exec-retry" })).toMatchObject({ status: "succeeded" });
  });

  it("cannot answer a key's status while the APS is unreachable: 500, never a guessed not_found", async () => {
    await aps.close();
    const response = await fetch(`${provider.url}/v1/executions/some-key`);
    expect(response.status).toBe(500);
    expect(ProtocolError.parse(await response.json()).kind).toBe("internal");
    aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
  });
});

describe("aps when the APS's answer is lost", () => {
  it("answers unknown_outcome for a publish whose response the APS dropped after committing it", async () => {
    await draft();
    aps.dropResponses("publish");
    const lost = await invoke(publishRequest(2));
    expect(lost).toMatchObject({ status: "failed", errorKind: "unknown_outcome" });
    expect(aps.publishes()).toHaveLength(1);
  });

  it("reports the committed publish from the APS's record when asked for the key's status", async () => {
    await draft();
    aps.dropResponses("publish");
    const publish = publishRequest(2);
    await invoke(publish);
    expect(await status(publish.idempotencyKey)).toEqual({
      idempotencyKey: publish.idempotencyKey,
      status: "succeeded",
      response: {
        status: "succeeded",
        result: {
          planId: PLAN,
          version: 2,
          status: "published",
          publicationId: "pub-1",
          publishedBy: "alice",
          publishedAt: expect.any(String),
        },
        evidence: { system: "aps", reference: "pub-1" },
      },
    });
  });

  it("gives the retry with the same key the receipt the status reports, with one publish in the APS", async () => {
    await draft();
    aps.dropResponses("publish");
    const publish = publishRequest(2);
    await invoke(publish);
    const known = await status(publish.idempotencyKey);
    const retried = await invoke({ ...publish, executionId: "exec-retry" });
    expect(retried).toEqual(known.response);
    expect(aps.publishes()).toHaveLength(1);
  });

  it("reports a refusal the APS recorded, after a provider restart that forgot it", async () => {
    await draft({ subject: "bob" });
    const publish = publishRequest(2, { subject: "bob" });
    const refused = await invoke(publish);
    await provider.close();
    provider = await startProvider();
    expect(await status(publish.idempotencyKey)).toEqual({
      idempotencyKey: publish.idempotencyKey,
      status: "failed",
      response: refused,
    });
  });

  it("answers not_found for a key neither the provider nor the APS has seen", async () => {
    expect(await status("never-used")).toEqual({ idempotencyKey: "never-used", status: "not_found" });
  });
});

describe("aps targets", () => {
  it("answers a plan's newest version, which a new draft moves", async () => {
    expect(TargetVersion.parse((await target(PLAN)).body)).toEqual({ kind: "plan", id: PLAN, version: "1" });
    await draft({ subject: "bob" });
    expect(TargetVersion.parse((await target(PLAN)).body)).toMatchObject({ version: "2" });
  });

  it("answers 404 not_found for a plan that does not exist", async () => {
    const missing = await target("plan-1999-w01");
    expect(missing.status).toBe(404);
    expect(ProtocolError.parse(missing.body).kind).toBe("not_found");
  });
});
