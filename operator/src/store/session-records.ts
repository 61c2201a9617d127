/**
 * Session records (core/session-record.ts) read from the transcript incrementally: the last folded
 * state of each session is kept, and only events after its `lastSeq` are read from Postgres the next
 * time — so a long session's invoke does not re-read its whole history (it would cost O(events) per
 * call). Every read still goes to Postgres for the newer events, so several replicas appending to one
 * transcript stay consistent. The cache is bounded (least recently used sessions are dropped; their
 * next read folds from the start again).
 */
import {
  EMPTY_SESSION_RECORD_STATE,
  foldEvents,
  type SessionRecord,
  type SessionRecordState,
} from "../core/session-record.ts";
import type { TranscriptStore } from "./transcripts.ts";

/** Reads session records. */
export interface SessionRecords {
  /** The record of session `sessionUid` as of now. Errors: Postgres errors. */
  recordOf(sessionUid: string): Promise<SessionRecord>;
}

/** Events read per query while catching up. */
const PAGE = 5_000;

/** Builds the reader over `transcripts`, keeping at most `maxSessions` states (default 10 000). */
export function sessionRecords(transcripts: TranscriptStore, maxSessions = 10_000): SessionRecords {
  const states = new Map<string, SessionRecordState>();
  return {
    async recordOf(sessionUid) {
      let state = states.get(sessionUid) ?? EMPTY_SESSION_RECORD_STATE;
      for (;;) {
        const events = await transcripts.list(sessionUid, { afterSeq: state.lastSeq, limit: PAGE });
        state = foldEvents(state, events);
        if (events.length < PAGE) break;
      }
      // A concurrent read may have folded further; keep the furthest.
      const current = states.get(sessionUid);
      if (!current || current.lastSeq <= state.lastSeq) {
        states.delete(sessionUid);
        states.set(sessionUid, state);
        if (states.size > maxSessions) states.delete(states.keys().next().value as string);
      }
      return state.record;
    },
  };
}
