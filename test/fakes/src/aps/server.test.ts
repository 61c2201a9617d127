import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAps, type FakeApsOptions, startFakeAps } from "./server.ts";

const PLAN = "/api/plans/plan-2026-w49";
let aps: FakeAps;
let dir: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "fake-aps-"));
  aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
});
afterEach(async () => {
  await aps.close();
  rmSync(dir, { recursive: true, force: true });
});

async function restart(options: Partial<FakeApsOptions> = {}): Promise<void> {
  await aps.close();
  aps = await startFakeAps({ host: "127.0.0.1", port: 0, ...options });
}

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

const draft = (user: string, shiftDays = 1, key?: string) =>
  call("POST", `${PLAN}/drafts`, user, { shiftDays }, key);
const publish = (user: string, version: number, key?: string) =>
  call("POST", `${PLAN}/publish`, user, { version }, key);
const operation = (key: string, user = "gatehouse") => call("GET", `/api/operations/${key}`, user);

describe("fake APS plans and drafts", () => {
  it("serves the seed plan as published version 1", async () => {
    const read = await call("GET", PLAN, "alice");
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: "plan-2026-w49",
      week: "2026-W49",
      version: 1,
      status: "published",
    });
  });

  it("creates an isolated draft shifted by the given days without touching the published plan", async () => {
    const created = await draft("bob");
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ version: 2, status: "draft", basedOnVersion: 1, createdBy: "bob" });
    expect((created.body.lines as { start: string }[])[0]!.start).toBe("2026-12-01");
    const published = await call("GET", PLAN, "bob");
    expect(published.body).toMatchObject({ version: 1 });
    expect((published.body.lines as { start: string }[])[0]!.start).toBe("2026-11-30");
  });

  it("lists a plan's versions with the published and the newest version number", async () => {
    await draft("bob");
    const versions = await call("GET", `${PLAN}/versions`, "carol");
    expect(versions).toEqual({
      status: 200,
      body: {
        planId: "plan-2026-w49",
        publishedVersion: 1,
        latestVersion: 2,
        versions: [
          { version: 1, status: "published", basedOnVersion: null, createdBy: "scheduler" },
          { version: 2, status: "draft", basedOnVersion: 1, createdBy: "bob" },
        ],
      },
    });
  });

  it("refuses a read by a user it does not know with 401", async () => {
    expect((await call("GET", PLAN, "mallory")).status).toBe(401);
  });
});

describe("fake APS publishing rules", () => {
  it("refuses bob's publish with 403 forbidden because he lacks the publish right", async () => {
    await draft("bob");
    const refused = await publish("bob", 2, "key-bob");
    expect(refused).toEqual({ status: 403, body: { error: "forbidden", message: expect.any(String) } });
    expect(aps.publishes()).toHaveLength(0);
    expect((await call("GET", PLAN, "bob")).body).toMatchObject({ version: 1, status: "published" });
  });

  it("lets alice publish bob's draft", async () => {
    await draft("bob");
    const published = await publish("alice", 2, "key-alice");
    expect(published).toMatchObject({ status: 200, body: { version: 2, publishedBy: "alice" } });
  });

  it("refuses a stale version with 409 conflict once a newer draft was published", async () => {
    await draft("alice", 1);
    await draft("alice", 2);
    await publish("alice", 3, "key-3");
    const stale = await publish("alice", 2, "key-2");
    expect(stale).toEqual({
      status: 409,
      body: { error: "conflict", message: expect.stringContaining("stale") },
    });
    expect(aps.publishes().map((event) => event.version)).toEqual([3]);
  });

  it("refuses to publish the published version again with 409 conflict", async () => {
    expect((await publish("alice", 1, "key-1")).status).toBe(409);
  });

  it("publishes exactly once under a repeated idempotency key and replays the same answer", async () => {
    await draft("alice");
    const first = await publish("alice", 2, "key-1");
    const again = await publish("alice", 2, "key-1");
    expect(first.status).toBe(200);
    expect(again).toEqual(first);
    const events = (await (await fetch(`${aps.url}/_fake/publishes`)).json()) as unknown[];
    expect(events).toEqual([
      {
        publicationId: "pub-1",
        planId: "plan-2026-w49",
        version: 2,
        user: "alice",
        idempotencyKey: "key-1",
        publishedAt: expect.any(String),
      },
    ]);
  });

  it("replays a refusal under its key too: bob's second try with the key is the same 403", async () => {
    await draft("bob");
    const first = await publish("bob", 2, "key-bob");
    expect(await publish("bob", 2, "key-bob")).toEqual(first);
  });

  it("refuses an idempotency key reused for a different request with 422", async () => {
    await draft("alice");
    await publish("alice", 2, "key-x");
    const reused = await publish("alice", 3, "key-x");
    expect(reused).toMatchObject({ status: 422, body: { error: "idempotency_key_reused" } });
  });

  it("requires an idempotency key to publish", async () => {
    const missing = await publish("alice", 2);
    expect(missing).toMatchObject({ status: 400, body: { error: "invalid_request" } });
  });
});

