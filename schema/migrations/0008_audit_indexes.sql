-- The audit trail's filters, each served by an index. Every event names the work
-- session and the space it belongs to (set by eventlog.append from the stream's
-- first event: markers never change session, sessions never change space), so "what
-- happened in this session" is an index range, not a scan of the log.

ALTER TABLE eventlog.events ADD COLUMN work_session_id uuid, ADD COLUMN space_id uuid;

-- Events written before this migration get their routes from their streams' first events.
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
UPDATE eventlog.events e SET
    space_id = CASE e.stream_type WHEN 'space' THEN e.stream_id END,
    work_session_id = CASE WHEN e.stream_type IN ('work_session', 'work_session_lock') THEN e.stream_id END;
UPDATE eventlog.events e SET work_session_id = (f.data->>'work_session_id')::uuid
FROM eventlog.events f
WHERE e.stream_type IN ('marker', 'marker_details')
  AND f.stream_type = 'marker' AND f.stream_id = e.stream_id AND f.stream_version = 1;
UPDATE eventlog.events e SET space_id = (f.data->>'space_id')::uuid
FROM eventlog.events f
WHERE e.work_session_id IS NOT NULL
  AND f.stream_type = 'work_session' AND f.stream_id = e.work_session_id AND f.stream_version = 1;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;

CREATE INDEX events_work_session_idx ON eventlog.events (work_session_id, position) WHERE work_session_id IS NOT NULL;
CREATE INDEX events_space_idx ON eventlog.events (space_id, position) WHERE space_id IS NOT NULL;
CREATE INDEX events_actor_idx ON eventlog.events ((metadata->>'actor'), position);
CREATE INDEX events_type_idx ON eventlog.events (type, position);
CREATE INDEX events_recorded_at_idx ON eventlog.events (recorded_at, position);
