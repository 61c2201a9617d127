/**
 * Session transcripts in Postgres (`session_events`, DESIGN §2/§4): the history a resuming agent is
 * replayed. Events are numbered per session from 1 and listed in that order; appends for one session
 * are serialized with a per-session advisory lock so numbers have no gaps. Each event carries its
 * `source`: `core` for what the operator writes from its own records, `agent` for what the agent
 * posts (never replayed as a tool result). The shape matches `HistoryEntry` of the agent
 * protocol (`operator/src/api/agent-protocol.ts`). A model's raw text may hold a lone surrogate or
 * U+0000 (Core refuses both as arguments), and a provider's result text may hold U+0000; `jsonb` stores
 * neither, so the history keeps U+FFFD in their place rather than losing the event (`storable-json.ts`).
 */
import type pg from "pg";
import type { JsonObject } from "../core/canonical.ts";
import { GatehouseError } from "../core/errors.ts";
import { toSafeInteger } from "./sql-values.ts";
import { storableJson } from "./storable-json.ts";

/**
 * Who wrote an event: `core` — the operator, from its own records (user messages from the spec, tool
 * results and approval outcomes from Core's records); `agent` — the agent's own reports.
 */
export type EventSource = "agent" | "core";

/** One stored event. */
export interface SessionEvent {
  sessionUid: string;
  /** 1-based, gap-free per session. */
  seq: number;
  source: EventSource;
  /** e.g. `user_message`, `tool_result`, `approval_outcome`, `assistant_text`, `final_answer`. */
  kind: string;
  payload: JsonObject;
  atMicros: number;
}

/** An event to append; with `dedupeKey`, at most one event per session carries that key. */
export type NewSessionEvent = Omit<SessionEvent, "seq"> & { dedupeKey?: string };

/** Appends and lists transcript events. */
export interface TranscriptStore {
  /**
   * Appends an event after the session's last one; returns it with its seq. When an event with the
   * same `dedupeKey` exists for the session, nothing is appended and that event is returned.
   */
  append(event: NewSessionEvent): Promise<SessionEvent>;
  /**
   * Appends `events` of one session, in order, as `append` would one by one — in one transaction and
   * one statement. Returns each event (appended, or the one its `dedupeKey` found) in input order.
   * Errors: `invalid_arguments` for events of more than one session or a repeated `dedupeKey`.
   */
  appendAll(events: readonly NewSessionEvent[]): Promise<SessionEvent[]>;
  /** Events with seq > `afterSeq` (default 0), ascending, at most `limit` (default 1000). */
  list(sessionUid: string, options?: { afterSeq?: number; limit?: number }): Promise<SessionEvent[]>;
  /**
   * The first event of `kind` whose payload field `field` is the string `value`: found in the database,
   * so a long transcript is never read into memory to find one event.
   */
  findFirst(
    sessionUid: string,
    kind: string,
    field: string,
    value: string,
  ): Promise<SessionEvent | undefined>;
}

/** Advisory lock classid for transcript appends (objid = hashtext(session uid)); see `audit/log.ts`. */
export const TRANSCRIPT_LOCK_CLASS = 0x47415446;

const SOURCES: readonly EventSource[] = ["agent", "core"];

/**
 * A Postgres-backed transcript store on `pool`. Errors of `append`: `invalid_arguments` for a source
 * other than `agent` or `core`; pg errors.
 */
