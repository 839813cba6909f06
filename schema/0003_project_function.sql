-- Folds one event into the current-state tables. Every event's data is the entity's
-- whole state (or the id of a deleted one), so folding is an upsert or a delete, and
-- replaying the log in order rebuilds the tables exactly.
CREATE FUNCTION eventlog.project(e eventlog.events) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    CASE e.type
    WHEN 'space.created', 'space.updated' THEN
        INSERT INTO spaces SELECT * FROM jsonb_populate_record(NULL::spaces, e.data)
        ON CONFLICT (id) DO UPDATE SET
            key = EXCLUDED.key, name = EXCLUDED.name, description = EXCLUDED.description,
            model_glb_url = EXCLUDED.model_glb_url, model_usdc_url = EXCLUDED.model_usdc_url,
            preview_url = EXCLUDED.preview_url, scan_url = EXCLUDED.scan_url,
            ml_model_url = EXCLUDED.ml_model_url, meta = EXCLUDED.meta, active = EXCLUDED.active,
            version = EXCLUDED.version, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    WHEN 'space.deleted' THEN
        DELETE FROM spaces WHERE id = e.stream_id;
    WHEN 'work_session.created', 'work_session.updated' THEN
        INSERT INTO work_sessions SELECT * FROM jsonb_populate_record(NULL::work_sessions, e.data)
        ON CONFLICT (id) DO UPDATE SET
            space_id = EXCLUDED.space_id, session_type = EXCLUDED.session_type, status = EXCLUDED.status,
            started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at,
            version = EXCLUDED.version, meta = EXCLUDED.meta,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    WHEN 'work_session.deleted' THEN
        DELETE FROM work_sessions WHERE id = e.stream_id;
    WHEN 'marker.created', 'marker.updated' THEN
        INSERT INTO markers SELECT * FROM jsonb_populate_record(NULL::markers, e.data)
        ON CONFLICT (id) DO UPDATE SET
            work_session_id = EXCLUDED.work_session_id, label = EXCLUDED.label,
            p1 = EXCLUDED.p1, p2 = EXCLUDED.p2, p3 = EXCLUDED.p3, p4 = EXCLUDED.p4,
            color = EXCLUDED.color, version = EXCLUDED.version, meta = EXCLUDED.meta,
            custom_props = EXCLUDED.custom_props, calibrated_data = EXCLUDED.calibrated_data,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    WHEN 'marker.deleted' THEN
        DELETE FROM markers WHERE id = e.stream_id;
    WHEN 'marker_details.calculated', 'marker_details.updated' THEN
        INSERT INTO marker_details
        SELECT * FROM jsonb_populate_record(NULL::marker_details, e.data || jsonb_build_object('version', e.stream_version))
        ON CONFLICT (marker_id) DO UPDATE SET
            center_location_long = EXCLUDED.center_location_long,
            center_location_cross = EXCLUDED.center_location_cross,
            left_distance = EXCLUDED.left_distance, right_distance = EXCLUDED.right_distance,
            far_distance = EXCLUDED.far_distance, near_distance = EXCLUDED.near_distance,
            long_size = EXCLUDED.long_size, cross_size = EXCLUDED.cross_size,
            custom_props = EXCLUDED.custom_props, version = EXCLUDED.version,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    WHEN 'marker_details.deleted' THEN
        DELETE FROM marker_details WHERE marker_id = e.stream_id;
    ELSE
        -- Events that change no current-state table (audit-only types) fold to nothing.
        NULL;
    END CASE;
END;
$$;
