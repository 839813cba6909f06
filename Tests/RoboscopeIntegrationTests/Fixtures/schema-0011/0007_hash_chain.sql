-- Tamper evidence: every event carries a SHA-256 over the hash of the previous event
-- of its stream and its own canonical content, computed at append (a BEFORE INSERT
-- trigger, which sees the rows the same INSERT wrote before it, so several events of
-- one stream in one batch chain too). Editing, removing or reordering an event breaks
-- the chain at that event or the next one; `roboscope verify --chain` finds it.
-- Rewriting a stream's whole chain from the edit on is not detected by the chain
-- alone: anchor it by publishing stream heads elsewhere (docs/investigations.md).

ALTER TABLE eventlog.events ADD COLUMN hash bytea;

-- The canonical content: fields in a fixed order, separated by the unit separator;
-- jsonb prints keys in one canonical order, timestamps as epoch microseconds.
CREATE FUNCTION eventlog.event_digest(
    previous bytea, event_id uuid, stream_type text, stream_id uuid, stream_version bigint,
    type text, data jsonb, metadata jsonb, recorded_at timestamptz
)
RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
    SELECT sha256(coalesce(previous, '\x'::bytea) || convert_to(concat_ws(E'\x1f',
        event_id::text, stream_type, stream_id::text, stream_version::text, type, data::text, metadata::text,
        (extract(epoch FROM recorded_at) * 1000000)::bigint::text), 'UTF8'))
$$;

CREATE FUNCTION eventlog.chain_hash() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    previous bytea;
BEGIN
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

-- Events written before this migration get their hashes now, stream by stream.
ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only;
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
        previous := eventlog.event_digest(previous, e.event_id, e.stream_type, e.stream_id, e.stream_version,
                                          e.type, e.data, e.metadata, e.recorded_at);
        UPDATE eventlog.events SET hash = previous WHERE position = e.position;
    END LOOP;
END;
$$;
ALTER TABLE eventlog.events ENABLE TRIGGER events_append_only;
ALTER TABLE eventlog.events ALTER COLUMN hash SET NOT NULL;

CREATE TRIGGER events_hash_chain
    BEFORE INSERT ON eventlog.events
    FOR EACH ROW EXECUTE FUNCTION eventlog.chain_hash();

-- The first event (by position) whose stored hash is not what its stream's previous
-- hash and its own content give, or whose stream skips a version: the first broken link.
CREATE FUNCTION eventlog.first_broken_link(
    OUT "position" bigint, OUT stream_type text, OUT stream_id uuid, OUT stream_version bigint, OUT problem text
)
LANGUAGE sql STABLE AS $$
    SELECT x.position, x.stream_type, x.stream_id, x.stream_version,
           CASE WHEN x.stream_version <> coalesce(x.previous_version, 0) + 1
                THEN 'version ' || coalesce(x.previous_version, 0) + 1 || ' of the stream is missing'
                ELSE 'stored hash does not match the previous hash and this event''s content' END
    FROM (
        SELECT e.*, lag(e.hash) OVER w AS previous_hash, lag(e.stream_version) OVER w AS previous_version
        FROM eventlog.events e
        WINDOW w AS (PARTITION BY e.stream_type, e.stream_id ORDER BY e.stream_version)
    ) AS x
    WHERE x.stream_version <> coalesce(x.previous_version, 0) + 1
       OR x.hash IS DISTINCT FROM eventlog.event_digest(x.previous_hash, x.event_id, x.stream_type, x.stream_id,
              x.stream_version, x.type, x.data, x.metadata, x.recorded_at)
    ORDER BY x.position
    LIMIT 1
$$;
