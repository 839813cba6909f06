-- For `roboscope verify`: events whose stored routes (work_session_id, space_id and
-- tenant, set by eventlog.append) differ from what their streams say now. Worked out
-- independently of the append, from each stream type's row of eventlog.stream_routes:
-- the work session named by the stream's first event (or the stream itself), that
-- session's space, and the tenant named by the space's first event (for a type with its
-- own tenant, a token revocation: the tenant its first event names, else the tenant of
-- the operator who made it).
CREATE OR REPLACE FUNCTION eventlog.misrouted_events()
RETURNS TABLE ("position" bigint, stored jsonb, expected jsonb)
LANGUAGE sql STABLE AS $$
    SELECT r.position,
           jsonb_build_object('work_session_id', r.work_session_id, 'space_id', r.space_id, 'tenant', r.tenant),
           jsonb_build_object('work_session_id', r.expected_session, 'space_id', r.expected_space,
                              'tenant', r.expected_tenant)
    FROM (
        SELECT p.*,
               CASE WHEN p.own_tenant THEN
                   (SELECT coalesce(f.data->>'tenant', split_part(f.data->>'created_by', '/', 1)) FROM eventlog.events f
                    WHERE f.stream_type = p.stream_type AND f.stream_id = p.stream_id AND f.stream_version = 1)
               ELSE
                   (SELECT coalesce(f.data->>'tenant', t.legacy_tenant) FROM eventlog.events f, eventlog.tenancy t
                    WHERE f.stream_type = 'space' AND f.stream_id = p.expected_space AND f.stream_version = 1)
               END AS expected_tenant
        FROM (
            SELECT s.*,
                   CASE WHEN s.is_space THEN s.stream_id
                        ELSE eventlog.parent_of('work_session', s.expected_session, 'space_id')
                   END AS expected_space
            FROM (
                SELECT e.position, e.stream_type, e.stream_id, e.work_session_id, e.space_id, e.tenant,
                       coalesce(k.is_space, false) AS is_space, coalesce(k.own_tenant, false) AS own_tenant,
                       CASE WHEN k.is_session THEN e.stream_id
                            WHEN k.session_named_by IS NOT NULL THEN
                                eventlog.parent_of(k.session_named_by, e.stream_id, k.session_field)
                       END AS expected_session
                FROM eventlog.events e LEFT JOIN eventlog.stream_routes k ON k.stream_type = e.stream_type
            ) AS s
        ) AS p
    ) AS r
    WHERE r.work_session_id IS DISTINCT FROM r.expected_session OR r.space_id IS DISTINCT FROM r.expected_space
       OR r.tenant IS DISTINCT FROM r.expected_tenant
    ORDER BY r.position
$$;