describe("fake APS status query by key", () => {
  it("reports a keyed publish with the answer it got", async () => {
    await draft("alice");
    const published = await publish("alice", 2, "key-s");
    expect(await operation("key-s")).toEqual({
      status: 200,
      body: {
        idempotencyKey: "key-s",
        operation: "publish",
        planId: "plan-2026-w49",
        user: "alice",
        recordedAt: expect.any(String),
        statusCode: 200,
        body: published.body,
      },
    });
  });

  it("reports a refused publish as the refusal it got", async () => {
    await draft("bob");
    await publish("bob", 2, "key-b");
    expect((await operation("key-b")).body).toMatchObject({
      operation: "publish",
      user: "bob",
      statusCode: 403,
      body: { error: "forbidden" },
    });
  });

  it("answers 404 not_found for a key never used", async () => {
    expect(await operation("never-used")).toMatchObject({ status: 404, body: { error: "not_found" } });
  });

  it("needs the operation.read right: alice, a planner, may not read the records", async () => {
    expect((await operation("never-used", "alice")).status).toBe(403);
  });
});

describe("fake APS drop switch", () => {
  it("commits the publish, loses the answer, and the status query reports the publish", async () => {
    await draft("alice");
    aps.dropResponses("publish");
    const lost = await publish("alice", 2, "key-drop").then(
      () => "answered",
      (error: unknown) => error,
    );
    expect(lost).toBeInstanceOf(TypeError);
    expect(aps.publishes()).toMatchObject([{ version: 2, idempotencyKey: "key-drop" }]);
    expect((await operation("key-drop")).body).toMatchObject({
      statusCode: 200,
      body: { status: "published", version: 2, publicationId: "pub-1" },
    });
  });

  it("drops only as many answers as asked: the retry with the key gets the first answer, no second effect", async () => {
    await draft("alice");
    aps.dropResponses("publish", 1);
    await expect(publish("alice", 2, "key-drop")).rejects.toThrow();
    const retried = await publish("alice", 2, "key-drop");
    expect(retried).toMatchObject({ status: 200, body: { version: 2, publicationId: "pub-1" } });
    expect(aps.publishes()).toHaveLength(1);
  });

  it("is switched on over HTTP for an APS in another process", async () => {
    await draft("alice");
    const armed = await fetch(`${aps.url}/_fake/drop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "publish", count: 1 }),
    });
    expect(await armed.json()).toEqual({ operation: "publish", pending: 1 });
    await expect(publish("alice", 2, "key-http")).rejects.toThrow();
    expect(aps.publishes()).toHaveLength(1);
  });

  it("is switched off again with count 0", async () => {
    await draft("alice");
    const drop = (count: number) =>
      fetch(`${aps.url}/_fake/drop`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ operation: "publish", count }),
      }).then((r) => r.json());
    expect(await drop(5)).toEqual({ operation: "publish", pending: 5 });
    expect(await drop(0)).toEqual({ operation: "publish", pending: 0 });
    expect(await publish("alice", 2, "key-off")).toMatchObject({ status: 200 });
  });
});

describe("fake APS persistence", () => {
  it("keeps drafts, publishes and keyed answers across a restart with the same state file", async () => {
    const stateFile = join(dir, "aps.json");
    await restart({ stateFile });
    await draft("alice");
    const first = await publish("alice", 2, "key-p");
    await draft("bob", 3);

    await restart({ stateFile });
    expect((await call("GET", PLAN, "carol")).body).toMatchObject({ version: 2, status: "published" });
    expect((await call("GET", `${PLAN}/versions`, "carol")).body).toMatchObject({ latestVersion: 3 });
    expect(aps.publishes()).toMatchObject([{ version: 2, idempotencyKey: "key-p" }]);
    expect(await publish("alice", 2, "key-p")).toEqual(first);
    expect(aps.publishes()).toHaveLength(1);
    expect((await operation("key-p")).body).toMatchObject({ statusCode: 200, body: first.body });
  });

  it("starts from the seed plan without a state file, and forgets on restart", async () => {
    await draft("alice");
    await publish("alice", 2, "key-m");
    await restart();
    expect((await call("GET", PLAN, "alice")).body).toMatchObject({ version: 1 });
    expect(aps.publishes()).toHaveLength(0);
  });
});
