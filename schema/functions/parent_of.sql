-- The parent id a stream's first event names (`field` of its data). Markers never
-- move to another work session and work sessions never move to another space (the
-- commands refuse it), so the first event names the parent for good.
CREATE OR REPLACE FUNCTION eventlog.parent_of(kind text, id uuid, field text)
RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT (e.data->>field)::uuid FROM eventlog.events e
    WHERE e.stream_type = kind AND e.stream_id = id AND e.stream_version = 1
$$;
