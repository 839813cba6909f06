-- Appends a batch of events in the caller's transaction, checking each stream's
-- expected version, and folds the batch into the projections (read-your-writes).
--
-- batch: {"locks": [{"stream": "marker:<id>", "exclusive": true}, ...],
--         "require": [{"stream_type": "work_session", "stream_id": "<id>"}, ...],
--         "expect_children": [{"kind": "markers_of_session", "parent_id": "<id>", "ids": [...]}, ...],
--         "lock_check": {"work_session_id": "<id>", "token_sha256": "<hex>" | null},  (optional)
--         "events": [{"event_id", "stream_type", "stream_id",
--                     "expected_version": null | 0 | n, "type", "data", "metadata"}, ...]}
-- expected_version null appends at any version, 0 requires a new stream.
--
-- Stream locks are taken first, in sorted order (no deadlocks), before the first
-- write, so the transaction id Postgres assigns at that write orders every
-- transaction that touches a stream the same way its versions are ordered.
CREATE FUNCTION eventlog.append(batch jsonb)
RETURNS TABLE (event_position bigint, event_version bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    lock_item record;
    required record;
    expectation record;
    mismatch jsonb;
    held record;
    next_versions bigint[];
    last_type text;
    actual_ids uuid[];
    positions bigint[];
    versions bigint[];
BEGIN
    FOR lock_item IN
        SELECT l->>'stream' AS stream, bool_or((l->>'exclusive')::boolean) AS exclusive
        FROM jsonb_array_elements(coalesce(batch->'locks', '[]'::jsonb)) AS l
        GROUP BY l->>'stream'
        ORDER BY l->>'stream'
    LOOP
        IF lock_item.exclusive THEN
            PERFORM pg_advisory_xact_lock(hashtextextended(lock_item.stream, 0));
        ELSE
            PERFORM pg_advisory_xact_lock_shared(hashtextextended(lock_item.stream, 0));
        END IF;
    END LOOP;

    FOR required IN
        SELECT r->>'stream_type' AS stream_type, (r->>'stream_id')::uuid AS stream_id
        FROM jsonb_array_elements(coalesce(batch->'require', '[]'::jsonb)) AS r
    LOOP
        SELECT e.type INTO last_type FROM eventlog.events e
        WHERE e.stream_type = required.stream_type AND e.stream_id = required.stream_id
        ORDER BY e.stream_version DESC LIMIT 1;
        IF last_type IS NULL OR last_type LIKE '%.deleted' THEN
            RAISE EXCEPTION '% % does not exist', required.stream_type, required.stream_id
                USING ERRCODE = 'RB404',
                      DETAIL = json_build_object('stream_type', required.stream_type,
                                                 'stream_id', required.stream_id)::text;
        END IF;
    END LOOP;

    -- The children the caller saw must still be all there are, now that the locks
    -- keep new ones out; otherwise a cascade would leave orphans behind.
    FOR expectation IN
        SELECT c->>'kind' AS kind, (c->>'parent_id')::uuid AS parent_id,
               ARRAY(SELECT x::uuid FROM jsonb_array_elements_text(c->'ids') AS x ORDER BY 1) AS ids
        FROM jsonb_array_elements(coalesce(batch->'expect_children', '[]'::jsonb)) AS c
    LOOP
        actual_ids := CASE expectation.kind
            WHEN 'sessions_of_space' THEN
                ARRAY(SELECT w.id FROM work_sessions w WHERE w.space_id = expectation.parent_id ORDER BY 1)
            WHEN 'markers_of_session' THEN
                ARRAY(SELECT m.id FROM markers m WHERE m.work_session_id = expectation.parent_id ORDER BY 1)
            WHEN 'details_of_session' THEN
                ARRAY(SELECT d.marker_id FROM marker_details d JOIN markers m ON m.id = d.marker_id
                      WHERE m.work_session_id = expectation.parent_id ORDER BY 1)
            WHEN 'details_of_marker' THEN
                ARRAY(SELECT d.marker_id FROM marker_details d WHERE d.marker_id = expectation.parent_id)
        END;
        IF actual_ids IS NULL THEN
            RAISE EXCEPTION 'unknown child kind %', expectation.kind USING ERRCODE = '22023';
        END IF;
        IF actual_ids <> expectation.ids THEN
            RAISE EXCEPTION '% of % changed: % expected, % found', expectation.kind, expectation.parent_id,
                cardinality(expectation.ids), cardinality(actual_ids)
                USING ERRCODE = 'RB409',
                      DETAIL = json_build_object('stream_type', expectation.kind, 'stream_id', expectation.parent_id)::text;
        END IF;
    END LOOP;

    -- An enforced lock admits only writes that carry its holder's token; the table
    -- holds the newest acquisition, so a holder whose lock was taken over (a higher
    -- fencing token) is refused too.
    IF batch ? 'lock_check' THEN
        SELECT * INTO held FROM session_locks l
        WHERE l.work_session_id = (batch->'lock_check'->>'work_session_id')::uuid
          AND l.enforce AND l.expires_at > clock_timestamp();
        IF FOUND AND held.token_sha256 IS DISTINCT FROM batch->'lock_check'->>'token_sha256' THEN
            RAISE EXCEPTION 'work session % is locked by % until %', held.work_session_id, held.holder, held.expires_at
                USING ERRCODE = 'RB423',
                      DETAIL = json_build_object('holder', held.holder, 'fencing_token', held.fencing_token,
                          'expires_at', to_char(held.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text;
        END IF;
    END IF;

    -- Versions, set-based: a new stream (expected 0) starts at 1 and the unique
    -- (stream, version) key refuses a second creator; any other event continues its
    -- stream, and must find it at the expected version when one is given.
    WITH items AS (
        SELECT i.ordinality, i.item, (i.item->>'expected_version')::bigint AS expected,
               row_number() OVER (PARTITION BY i.item->>'stream_type', i.item->>'stream_id' ORDER BY i.ordinality) AS nth
        FROM jsonb_array_elements(batch->'events') WITH ORDINALITY AS i(item, ordinality)
    ),
    versioned AS (
        SELECT items.*,
               CASE WHEN expected = 0 THEN 0
                    ELSE (SELECT coalesce(max(e.stream_version), 0) FROM eventlog.events e
                          WHERE e.stream_type = items.item->>'stream_type'
                            AND e.stream_id = (items.item->>'stream_id')::uuid)
               END + nth - 1 AS current_version
        FROM items
    )
    SELECT array_agg(current_version + 1 ORDER BY ordinality),
           (array_agg(jsonb_build_object('stream_type', item->>'stream_type', 'stream_id', item->>'stream_id',
                                         'current_version', current_version, 'expected_version', expected)
                      ORDER BY ordinality)
                FILTER (WHERE expected IS NOT NULL AND expected <> 0 AND expected <> current_version))[1]
    INTO next_versions, mismatch FROM versioned;
    IF mismatch IS NOT NULL THEN
        RAISE EXCEPTION '%:% is at version %, expected %', mismatch->>'stream_type', mismatch->>'stream_id',
            mismatch->>'current_version', mismatch->>'expected_version'
            USING ERRCODE = 'RB409', DETAIL = mismatch::text;
    END IF;

    WITH inserted AS (
        INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata)
        SELECT (item->>'event_id')::uuid, item->>'stream_type', (item->>'stream_id')::uuid,
               next_versions[ordinality], item->>'type', item->'data', item->'metadata'
        FROM jsonb_array_elements(batch->'events') WITH ORDINALITY AS i(item, ordinality)
        ORDER BY ordinality
        RETURNING position, stream_version
    )
    SELECT array_agg(inserted.position ORDER BY inserted.position),
           array_agg(inserted.stream_version ORDER BY inserted.position)
    INTO positions, versions FROM inserted;

    PERFORM eventlog.project(positions[1], positions[cardinality(positions)], pg_current_xact_id());

    RETURN QUERY SELECT * FROM unnest(positions, versions);
END;
$$;
