-- requires: project_locks
-- Folds the whole log into empty current-state tables (rebuild, verify): set-based,
-- one pass over the log for every table at once. Returns how many events were folded.
--
-- Every event's data is its entity's whole state, so a table's rows are the last event
-- of each of its streams, unless that event is a deletion: the same rows
-- eventlog.project leaves behind when it folds the log range by range, without the
-- deletes and upserts of each range (a rebuild that way ran at a third of the speed
-- Postgres reads the log; docs/benchmarks.md). Every type these streams hold is a
-- created, updated or deleted one (EventType.all). The tables must be empty: a row
-- already there fails the insert on its key rather than being silently overwritten.
-- Tables are unqualified, as in eventlog.project: verify folds into temporary tables.
CREATE OR REPLACE FUNCTION eventlog.project_all()
RETURNS bigint
LANGUAGE plpgsql
-- Estimating a kind with few streams at one event, the planner scanned the whole list
-- of last positions once for each of them (a third of a second for ten sessions); a
-- hash or merge join reads it once. (A key on the list made it slower: the list is a
-- temporary table, read through the session's small local buffers.)
SET enable_nestloop = off
AS $$
DECLARE
    folded bigint;
    deferred text[];
    index record;
    definition text;
BEGIN
    -- Secondary indexes are built once at the end, from the full tables (kept row by
    -- row, the GiST index by place took most of the markers' insert). Indexes that
    -- back a constraint (the keys) stay, so a duplicate still fails.
    deferred := '{}';
    FOR index IN
        SELECT i.indexrelid::regclass AS name, pg_get_indexdef(i.indexrelid) AS definition
        FROM pg_index i
        WHERE i.indrelid IN (to_regclass('spaces'), to_regclass('work_sessions'), to_regclass('markers'),
                             to_regclass('marker_details'), to_regclass('session_locks'), to_regclass('space_tenants'))
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    LOOP
        deferred := deferred || index.definition;
        EXECUTE format('DROP INDEX %s', index.name);
    END LOOP;

    -- The newest position of every stream, narrow (no data), read once for all tables.
    CREATE TEMPORARY TABLE project_all_last ON COMMIT DROP AS
        SELECT e.stream_type, max(e.position) AS position, count(*) AS events
        FROM eventlog.events e
        GROUP BY e.stream_type, e.stream_id;
    ANALYZE project_all_last;
    SELECT coalesce(sum(l.events), 0) INTO folded FROM project_all_last l;

    -- Each `OFFSET 0` keeps the join below the record's parsing: without it the planner
    -- parsed the data of every event of the kind, not only of the last ones.
    -- Events from before tenancy existed name no tenant: theirs is eventlog.tenancy's.
    INSERT INTO spaces
    SELECT r.* FROM (
        SELECT e.data FROM project_all_last l JOIN eventlog.events e ON e.position = l.position
        WHERE l.stream_type = 'space' AND e.type IN ('space.created', 'space.updated') OFFSET 0
    ) e, eventlog.tenancy t, jsonb_populate_record(NULL::spaces, e.data || jsonb_build_object('tenant', coalesce(e.data->>'tenant', t.legacy_tenant))) r;

    -- Every space ever created, deleted ones included, with its tenant.
    INSERT INTO space_tenants (space_id, tenant)
    SELECT e.stream_id, coalesce(e.data->>'tenant', t.legacy_tenant)
    FROM eventlog.events e, eventlog.tenancy t
    WHERE e.stream_type = 'space' AND e.type = 'space.created';

    INSERT INTO work_sessions
    SELECT r.* FROM (
        SELECT e.data FROM project_all_last l JOIN eventlog.events e ON e.position = l.position
        WHERE l.stream_type = 'work_session' AND e.type IN ('work_session.created', 'work_session.updated') OFFSET 0
    ) e, jsonb_populate_record(NULL::work_sessions, e.data) r;

    INSERT INTO markers (id, work_session_id, label, p1, p2, p3, p4, color, version, meta, custom_props,
                         calibrated_data, created_at, updated_at, space_id)
    SELECT r.id, r.work_session_id, r.label, r.p1, r.p2, r.p3, r.p4, r.color, r.version, r.meta, r.custom_props,
           r.calibrated_data, r.created_at, r.updated_at, e.space_id
    FROM (
        SELECT e.data, e.space_id FROM project_all_last l JOIN eventlog.events e ON e.position = l.position
        WHERE l.stream_type = 'marker' AND e.type IN ('marker.created', 'marker.updated') OFFSET 0
    ) e, jsonb_populate_record(NULL::markers, e.data) r;

    -- The details row keeps its stream's version as a concurrency token (set from the
    -- column, not merged into the data: a new jsonb a row cost more than the insert).
    INSERT INTO marker_details (marker_id, center_location_long, center_location_cross, left_distance,
                                right_distance, far_distance, near_distance, long_size, cross_size, custom_props,
                                created_at, updated_at, version)
    SELECT r.marker_id, r.center_location_long, r.center_location_cross, r.left_distance, r.right_distance,
           r.far_distance, r.near_distance, r.long_size, r.cross_size, r.custom_props, r.created_at, r.updated_at,
           e.stream_version
    FROM (
        SELECT e.data, e.stream_version FROM project_all_last l JOIN eventlog.events e ON e.position = l.position
        WHERE l.stream_type = 'marker_details' AND e.type IN ('marker_details.calculated', 'marker_details.updated')
        OFFSET 0
    ) e, jsonb_populate_record(NULL::marker_details, e.data) r;

    -- A lock's state depends on each of its events in turn (an extension needs its
    -- acquisition): folded one by one; they are few.
    IF EXISTS (SELECT 1 FROM project_all_last l WHERE l.stream_type = 'work_session_lock') THEN
        PERFORM eventlog.project_locks(1, (SELECT max(l.position) FROM project_all_last l), NULL);
    END IF;

    DROP TABLE project_all_last;
    FOREACH definition IN ARRAY deferred LOOP
        EXECUTE definition;
    END LOOP;
    RETURN folded;
END;
$$;
