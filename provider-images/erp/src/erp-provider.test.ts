import { type FakeErp, startFakeErp } from "@gatehouse/fakes/erp";
import { ExecutionStatus, Health, type InvokeRequest, Receipt } from "@gatehouse/provider-sdk";
import { type ProviderServer, serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createErpClient } from "./erp-client.ts";
import { erpHandlers } from "./handlers.ts";
import { erpHealth } from "./health.ts";
import { erpManifest } from "./manifest.ts";

let erp: FakeErp;
let provider: ProviderServer;
let counter = 0;

beforeEach(async () => {
  erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
  const client = createErpClient(erp.url);
  provider = await serveProvider({
    manifest: erpManifest,
    handlers: erpHandlers(client),
    health: erpHealth(client, 500),
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
  });
});
afterEach(async () => {
  await provider.close();
  await erp.close();
});

function request(capability: string, args: Record<string, unknown>, user = "alice"): InvokeRequest {
  counter += 1;
  return {
    executionId: `exec-${counter}`,
    idempotencyKey: `key-${counter}`,
    capability,
    arguments: args,
    subject: { user, groups: [] },
  };
}

async function invoke(body: InvokeRequest): Promise<Receipt> {
  const response = await fetch(`${provider.url}/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return Receipt.parse(await response.json());
}

describe("erp provider against the fake ERP", () => {
  it("reads the stock as the ERP has it now, as the subject's ERP user", async () => {
    erp.state.setStock("bracket-a", "plant-b", { unrestricted: 7, qualityInspection: 2, blocked: 1 });
    const answer = await invoke(request("erp.material.stock", { materialId: "bracket-a", plant: "plant-b" }));
    expect(answer).toMatchObject({
      status: "succeeded",
      result: {
        materialId: "bracket-a",
        plant: "plant-b",
        baseUnit: "PC",
        unrestricted: 7,
        qualityInspection: 2,
        blocked: 1,
      },
    });
    expect(erp.reads()).toEqual([
      { user: "alice", what: "stock", materialId: "bracket-a", plant: "plant-b", statusCode: 200 },
    ]);
  });

  it("reads the material master through the hyphenated capability erp.material-master.read", async () => {
    const answer = await invoke(request("erp.material-master.read", { materialId: "frame-c" }));
    expect(answer).toEqual({
      status: "succeeded",
      result: {
        id: "frame-c",
        description: "Welded frame C",
        baseUnit: "PC",
        materialGroup: "finished",
        plants: ["plant-a"],
      },
    });
  });

  it("answers forbidden when the ERP refuses bob the stock of a plant he may not see", async () => {
    const refused = await invoke(
      request("erp.material.stock", { materialId: "bracket-a", plant: "plant-b" }, "bob"),
    );
    expect(refused).toMatchObject({ status: "failed", errorKind: "forbidden" });
    expect(refused.message).toContain("plant-b");
  });

  it("acts as the bound business account when Core sends one", async () => {
    const asAlice = {
      ...request("erp.material.stock", { materialId: "bracket-a", plant: "plant-b" }, "bob"),
      account: "alice",
    };
    expect(await invoke(asAlice)).toMatchObject({ status: "succeeded" });
    expect(erp.reads().map((read) => read.user)).toEqual(["alice"]);
  });

  it("answers not_found for an unknown material and for a plant that does not maintain it", async () => {
    const unknown = await invoke(request("erp.material-master.read", { materialId: "no-such-part" }));
    expect(unknown).toMatchObject({ status: "failed", errorKind: "not_found" });
    const unmaintained = await invoke(
      request("erp.material.stock", { materialId: "frame-c", plant: "plant-b" }),
    );
    expect(unmaintained).toMatchObject({ status: "failed", errorKind: "not_found" });
  });

  it("refuses arguments outside the strict input schema without calling the ERP", async () => {
    const answer = await invoke(request("erp.material.stock", { materialId: "bracket-a", plant: "Plant A" }));
    expect(answer).toMatchObject({ status: "failed", errorKind: "invalid_arguments" });
    expect(answer.message).toContain("plant");
    expect(erp.reads()).toEqual([]);
  });

  it("answers unavailable and reports degraded health when the ERP cannot be reached", async () => {
    expect(Health.parse(await (await fetch(`${provider.url}/v1/health`)).json())).toEqual({ status: "ok" });
    await erp.close();
    const read = request("erp.material.stock", { materialId: "bracket-a", plant: "plant-a" });
    expect(await invoke(read)).toMatchObject({ status: "failed", errorKind: "unavailable" });
    const status = ExecutionStatus.parse(
      await (await fetch(`${provider.url}/v1/executions/${read.idempotencyKey}`)).json(),
    );
    expect(status.status).toBe("not_found");
    const health = Health.parse(await (await fetch(`${provider.url}/v1/health`)).json());
    expect(health).toMatchObject({ status: "degraded", message: expect.stringContaining("ERP unreachable") });
    erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
  });
});
