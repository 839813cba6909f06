-- A restore of the log (deploy/backup/restore-events) inserts every event with the
-- hash and routes it was stored with. The triggers keep supplied values instead of
-- recomputing them, so that `roboscope verify --chain` afterwards checks the backup's
-- own hashes (recomputing would bless whatever the backup holds). Appends
-- (eventlog.append) never supply them, so for live writes nothing changes.

CREATE OR REPLACE FUNCTION eventlog.chain_hash() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    previous bytea;
BEGIN
    IF NEW.hash IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF NEW.stream_version > 1 THEN
        SELECT e.hash INTO previous FROM eventlog.events e
        WHERE e.stream_type = NEW.stream_type AND e.stream_id = NEW.stream_id
          AND e.stream_version = NEW.stream_version - 1;
    END IF;
    NEW.hash := eventlog.event_digest(previous, NEW.event_id, NEW.stream_type, NEW.stream_id, NEW.stream_version,
                                      NEW.type, NEW.data, NEW.metadata, NEW.recorded_at);
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION eventlog.route_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.space_id IS NOT NULL OR NEW.work_session_id IS NOT NULL THEN
        RETURN NEW;
    END IF;
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
