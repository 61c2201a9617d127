-- A notice on channel gatehouse_session_events, payload the session's uid, for each session a
-- statement appended transcript events to; Postgres sends it when the transaction commits. The
-- controller listens (store/session-notices.ts) and takes a pass of that AgentSession at once,
-- instead of reading every running session's transcript every two seconds to find out. A notice is
-- only a cue: any login may NOTIFY on any channel, so the pass reads the transcript itself.

-- Up Migration
CREATE FUNCTION gatehouse_notify_session_events() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
  PERFORM pg_notify('gatehouse_session_events', uid) FROM (SELECT DISTINCT session_uid AS uid FROM appended) s;
  RETURN NULL;
END;
$$;

CREATE TRIGGER session_events_notify
  AFTER INSERT ON session_events
  REFERENCING NEW TABLE AS appended
  FOR EACH STATEMENT EXECUTE FUNCTION gatehouse_notify_session_events();

-- Down Migration
DROP TRIGGER session_events_notify ON session_events;
DROP FUNCTION gatehouse_notify_session_events();
