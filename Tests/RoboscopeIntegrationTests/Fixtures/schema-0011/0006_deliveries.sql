-- What the WebSocket gateways read: events in delivery order, each with the topics
-- it belongs to and, for a marker, its details as of the same transaction (clients
-- get markers in the REST shape, details included).
--
-- Routing needs no extra columns: a marker never moves to another work session and
-- a work session never moves to another space (the commands refuse it), so the
-- first event of the marker's or session's stream names the parent for good. Deleted
-- events carry only ids, so they are routed the same way.

-- The events after a cursor, with their routes.
--   Live (until_* null): up to the horizon, as eventlog.read_after; the horizon is
--   read in its own statement before the scan (see 0005).
--   Catch-up (until_* set): the events after the cursor up to and including `until`,
--   of one work session or one space only.
CREATE FUNCTION eventlog.deliveries(
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
    SELECT r.* FROM (
        SELECT e.position, e.transaction_id, e.stream_type, e.stream_id, e.stream_version, e.type, e.data,
               e.metadata->>'actor', e.recorded_at,
               CASE e.stream_type
                   WHEN 'work_session' THEN e.stream_id
                   WHEN 'work_session_lock' THEN e.stream_id
                   WHEN 'marker' THEN eventlog.parent_of('marker', e.stream_id, 'work_session_id')
                   WHEN 'marker_details' THEN eventlog.parent_of('marker', e.stream_id, 'work_session_id')
               END,
               CASE e.stream_type
                   WHEN 'space' THEN e.stream_id
                   WHEN 'work_session' THEN eventlog.parent_of('work_session', e.stream_id, 'space_id')
               END,
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
        ORDER BY e.transaction_id, e.position
    ) AS r(position, transaction_id, stream_type, stream_id, stream_version, type, data, actor, recorded_at,
           work_session_id, space_id, details)
    WHERE (only_session IS NULL OR r.work_session_id = only_session)
      AND (only_space IS NULL OR r.space_id = only_space)
    ORDER BY r.transaction_id, r.position
    LIMIT max_events;
END;
$$;

-- The parent id a stream's first event names (`field` of its data).
CREATE FUNCTION eventlog.parent_of(kind text, id uuid, field text)
RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT (e.data->>field)::uuid FROM eventlog.events e
    WHERE e.stream_type = kind AND e.stream_id = id AND e.stream_version = 1
$$;

-- Where a new follower starts: the last event that no running transaction can precede.
CREATE FUNCTION eventlog.follow_head(OUT transaction_id xid8, OUT "position" bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    horizon xid8;
BEGIN
    SELECT pg_snapshot_xmin(pg_current_snapshot()) INTO horizon;
    SELECT e.transaction_id, e.position INTO transaction_id, "position"
    FROM eventlog.events e
    WHERE e.transaction_id < horizon
    ORDER BY e.transaction_id DESC, e.position DESC
    LIMIT 1;
    transaction_id := coalesce(transaction_id, '0'::xid8);
    "position" := coalesce("position", 0);
END;
$$;
