import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAps, startFakeAps } from "./server.ts";

let aps: FakeAps;

beforeEach(async () => {
  aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
});
afterEach(async () => {
  await aps.close();
});

async function call(method: string, path: string, user: string, body?: unknown, key?: string) {
  const headers: Record<string, string> = { "x-aps-user": user };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (key) headers["idempotency-key"] = key;
  const response = await fetch(`${aps.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("fake APS", () => {
  it("serves the seed plan as published version 1", async () => {
    const read = await call("GET", "/api/plans/plan-2026-w49", "alice");
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: "plan-2026-w49",
      week: "2026-W49",
      version: 1,
      status: "published",
    });
  });

  it("creates an isolated draft shifted by the given days without touching the published plan", async () => {
    const draft = await call("POST", "/api/plans/plan-2026-w49/drafts", "bob", { shiftDays: 1 });
    expect(draft.status).toBe(201);
    expect(draft.body).toMatchObject({ version: 2, status: "draft", basedOnVersion: 1 });
    expect((draft.body.lines as { start: string }[])[0]!.start).toBe("2026-12-01");
    const published = await call("GET", "/api/plans/plan-2026-w49", "bob");
    expect(published.body).toMatchObject({ version: 1 });
    expect((published.body.lines as { start: string }[])[0]!.start).toBe("2026-11-30");
  });

  it("publishes exactly once under a repeated idempotency key and replays the same answer", async () => {
    await call("POST", "/api/plans/plan-2026-w49/drafts", "alice", { shiftDays: 1 });
    const first = await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 2 }, "key-1");
    const again = await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 2 }, "key-1");
    expect(first.status).toBe(200);
    expect(again).toEqual(first);
    const events = (await (await fetch(`${aps.url}/_fake/publishes`)).json()) as unknown[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      planId: "plan-2026-w49",
      version: 2,
      user: "alice",
      idempotencyKey: "key-1",
    });
  });

  it("refuses bob's publish because he lacks the publish right", async () => {
    await call("POST", "/api/plans/plan-2026-w49/drafts", "bob", { shiftDays: 1 });
    const refused = await call("POST", "/api/plans/plan-2026-w49/publish", "bob", { version: 2 }, "key-bob");
    expect(refused).toEqual({ status: 403, body: { error: "forbidden", message: expect.any(String) } });
    expect(aps.publishes()).toHaveLength(0);
  });

  it("refuses a stale version with 409 once a newer draft was published", async () => {
    await call("POST", "/api/plans/plan-2026-w49/drafts", "alice", { shiftDays: 1 });
    await call("POST", "/api/plans/plan-2026-w49/drafts", "alice", { shiftDays: 2 });
    await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 3 }, "key-3");
    const stale = await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 2 }, "key-2");
    expect(stale.status).toBe(409);
    expect(aps.publishes().map((event) => event.version)).toEqual([3]);
  });

  it("refuses an idempotency key reused for a different request", async () => {
    await call("POST", "/api/plans/plan-2026-w49/drafts", "alice", { shiftDays: 1 });
    await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 2 }, "key-x");
    const reused = await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 3 }, "key-x");
    expect(reused.status).toBe(422);
  });

  it("requires an idempotency key to publish", async () => {
    const missing = await call("POST", "/api/plans/plan-2026-w49/publish", "alice", { version: 2 });
    expect(missing.status).toBe(400);
  });
});
