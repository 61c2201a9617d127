import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeErp, startFakeErp } from "./server.ts";

let erp: FakeErp;

beforeEach(async () => {
  erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
});
afterEach(async () => {
  await erp.close();
});

async function get(path: string, user?: string) {
  const headers: Record<string, string> = user ? { "x-erp-user": user } : {};
  const response = await fetch(`${erp.url}${path}`, { headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("fake ERP", () => {
  it("serves the stock of a material in a plant in its base unit", async () => {
    const stock = await get("/api/materials/bracket-a/stock?plant=plant-a", "alice");
    expect(stock.status).toBe(200);
    expect(stock.body).toMatchObject({
      materialId: "bracket-a",
      plant: "plant-a",
      baseUnit: "PC",
      unrestricted: 1450,
      qualityInspection: 50,
      blocked: 0,
    });
    expect(Date.parse(stock.body.asOf as string)).not.toBeNaN();
  });

  it("answers the stock as it is now, after a goods movement", async () => {
    const moved = await fetch(`${erp.url}/_fake/stock/bracket-a/plant-b`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ unrestricted: 12, qualityInspection: 3, blocked: 1 }),
    });
    expect(moved.status).toBe(204);
    const stock = await get("/api/materials/bracket-a/stock?plant=plant-b", "alice");
    expect(stock.body).toMatchObject({ unrestricted: 12, qualityInspection: 3, blocked: 1 });
  });

  it("serves the material master to any known user", async () => {
    const material = await get("/api/materials/steel-coil-2mm", "carol");
    expect(material).toEqual({
      status: 200,
      body: {
        id: "steel-coil-2mm",
        description: "Steel coil, 2 mm, DC01",
        baseUnit: "KG",
        materialGroup: "raw",
        plants: ["plant-a", "plant-b"],
      },
    });
  });

  it("refuses bob the stock of a plant he may not see", async () => {
    const refused = await get("/api/materials/bracket-a/stock?plant=plant-b", "bob");
    expect(refused).toEqual({
      status: 403,
      body: { error: "forbidden", message: expect.stringContaining("plant-b") },
    });
  });

  it("refuses a request without a known user with 401", async () => {
    expect((await get("/api/materials/bracket-a")).status).toBe(401);
    expect((await get("/api/materials/bracket-a", "mallory")).status).toBe(401);
  });

  it("answers 404 for an unknown material and for a plant that does not maintain it", async () => {
    expect((await get("/api/materials/no-such-part", "alice")).status).toBe(404);
    const unmaintained = await get("/api/materials/frame-c/stock?plant=plant-b", "alice");
    expect(unmaintained.status).toBe(404);
    expect(unmaintained.body.message).toContain("not maintained in plant plant-b");
  });

  it("requires the plant of a stock query", async () => {
    const missing = await get("/api/materials/bracket-a/stock", "alice");
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain("plant");
  });

  it("answers its health without a user", async () => {
    expect(await get("/api/health")).toEqual({ status: 200, body: { status: "ok" } });
  });

  it("logs every read with its user and outcome", async () => {
    await get("/api/materials/bracket-a/stock?plant=plant-a", "bob");
    await get("/api/materials/bracket-a/stock?plant=plant-b", "bob");
    const reads = (await (await fetch(`${erp.url}/_fake/reads`)).json()) as unknown[];
    expect(reads).toEqual([
      { user: "bob", what: "stock", materialId: "bracket-a", plant: "plant-a", statusCode: 200 },
      { user: "bob", what: "stock", materialId: "bracket-a", plant: "plant-b", statusCode: 403 },
    ]);
  });
});
