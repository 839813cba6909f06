-- The hash chains of the streams of one work session (every stream with an event in
-- it: the session, its markers, their details, its lock), of one space (everything in
-- it), or of the whole log (both null): how many events and streams were checked, and
-- the first event (by position) whose stored hash is not what its stream's previous hash
-- and its own content give, or whose stream skips a version (NULLs when intact).
CREATE OR REPLACE FUNCTION eventlog.chain_check(only_session uuid, only_space uuid)
RETURNS TABLE (checked bigint, streams bigint, "position" bigint, stream_type text, stream_id uuid,
               stream_version bigint, problem text)
LANGUAGE sql STABLE AS $$
    WITH scope AS (
        SELECT DISTINCT e.stream_type, e.stream_id FROM eventlog.events e
        WHERE (only_session IS NULL OR e.work_session_id = only_session)
          AND (only_space IS NULL OR e.space_id = only_space)
    ),
    chained AS (
        SELECT e.*, lag(e.hash) OVER w AS previous_hash, lag(e.stream_version) OVER w AS previous_version
        FROM eventlog.events e
        -- The whole log needs no scope to join.
        WHERE (only_session IS NULL AND only_space IS NULL)
           OR (e.stream_type, e.stream_id) IN (SELECT s.stream_type, s.stream_id FROM scope s)
        WINDOW w AS (PARTITION BY e.stream_type, e.stream_id ORDER BY e.stream_version)
    ),
    broken AS (
        SELECT x.position, x.stream_type, x.stream_id, x.stream_version,
               CASE WHEN x.stream_version <> coalesce(x.previous_version, 0) + 1
                    THEN 'version ' || coalesce(x.previous_version, 0) + 1 || ' of the stream is missing'
                    ELSE 'stored hash does not match the previous hash and this event''s content' END AS problem
        FROM chained x
        WHERE x.stream_version <> coalesce(x.previous_version, 0) + 1
           OR x.hash IS DISTINCT FROM eventlog.event_digest(x.previous_hash, x.event_id, x.stream_type, x.stream_id,
                  x.stream_version, x.type, x.data, x.metadata, x.recorded_at)
        ORDER BY x.position
        LIMIT 1
    )
    SELECT (SELECT count(*) FROM chained), (SELECT count(*) FROM scope),
           b.position, b.stream_type, b.stream_id, b.stream_version, b.problem
    FROM (SELECT 1) AS one LEFT JOIN broken b ON true
$$;