export function createPostgresTranscriptStore(pool: pg.Pool): TranscriptStore {
  async function appendAll(events: readonly NewSessionEvent[]): Promise<SessionEvent[]> {
    const sessionUid = checkBatch(events);
    if (sessionUid === undefined) return [];
    const client = await pool.connect();
    try {
      // One round trip: a simple query may hold two statements but no parameters (budget-ledger.ts).
      await client.query(
        `BEGIN; SELECT pg_advisory_xact_lock(${TRANSCRIPT_LOCK_CLASS}, hashtext(${client.escapeLiteral(sessionUid)}))`,
      );
      // Under the session's lock, in a statement begun after it was taken: a concurrent append of the
      // same key has committed and is found, and the last seq read is the session's last.
      const result = await client.query({
        name: "transcripts.appendAll",
        text: APPEND_ALL,
        values: [
          sessionUid,
          events.map((e) => e.source),
          events.map((e) => e.kind),
          events.map((e) => JSON.stringify(storableJson(e.payload))),
          events.map((e) => e.atMicros),
          events.map((e) => e.dedupeKey ?? null),
        ],
      });
      await client.query("COMMIT");
      return result.rows.map(eventFromRow);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  return {
    async append(event) {
      const [appended] = await appendAll([event]);
      if (!appended) throw new GatehouseError("internal", "the transcript append returned no event");
      return appended;
    },

    appendAll,

    async list(sessionUid, options = {}) {
      const result = await pool.query(
        `SELECT session_uid, seq, source, kind, payload, at_us FROM session_events
          WHERE session_uid = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [sessionUid, options.afterSeq ?? 0, options.limit ?? 1000],
      );
      return result.rows.map(eventFromRow);
    },

    async findFirst(sessionUid, kind, field, value) {
      const result = await pool.query(
        `SELECT session_uid, seq, source, kind, payload, at_us FROM session_events
          WHERE session_uid = $1 AND kind = $2 AND payload->>$3 = $4 ORDER BY seq LIMIT 1`,
        [sessionUid, kind, field, value],
      );
      return result.rows[0] ? eventFromRow(result.rows[0]) : undefined;
    },
  };
}

/**
 * Appends the batch ($2–$6: parallel arrays) to session $1: events whose dedupe key the session holds
 * already are answered with the stored one, the others numbered after the session's last seq; every
 * event comes back in input order.
 */
const APPEND_ALL = `
  WITH input AS (
    SELECT * FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::bigint[], $6::text[])
      WITH ORDINALITY AS i(source, kind, payload, at_us, dedupe_key, ord)
  ), found AS (
    SELECT i.ord, s.session_uid, s.seq, s.source, s.kind, s.payload, s.at_us
      FROM input i JOIN session_events s ON s.session_uid = $1 AND s.dedupe_key = i.dedupe_key
  ), fresh AS (
    SELECT i.*, (SELECT COALESCE(MAX(seq), 0) FROM session_events WHERE session_uid = $1)
                + row_number() OVER (ORDER BY i.ord) AS seq
      FROM input i WHERE i.ord NOT IN (SELECT ord FROM found)
  ), inserted AS (
    INSERT INTO session_events (session_uid, seq, source, kind, payload, at_us, dedupe_key)
    SELECT $1, seq, source, kind, payload, at_us, dedupe_key FROM fresh
    RETURNING session_uid, seq, source, kind, payload, at_us
  )
  SELECT session_uid, seq, source, kind, payload, at_us FROM (
    SELECT ord, session_uid, seq, source, kind, payload, at_us FROM found
    UNION ALL
    SELECT f.ord, n.session_uid, n.seq, n.source, n.kind, n.payload, n.at_us
      FROM inserted n JOIN fresh f ON f.seq = n.seq
  ) answered ORDER BY ord`;

/** The session of a batch (undefined when empty); refuses a mixed, ill-sourced or self-repeating one. */
function checkBatch(events: readonly NewSessionEvent[]): string | undefined {
  const keys = new Set<string>();
  for (const event of events) {
    if (!SOURCES.includes(event.source)) {
      throw new GatehouseError("invalid_arguments", `event source must be one of ${SOURCES.join(", ")}`);
    }
    if (event.sessionUid !== events[0]?.sessionUid) {
      throw new GatehouseError("invalid_arguments", "a batch of transcript events is of one session");
    }
    if (event.dedupeKey !== undefined) {
      if (keys.has(event.dedupeKey)) {
        throw new GatehouseError("invalid_arguments", `dedupe key ${event.dedupeKey} repeats in one batch`);
      }
      keys.add(event.dedupeKey);
    }
  }
  return events[0]?.sessionUid;
}

function eventFromRow(row: Record<string, unknown>): SessionEvent {
  return {
    sessionUid: String(row.session_uid),
    seq: toSafeInteger(row.seq, "seq"),
    source: String(row.source) as EventSource,
    kind: String(row.kind),
    payload: row.payload as JsonObject,
    atMicros: toSafeInteger(row.at_us, "at_us"),
  };
}
