-- The audit trail's filters, each served by an index. Every event names the work
-- session and the space it belongs to (set at append by a trigger, from the stream's
-- first event: markers never change session, sessions never change space), so "what
-- happened in this session" is an index range, not a scan of the log.

ALTER TABLE eventlog.events ADD COLUMN work_session_id uuid, ADD COLUMN space_id uuid;

CREATE FUNCTION eventlog.route_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    CASE NEW.stream_type
        WHEN 'space' THEN
            NEW.space_id := NEW.stream_id;
        WHEN 'work_session' THEN
            NEW.work_session_id := NEW.stream_id;
            NEW.space_id := CASE WHEN NEW.stream_version = 1 THEN (NEW.data->>'space_id')::uuid
                                 ELSE eventlog.parent_of('work_session', NEW.stream_id, 'space_id') END;
        WHEN 'work_session_lock' THEN
            NEW.work_session_id := NEW.stream_id;
            NEW.space_id := eventlog.parent_of('work_session', NEW.stream_id, 'space_id');
        WHEN 'marker' THEN
            NEW.work_session_id := CASE WHEN NEW.stream_version = 1 THEN (NEW.data->>'work_session_id')::uuid
                                        ELSE eventlog.parent_of('marker', NEW.stream_id, 'work_session_id') END;
            NEW.space_id := eventlog.parent_of('work_session', NEW.work_session_id, 'space_id');
        WHEN 'marker_details' THEN
            NEW.work_session_id := eventlog.parent_of('marker', NEW.stream_id, 'work_session_id');
            NEW.space_id := eventlog.parent_of('work_session', NEW.work_session_id, 'space_id');
        ELSE
            NULL;
    END CASE;
    RETURN NEW;
END;
$$;

ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only;
UPDATE eventlog.events e SET
    space_id = CASE e.stream_type WHEN 'space' THEN e.stream_id END,
    work_session_id = CASE WHEN e.stream_type IN ('work_session', 'work_session_lock') THEN e.stream_id END;
UPDATE eventlog.events e SET work_session_id = eventlog.parent_of('marker', e.stream_id, 'work_session_id')
WHERE e.stream_type IN ('marker', 'marker_details');
UPDATE eventlog.events e SET space_id = eventlog.parent_of('work_session', e.work_session_id, 'space_id')
WHERE e.work_session_id IS NOT NULL;
ALTER TABLE eventlog.events ENABLE TRIGGER events_append_only;

-- Fires before events_hash_chain (triggers fire in name order); the hash does not
-- cover these derived columns.
CREATE TRIGGER events_a_route
    BEFORE INSERT ON eventlog.events
    FOR EACH ROW EXECUTE FUNCTION eventlog.route_event();

CREATE INDEX events_work_session_idx ON eventlog.events (work_session_id, position) WHERE work_session_id IS NOT NULL;
CREATE INDEX events_space_idx ON eventlog.events (space_id, position) WHERE space_id IS NOT NULL;
CREATE INDEX events_actor_idx ON eventlog.events ((metadata->>'actor'), position);
CREATE INDEX events_type_idx ON eventlog.events (type, position);
CREATE INDEX events_recorded_at_idx ON eventlog.events (recorded_at, position);
