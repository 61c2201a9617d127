import { type FakeAps, startFakeAps } from "@gatehouse/fakes/aps";
import { ExecutionStatus, type InvokeRequest, InvokeResponse, Manifest } from "@gatehouse/provider-sdk";
import { type ProviderServer, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApsClient } from "./aps-client.ts";
import { apsHandlers } from "./handlers.ts";
import { apsManifest } from "./manifest.ts";

let aps: FakeAps;
let provider: ProviderServer;
let counter = 0;

beforeEach(async () => {
  aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
  provider = await serveProvider({
    manifest: apsManifest,
    handlers: apsHandlers(createApsClient(aps.url)),
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
  });
});
afterEach(async () => {
  await provider.close();
  await aps.close();
});

function request(
  capability: string,
  args: Record<string, unknown>,
  user = "alice",
  key?: string,
): InvokeRequest {
  counter += 1;
  return {
    executionId: `exec-${counter}`,
    idempotencyKey: key ?? `key-${counter}`,
    capability,
    arguments: args,
    subject: { user, groups: [] },
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

describe("aps provider against the fake APS", () => {
  it("serves a manifest that parses with the contract and offers the three capabilities", async () => {
    const manifest = Manifest.parse(await (await fetch(`${provider.url}/v1/manifest`)).json());
    expect(manifest.capabilities.map((offer) => [offer.id, offer.effect])).toEqual([
      ["aps.schedule.read", "read"],
      ["aps.schedule.draft", "draft"],
      ["aps.schedule.publish", "write"],
    ]);
  });

  it("reads the published plan", async () => {
    const answer = await invoke(request("aps.schedule.read", { planId: "plan-2026-w49" }));
    expect(answer).toMatchObject({ status: "succeeded", result: { id: "plan-2026-w49", version: 1 } });
  });

  it("drafts a shifted copy with a new version and publishes it once with evidence", async () => {
    const draft = await invoke(request("aps.schedule.draft", { planId: "plan-2026-w49", shiftDays: 1 }));
    expect(draft).toMatchObject({ status: "succeeded", result: { version: 2, status: "draft" } });
    const published = await invoke(request("aps.schedule.publish", { planId: "plan-2026-w49", version: 2 }));
    expect(published).toMatchObject({
      status: "succeeded",
      result: { planId: "plan-2026-w49", version: 2, status: "published", publishedBy: "alice" },
      evidence: { system: "aps", reference: "pub-1" },
    });
    expect(aps.publishes()).toHaveLength(1);
  });

  it("returns the stored receipt for a repeated publish key without publishing again", async () => {
    await invoke(request("aps.schedule.draft", { planId: "plan-2026-w49", shiftDays: 1 }));
    const publish = request("aps.schedule.publish", { planId: "plan-2026-w49", version: 2 });
    const first = await invoke(publish);
    const repeated = await invoke({ ...publish, executionId: "exec-retry" });
    expect(repeated).toEqual(first);
    expect(aps.publishes()).toHaveLength(1);
    const status = ExecutionStatus.parse(
      await (await fetch(`${provider.url}/v1/executions/${publish.idempotencyKey}`)).json(),
    );
    expect(status).toEqual({ idempotencyKey: publish.idempotencyKey, status: "succeeded", response: first });
  });

  it("answers forbidden when the APS refuses bob's publish, and nothing is published", async () => {
    await invoke(request("aps.schedule.draft", { planId: "plan-2026-w49", shiftDays: 1 }, "bob"));
    const refused = await invoke(
      request("aps.schedule.publish", { planId: "plan-2026-w49", version: 2 }, "bob"),
    );
    expect(refused).toMatchObject({ status: "failed", errorKind: "forbidden" });
    expect(aps.publishes()).toHaveLength(0);
  });

  it("acts as the bound business account when Core sends one", async () => {
    await invoke(request("aps.schedule.draft", { planId: "plan-2026-w49", shiftDays: 1 }, "bob"));
    const publish = {
      ...request("aps.schedule.publish", { planId: "plan-2026-w49", version: 2 }, "bob"),
      account: "alice",
    };
    expect(await invoke(publish)).toMatchObject({ status: "succeeded", result: { publishedBy: "alice" } });
  });

  it("maps a stale version to conflict and an unknown plan to not_found", async () => {
    const stale = await invoke(request("aps.schedule.publish", { planId: "plan-2026-w49", version: 1 }));
    expect(stale).toMatchObject({ status: "failed", errorKind: "conflict" });
    const missing = await invoke(request("aps.schedule.read", { planId: "plan-1999-w01" }));
    expect(missing).toMatchObject({ status: "failed", errorKind: "not_found" });
  });

  it("refuses arguments outside the strict input schema without calling the APS", async () => {
    const answer = await invoke(
      request("aps.schedule.publish", { planId: "plan-2026-w49", version: "2", extra: 1 }),
    );
    expect(answer).toMatchObject({ status: "failed", errorKind: "invalid_arguments" });
    expect(aps.publishes()).toHaveLength(0);
  });

  it("answers unavailable when the APS cannot be reached, and does not remember it", async () => {
    await aps.close();
    const read = request("aps.schedule.read", { planId: "plan-2026-w49" });
    expect(await invoke(read)).toMatchObject({ status: "failed", errorKind: "unavailable" });
    const status = ExecutionStatus.parse(
      await (await fetch(`${provider.url}/v1/executions/${read.idempotencyKey}`)).json(),
    );
    expect(status.status).toBe("not_found");
    aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
  });
});
