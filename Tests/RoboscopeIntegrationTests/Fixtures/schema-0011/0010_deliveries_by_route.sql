-- The gateways' read uses the routes every event now carries (0008) instead of
-- looking up each event's parents while scanning: the same answer, fewer index probes
-- per event on the follower's hot path.
CREATE OR REPLACE FUNCTION eventlog.deliveries(
    after_transaction xid8, after_position bigint, max_events integer,
    until_transaction xid8 DEFAULT NULL, until_position bigint DEFAULT NULL,
    only_session uuid DEFAULT NULL, only_space uuid DEFAULT NULL
)
RETURNS TABLE (
    "position" bigint, transaction_id xid8, stream_type text, stream_id uuid, stream_version bigint,
    type text, data jsonb, actor text, recorded_at timestamptz,
    work_session_id uuid, space_id uuid, details jsonb
)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    horizon xid8;
BEGIN
    IF until_transaction IS NULL THEN
        SELECT pg_snapshot_xmin(pg_current_snapshot()) INTO horizon;
    END IF;
    RETURN QUERY
    SELECT e.position, e.transaction_id, e.stream_type, e.stream_id, e.stream_version, e.type, e.data,
           e.metadata->>'actor', e.recorded_at,
           -- A space's own events go to its topic only.
           CASE WHEN e.stream_type = 'space' THEN NULL ELSE e.work_session_id END,
           -- Marker, details and lock events go to the session's topic only.
           CASE WHEN e.stream_type IN ('space', 'work_session') THEN e.space_id END,
           CASE WHEN e.stream_type = 'marker' AND e.type <> 'marker.deleted' THEN (
               SELECT CASE WHEN d.type = 'marker_details.deleted' THEN NULL ELSE d.data END
               FROM eventlog.events d
               WHERE d.stream_type = 'marker_details' AND d.stream_id = e.stream_id
                 AND d.transaction_id <= e.transaction_id
               ORDER BY d.stream_version DESC LIMIT 1)
           END
    FROM eventlog.events e
    WHERE (e.transaction_id, e.position) > (after_transaction, after_position)
      AND (horizon IS NULL OR e.transaction_id < horizon)
      AND (until_transaction IS NULL OR (e.transaction_id, e.position) <= (until_transaction, until_position))
      AND (only_session IS NULL OR (e.work_session_id = only_session AND e.stream_type <> 'space'))
      AND (only_space IS NULL OR (e.space_id = only_space AND e.stream_type IN ('space', 'work_session')))
    ORDER BY e.transaction_id, e.position
    LIMIT max_events;
END;
$$;
