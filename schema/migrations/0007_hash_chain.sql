-- Tamper evidence: every event carries a SHA-256 over the hash of the previous event
-- of its stream and its own canonical content (schema/functions/event_digest.sql),
-- computed at append by the trigger of schema/functions/chain_hash.sql.

ALTER TABLE eventlog.events ADD COLUMN hash bytea;

-- Events written before this migration get their hashes now, stream by stream (the
-- digest written out here: a migration does not depend on functions, which are
-- applied after every migration).
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
DO $$
DECLARE
    e eventlog.events;
    previous bytea;
    last_stream text := '';
BEGIN
    FOR e IN SELECT * FROM eventlog.events ORDER BY stream_type, stream_id, stream_version LOOP
        IF e.stream_type || ':' || e.stream_id <> last_stream THEN
            previous := NULL;
            last_stream := e.stream_type || ':' || e.stream_id;
        END IF;
        previous := sha256(coalesce(previous, '\x'::bytea) || convert_to(concat_ws(E'\x1f',
            e.event_id::text, e.stream_type, e.stream_id::text, e.stream_version::text, e.type, e.data::text,
            e.metadata::text, (extract(epoch FROM e.recorded_at) * 1000000)::bigint::text), 'UTF8'));
        UPDATE eventlog.events SET hash = previous WHERE position = e.position;
    END LOOP;
END;
$$;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;
ALTER TABLE eventlog.events ALTER COLUMN hash SET NOT NULL;
