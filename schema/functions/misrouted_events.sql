-- For `roboscope verify`: events whose stored routes (work_session_id, space_id and
-- tenant, set by eventlog.append) differ from what their streams say now. Worked out
-- independently of the append: the parent named by each stream's first event, and the
-- tenant named by its space's first event (a token revocation's: the tenant its first
-- event revokes, else the tenant of the operator who made it).
CREATE OR REPLACE FUNCTION eventlog.misrouted_events()
RETURNS TABLE ("position" bigint, stored jsonb, expected jsonb)
LANGUAGE sql STABLE AS $$
    SELECT r.position,
           jsonb_build_object('work_session_id', r.work_session_id, 'space_id', r.space_id, 'tenant', r.tenant),
           jsonb_build_object('work_session_id', r.expected_session, 'space_id', r.expected_space,
                              'tenant', r.expected_tenant)
    FROM (
        SELECT p.*,
               CASE WHEN p.stream_type = 'token_revocation' THEN
                   (SELECT coalesce(f.data->>'tenant', split_part(f.data->>'created_by', '/', 1)) FROM eventlog.events f
                    WHERE f.stream_type = 'token_revocation' AND f.stream_id = p.stream_id AND f.stream_version = 1)
               ELSE
                   (SELECT coalesce(f.data->>'tenant', t.legacy_tenant) FROM eventlog.events f, eventlog.tenancy t
                    WHERE f.stream_type = 'space' AND f.stream_id = p.expected_space AND f.stream_version = 1)
               END AS expected_tenant
        FROM (
            SELECT s.*,
                   CASE s.stream_type
                       WHEN 'space' THEN s.stream_id
                       WHEN 'work_session' THEN eventlog.parent_of('work_session', s.stream_id, 'space_id')
                       ELSE eventlog.parent_of('work_session', s.expected_session, 'space_id')
                   END AS expected_space
            FROM (
                SELECT e.position, e.stream_type, e.stream_id, e.work_session_id, e.space_id, e.tenant,
                       CASE e.stream_type
                           WHEN 'work_session' THEN e.stream_id
                           WHEN 'work_session_lock' THEN e.stream_id
                           WHEN 'marker' THEN eventlog.parent_of('marker', e.stream_id, 'work_session_id')
                           WHEN 'marker_details' THEN eventlog.parent_of('marker', e.stream_id, 'work_session_id')
                       END AS expected_session
                FROM eventlog.events e
            ) AS s
        ) AS p
    ) AS r
    WHERE r.work_session_id IS DISTINCT FROM r.expected_session OR r.space_id IS DISTINCT FROM r.expected_space
       OR r.tenant IS DISTINCT FROM r.expected_tenant
    ORDER BY r.position
$$;
