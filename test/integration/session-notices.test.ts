/**
 * Transcript notices on a real Postgres: the gateway's login appends, the controller's login listens
 * (store/session-notices.ts, migration 0013's trigger). An append is noticed once per session and
 * statement, after it commits and not when it rolls back; a lost listening connection says so, comes
 * back and asks for a look at every session; probes that cannot reach the listener (here: sent into
 * another database, as a transaction-mode pooler would lose them) leave it not live, so the controller
 * polls. A notice anyone may forge is only a uid; a forged probe cannot make a deaf listener live.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  listenSessionNotices,
  SESSION_EVENTS_CHANNEL,
  type SessionNotices,
} from "../../operator/src/store/session-notices.ts";
import { createPostgresTranscriptStore } from "../../operator/src/store/transcripts.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

/** What the listener warned of: each time notices stopped counting as live. */
const warnings: string[] = [];
const log = { info: () => {}, warn: (fields: { why?: string }) => void warnings.push(fields.why ?? "") };

/** Resolves once `check()` holds, looking at every notice's turn; rejects after `ms`. */
async function until(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("transcript notices", () => {
  let db: FreshDatabase;
  let gateway: pg.Pool;
  let listener: SessionNotices | undefined;
  const noticed: string[] = [];
  let missed = 0;

  const listen = (pool: pg.Pool = db.operator, probeIntervalMs = 30_000) =>
    listenSessionNotices({
      url: db.operatorUrl,
      pool,
      log,
      handlers: { onNotice: (uid) => noticed.push(uid), onMissed: () => missed++ },
      probeIntervalMs,
      probeTimeoutMs: 1_000,
    });

  beforeEach(async () => {
    db = await freshDatabase();
    gateway = new pg.Pool({ connectionString: db.gatewayUrl, max: 2 });
    noticed.length = 0;
    warnings.length = 0;
    missed = 0;
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
    await gateway?.end();
    await db?.drop();
  });

  const event = (sessionUid: string, kind: string) => ({
    sessionUid,
    source: "agent" as const,
    kind,
    payload: { turn: 1, text: kind },
    atMicros: Date.now() * 1000,
  });

  it("notices each committed append by session uid, once per statement, and is live once its probe came back", async () => {
    listener = await listen();
    expect(listener.live()).toBe(true);
    expect(missed).toBe(1);
    const transcripts = createPostgresTranscriptStore(gateway);
    const [a, b] = [randomUUID(), randomUUID()];
    await transcripts.appendAll([
      event(a, "assistant_text"),
      event(a, "tool_call"),
      event(a, "final_answer"),
    ]);
    await transcripts.append(event(b, "final_answer"));
    await until(() => noticed.length >= 2, "two notices");
    // A later append is noticed after the earlier ones, so nothing else may arrive before it.
    const c = randomUUID();
    await transcripts.append(event(c, "error"));
    await until(() => noticed.includes(c), "the third session's notice");
    expect(noticed).toEqual([a, b, c]);
  });

  it("does not notice an append that rolled back", async () => {
    listener = await listen();
    const client = await gateway.connect();
    const [rolledBack, committed] = [randomUUID(), randomUUID()];
    try {
      await client.query("BEGIN");
      await client.query(
        "INSERT INTO session_events (session_uid, seq, source, kind, payload, at_us) VALUES ($1, 1, 'agent', 'final_answer', '{}', 0)",
        [rolledBack],
      );
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    await createPostgresTranscriptStore(gateway).append(event(committed, "final_answer"));
    await until(() => noticed.includes(committed), "the committed append's notice");
    expect(noticed).toEqual([committed]);
  });

  it("after its connection is terminated, is not live until it reconnected and a probe came back, then asks for every session", async () => {
    listener = await listen();
    expect(missed).toBe(1);
    const { rows } = await db.admin.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'gatehouse-notices' AND datname = $1",
      [db.name],
    );
    expect(rows.map((r) => r.ended)).toEqual([true]);
    // Not live from the lost connection until a probe came back on the new one: then a look at all.
    await until(() => missed === 2, "live again after reconnecting");
    expect(listener.live()).toBe(true);
    expect(warnings).toEqual([expect.stringMatching(/^the listening connection was lost; reconnecting/)]);
    const uid = randomUUID();
    await createPostgresTranscriptStore(gateway).append(event(uid, "final_answer"));
    await until(() => noticed.includes(uid), "an append after the reconnect");
  });

  it("stays not live when its probes cannot reach it (sent into another database), so sessions are polled", async () => {
    const elsewhere = await freshDatabase();
    try {
      listener = await listen(elsewhere.operator);
      expect(listener.live()).toBe(false);
      expect(missed).toBe(0);
      expect(await listener.probe()).toBe(false);
      expect(warnings).toEqual([expect.stringMatching(/^a probe did not come back within 1000 ms/)]);
    } finally {
      await listener?.stop();
      listener = undefined;
      await elsewhere.drop();
    }
  });

  it("starts not live when it cannot connect, says why, and listens once it can", async () => {
    // A login that may not connect yet: the listener's first connect fails, and it retries on its own.
    const late = `late_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
    await db.admin.query(`CREATE ROLE ${late} LOGIN PASSWORD 'x' IN ROLE gatehouse_controller`);
    await db.admin.query(`ALTER ROLE ${late} NOLOGIN`);
    const url = new URL(db.url);
    url.username = late;
    url.password = "x";
    try {
      listener = await listenSessionNotices({
        url: url.toString(),
        pool: db.operator,
        log,
        handlers: { onNotice: (uid) => noticed.push(uid), onMissed: () => missed++ },
        probeTimeoutMs: 1_000,
      });
      expect(listener.live()).toBe(false);
      expect(warnings).toEqual([expect.stringMatching(/^could not listen: .*not permitted to log in/)]);
      await db.admin.query(`ALTER ROLE ${late} LOGIN`);
      await until(() => listener!.live(), "live once it may log in", 30_000);
      expect(missed).toBe(1);
    } finally {
      await listener?.stop();
      listener = undefined;
      await db.admin.query(`DROP ROLE ${late}`);
    }
  });

  it("treats a forged notice as a uid only, and a forged probe payload does not make a deaf listener live", async () => {
    // A login with no Gatehouse role at all may still NOTIFY: Postgres has no privileges on channels.
    const stranger = `stranger_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
    await db.admin.query(`CREATE ROLE ${stranger} LOGIN PASSWORD 'x'`);
    const strangerUrl = new URL(db.url);
    strangerUrl.username = stranger;
    strangerUrl.password = "x";
    const client = new pg.Client({ connectionString: strangerUrl.toString() });
    await client.connect();
    const elsewhere = await freshDatabase();
    try {
      // Deaf: its probes go to another database. The stranger sends what a probe looks like, and a uid.
      listener = await listen(elsewhere.operator);
      await client.query("SELECT pg_notify($1, $2)", [SESSION_EVENTS_CHANNEL, `probe:${randomUUID()}`]);
      await client.query("SELECT pg_notify($1, $2)", [SESSION_EVENTS_CHANNEL, "not-a-session"]);
      await until(() => noticed.includes("not-a-session"), "the forged notice");
      expect(listener.live()).toBe(false);
      expect(missed).toBe(0);
    } finally {
      await client.end();
      await listener?.stop();
      listener = undefined;
      await elsewhere.drop();
      await db.admin.query(`DROP ROLE ${stranger}`);
    }
  });
});
