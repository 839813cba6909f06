-- The first event (by position) whose stored hash is not what its stream's previous
-- hash and its own content give, or whose stream skips a version: the first broken link.
CREATE OR REPLACE FUNCTION eventlog.first_broken_link(
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
