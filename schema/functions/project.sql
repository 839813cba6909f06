-- Folds events into the current-state tables. Every event's data is the entity's
-- whole state (or the id of a deleted one), so only the last event of each stream in
-- a range matters: deletions first, then one upsert per table, in position order.
-- Ranges must be folded in log order.
--
-- Callers: eventlog.append (the events its own transaction just wrote, selected by
-- transaction id so that concurrent appends with interleaved positions are left
-- alone) and rebuild/verify (the whole log, in chunks of positions). Tables are
-- unqualified on purpose: verify folds into temporary tables of the same names.
CREATE OR REPLACE FUNCTION eventlog.project(first_position bigint, last_position bigint, only_transaction xid8 DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
-- Custom plans would re-plan every statement on every call (its parameters change
-- each time): generic plans keep an append at a fraction of a millisecond.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    kinds text[];
    deleted_kinds text[];
    folded bigint;
BEGIN
    SELECT array_agg(DISTINCT e.stream_type), array_agg(DISTINCT e.stream_type) FILTER (WHERE e.type LIKE '%.deleted'),
           count(*)
    INTO kinds, deleted_kinds, folded
    FROM eventlog.events e
    WHERE e.position BETWEEN first_position AND last_position
      AND (only_transaction IS NULL OR e.transaction_id = only_transaction);
    IF folded = 0 THEN
        RETURN 0;
    END IF;

    -- Each statement below costs its executor's start-up even when it has nothing to do
    -- (a marker create runs a dozen statements in all): a kind with no deletion in the
    -- range skips its DELETE, and only spaces, whose key is checked at commit, defer.
    IF 'space' = ANY(kinds) THEN
        -- Final states of several spaces can pass a key between them within one range
        -- (a rename, then a new space with the old key): check keys at commit.
        SET CONSTRAINTS ALL DEFERRED;
    END IF;

    IF 'space' = ANY(deleted_kinds) THEN
        DELETE FROM spaces WHERE id IN (
            SELECT stream_id FROM eventlog.last_events(first_position, last_position, only_transaction, 'space')
            WHERE type = 'space.deleted');
    END IF;
    IF 'space' = ANY(kinds) THEN
        -- A space's tenant is named by its events; those from before tenancy existed
        -- belong to the tenant the migration named (eventlog.tenancy). It never changes.
        INSERT INTO space_tenants (space_id, tenant)
        SELECT e.stream_id, coalesce(e.data->>'tenant', t.legacy_tenant)
        FROM eventlog.events e, eventlog.tenancy t
        WHERE e.position BETWEEN first_position AND last_position
          AND (only_transaction IS NULL OR e.transaction_id = only_transaction)
          AND e.type = 'space.created'
        ON CONFLICT (space_id) DO NOTHING;
        INSERT INTO spaces
        SELECT r.* FROM eventlog.last_events(first_position, last_position, only_transaction, 'space') e,
             eventlog.tenancy t,
             jsonb_populate_record(NULL::spaces, e.data || jsonb_build_object('tenant', coalesce(e.data->>'tenant', t.legacy_tenant))) r
        WHERE e.type IN ('space.created', 'space.updated')
        ORDER BY e.position
        ON CONFLICT (id) DO UPDATE SET
            key = EXCLUDED.key, name = EXCLUDED.name, description = EXCLUDED.description,
            model_glb_url = EXCLUDED.model_glb_url, model_usdc_url = EXCLUDED.model_usdc_url,
            preview_url = EXCLUDED.preview_url, scan_url = EXCLUDED.scan_url,
            ml_model_url = EXCLUDED.ml_model_url, meta = EXCLUDED.meta, active = EXCLUDED.active,
            version = EXCLUDED.version, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    END IF;

    IF 'work_session' = ANY(deleted_kinds) THEN
        DELETE FROM work_sessions WHERE id IN (
            SELECT stream_id FROM eventlog.last_events(first_position, last_position, only_transaction, 'work_session')
            WHERE type = 'work_session.deleted');
    END IF;
    IF 'work_session' = ANY(kinds) THEN
        INSERT INTO work_sessions
        SELECT r.* FROM eventlog.last_events(first_position, last_position, only_transaction, 'work_session') e,
             jsonb_populate_record(NULL::work_sessions, e.data) r
        WHERE e.type IN ('work_session.created', 'work_session.updated')
        ORDER BY e.position
        ON CONFLICT (id) DO UPDATE SET
            space_id = EXCLUDED.space_id, session_type = EXCLUDED.session_type, status = EXCLUDED.status,
            started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at,
            version = EXCLUDED.version, meta = EXCLUDED.meta,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at;
    END IF;

    IF 'marker' = ANY(deleted_kinds) THEN
        DELETE FROM markers WHERE id IN (
            SELECT stream_id FROM eventlog.last_events(first_position, last_position, only_transaction, 'marker')
            WHERE type = 'marker.deleted');
    END IF;
    IF 'marker' = ANY(kinds) THEN
        -- A marker row also names its space (the event's route), for queries by place;
        -- `center` is generated from the points.
        INSERT INTO markers (id, work_session_id, label, p1, p2, p3, p4, color, version, meta, custom_props,
                             calibrated_data, created_at, updated_at, space_id)
        SELECT r.id, r.work_session_id, r.label, r.p1, r.p2, r.p3, r.p4, r.color, r.version, r.meta, r.custom_props,
               r.calibrated_data, r.created_at, r.updated_at, e.space_id
        FROM eventlog.last_events(first_position, last_position, only_transaction, 'marker') e,
             jsonb_populate_record(NULL::markers, e.data) r
        WHERE e.type IN ('marker.created', 'marker.updated')
        ORDER BY e.position
        ON CONFLICT (id) DO UPDATE SET
            work_session_id = EXCLUDED.work_session_id, label = EXCLUDED.label,
            p1 = EXCLUDED.p1, p2 = EXCLUDED.p2, p3 = EXCLUDED.p3, p4 = EXCLUDED.p4,
            color = EXCLUDED.color, version = EXCLUDED.version, meta = EXCLUDED.meta,
            custom_props = EXCLUDED.custom_props, calibrated_data = EXCLUDED.calibrated_data,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, space_id = EXCLUDED.space_id;
    END IF;

    IF 'marker_details' = ANY(deleted_kinds) THEN
        DELETE FROM marker_details WHERE marker_id IN (
            SELECT stream_id FROM eventlog.last_events(first_position, last_position, only_transaction, 'marker_details')
            WHERE type = 'marker_details.deleted');
    END IF;
    IF 'marker_details' = ANY(kinds) THEN
        -- The details row keeps its stream's version as a concurrency token.
        INSERT INTO marker_details
        SELECT r.* FROM eventlog.last_events(first_position, last_position, only_transaction, 'marker_details') e,
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
    END IF;

    IF 'work_session_lock' = ANY(kinds) THEN
        PERFORM eventlog.project_locks(first_position, last_position, only_transaction);
    END IF;

    -- Events of types no table knows fold to nothing.
    RETURN folded;
END;
$$;
