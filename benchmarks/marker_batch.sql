-- The batch the API sends for POST /markers (marker.created + marker_details.calculated,
-- with the same locks, parent check and data shape), built in SQL so that pgbench can
-- run eventlog.append with exactly the statement the service runs.
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.marker_batch(space uuid, session uuid) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    marker uuid := gen_random_uuid();
    created_event uuid := gen_random_uuid();
    now_text text := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    metadata jsonb := jsonb_build_object('actor', 'bench', 'request_id', gen_random_uuid()::text,
        'correlation_id', gen_random_uuid()::text, 'causation_id', NULL, 'client_address', '127.0.0.1',
        'user_agent', 'pgbench');
BEGIN
    RETURN jsonb_build_object(
        'locks', jsonb_build_array(
            jsonb_build_object('stream', 'space:' || space, 'exclusive', false),
            jsonb_build_object('stream', 'work_session:' || session, 'exclusive', false)),
        'require', jsonb_build_array(jsonb_build_object('stream_type', 'work_session', 'stream_id', session)),
        'expect_children', '[]'::jsonb,
        'events', jsonb_build_array(
            jsonb_build_object('event_id', created_event, 'stream_type', 'marker', 'stream_id', marker,
                'expected_version', 0, 'type', 'marker.created', 'metadata', metadata,
                'data', jsonb_build_object('id', marker, 'work_session_id', session, 'label', 'bench',
                    'p1', '[0,0,1]'::jsonb, 'p2', '[2,0,1]'::jsonb, 'p3', '[2,0,4]'::jsonb, 'p4', '[0,0,4]'::jsonb,
                    'color', '#FF8800', 'version', 1, 'meta', '{}'::jsonb, 'custom_props', '{}'::jsonb,
                    'calibrated_data', NULL, 'created_at', now_text, 'updated_at', now_text)),
            jsonb_build_object('event_id', gen_random_uuid(), 'stream_type', 'marker_details', 'stream_id', marker,
                'expected_version', 0, 'type', 'marker_details.calculated',
                'metadata', metadata || jsonb_build_object('causation_id', created_event),
                'data', jsonb_build_object('marker_id', marker, 'center_location_long', 2.5,
                    'center_location_cross', 1, 'left_distance', 0, 'right_distance', 2, 'far_distance', 4,
                    'near_distance', 1, 'long_size', 3, 'cross_size', 2, 'custom_props', '{}'::jsonb,
                    'created_at', now_text, 'updated_at', now_text))));
END;
$$;
