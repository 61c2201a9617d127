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
  return {
    async append(event) {
      if (!SOURCES.includes(event.source)) {
        throw new GatehouseError("invalid_arguments", `event source must be one of ${SOURCES.join(", ")}`);
      }
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
          TRANSCRIPT_LOCK_CLASS,
          event.sessionUid,
        ]);
        if (event.dedupeKey !== undefined) {
          // Under the session's lock, so a concurrent append of the same key waits and then finds it.
          const existing = await client.query(
            `SELECT session_uid, seq, source, kind, payload, at_us FROM session_events
              WHERE session_uid = $1 AND dedupe_key = $2`,
            [event.sessionUid, event.dedupeKey],
          );
          if (existing.rows[0]) {
            await client.query("COMMIT");
            return eventFromRow(existing.rows[0]);
          }
        }
        const result = await client.query(
          `INSERT INTO session_events (session_uid, seq, source, kind, payload, at_us, dedupe_key)
           SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5, $6 FROM session_events WHERE session_uid = $1
           RETURNING session_uid, seq, source, kind, payload, at_us`,
          [
            event.sessionUid,
            event.source,
            event.kind,
            JSON.stringify(storableJson(event.payload)),
            event.atMicros,
            event.dedupeKey ?? null,
          ],
        );
        await client.query("COMMIT");
        return eventFromRow(result.rows[0]);
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },

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
