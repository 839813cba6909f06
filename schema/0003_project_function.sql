-- Folds a set of events into the current-state tables. Every event's data is the
-- entity's whole state (or the id of a deleted one), so only the last event of each
-- stream in the set matters: deletions first, then one upsert per table. Sets must be
-- folded in log order; within a set the order only decides which event is last.
-- Callers: eventlog.append (the events of one batch) and rebuild/verify (the log in
-- chunks of positions). Tables are unqualified on purpose: verify folds into
-- temporary tables of the same names.
CREATE FUNCTION eventlog.project(events eventlog.events[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    last eventlog.events[] := ARRAY(
        SELECT DISTINCT ON (e.stream_type, e.stream_id) e
        FROM unnest(events) AS e
        ORDER BY e.stream_type, e.stream_id, e.position DESC);
BEGIN
    -- Final states of several spaces can pass a key between them within one set
    -- (a rename, then a new space with the old key): check keys at commit.
    SET CONSTRAINTS ALL DEFERRED;

    DELETE FROM spaces WHERE id IN (SELECT stream_id FROM unnest(last) WHERE type = 'space.deleted');
    DELETE FROM work_sessions WHERE id IN (SELECT stream_id FROM unnest(last) WHERE type = 'work_session.deleted');
    DELETE FROM markers WHERE id IN (SELECT stream_id FROM unnest(last) WHERE type = 'marker.deleted');
    DELETE FROM marker_details WHERE marker_id IN (SELECT stream_id FROM unnest(last) WHERE type = 'marker_details.deleted');

    INSERT INTO spaces
    SELECT r.* FROM unnest(last) e, jsonb_populate_record(NULL::spaces, e.data) r
    WHERE e.type IN ('space.created', 'space.updated')
    ORDER BY e.position
    ON CONFLICT (id) DO UPDATE SET
        key = EXCLUDED.key, name = EXCLUDED.name, description = EXCLUDED.description,
        model_glb_url = EXCLUDED.model_glb_url, model_usdc_url = EXCLUDED.model_usdc_url,
        preview_url = EXCLUDED.preview_url, scan_url = EXCLUDED.scan_url,
        ml_model_url = EXCLUDED.ml_model_url, meta = EXCLUDED.meta, active = EXCLUDED.active,
        version = EXCLUDED.version, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;

    INSERT INTO work_sessions
    SELECT r.* FROM unnest(last) e, jsonb_populate_record(NULL::work_sessions, e.data) r
    WHERE e.type IN ('work_session.created', 'work_session.updated')
    ORDER BY e.position
    ON CONFLICT (id) DO UPDATE SET
        space_id = EXCLUDED.space_id, session_type = EXCLUDED.session_type, status = EXCLUDED.status,
        started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at,
        version = EXCLUDED.version, meta = EXCLUDED.meta,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;

    INSERT INTO markers
    SELECT r.* FROM unnest(last) e, jsonb_populate_record(NULL::markers, e.data) r
    WHERE e.type IN ('marker.created', 'marker.updated')
    ORDER BY e.position
    ON CONFLICT (id) DO UPDATE SET
        work_session_id = EXCLUDED.work_session_id, label = EXCLUDED.label,
        p1 = EXCLUDED.p1, p2 = EXCLUDED.p2, p3 = EXCLUDED.p3, p4 = EXCLUDED.p4,
        color = EXCLUDED.color, version = EXCLUDED.version, meta = EXCLUDED.meta,
        custom_props = EXCLUDED.custom_props, calibrated_data = EXCLUDED.calibrated_data,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;

    -- The details row keeps its stream's version as a concurrency token.
    INSERT INTO marker_details
    SELECT r.* FROM unnest(last) e,
         jsonb_populate_record(NULL::marker_details, e.data || jsonb_build_object('version', e.stream_version)) r
    WHERE e.type IN ('marker_details.calculated', 'marker_details.updated')
    ORDER BY e.position
    ON CONFLICT (marker_id) DO UPDATE SET
        center_location_long = EXCLUDED.center_location_long,
        center_location_cross = EXCLUDED.center_location_cross,
        left_distance = EXCLUDED.left_distance, right_distance = EXCLUDED.right_distance,
        far_distance = EXCLUDED.far_distance, near_distance = EXCLUDED.near_distance,
        long_size = EXCLUDED.long_size, cross_size = EXCLUDED.cross_size,
        custom_props = EXCLUDED.custom_props, version = EXCLUDED.version,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;

    -- Events of types no table knows (audit-only types) fold to nothing.
    RETURN cardinality(events);
END;
$$;
