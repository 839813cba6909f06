-- Appends a batch of events in the caller's transaction, checking each stream's
-- expected version, numbers them on their topics, and folds the batch into the
-- projections (read-your-writes).
--
-- batch: {"locks": [{"stream": "marker:<id>", "exclusive": true}, ...],
--         "require": [{"stream_type": "work_session", "stream_id": "<id>"}, ...],
--         "expect_children": [{"kind": "markers_of_session", "parent_id": "<id>", "ids": [...]}, ...],
--         "lock_check": {"work_session_id": "<id>", "token_sha256": "<hex>" | null},  (optional)
--         "idempotency": {"actor", "key", "fingerprint", "status", "body"},  (optional; without
--                        status and body the caller stores the answer in the same transaction)
--         (lock_check and idempotency may also be arrays of such objects: the requests that
--          EventStore's AppendCombiner commits together, each with its own check and key)
--         "metadata": {...},  (optional: what every event's metadata holds unless it says otherwise)
--         "events": [{"event_id", "stream_type", "stream_id",
--                     "expected_version": null | 0 | n, "type", "data",
--                     "metadata": {...} (optional: the members that differ from the batch's)}, ...]}
-- expected_version null appends at any version, 0 requires a new stream.
--
-- It runs as the role that owns the schema (SECURITY DEFINER): the serving role may read
-- the log and the projections but write neither, so this function is the only way it
-- changes them (schema/grants/service_role.sql). Its search_path is fixed, temporary
-- objects last, so no caller can put a table of its own in front of the real ones.
--
-- Order (docs/ordering.md): every lock is taken before the first write, in one global
-- order (the batch's own locks sorted, then its topics' locks sorted: no deadlocks), so
-- the transaction id Postgres assigns at that write orders the transactions that share
-- a lock the same way their writes are ordered. Each topic the batch writes to is locked
-- exclusively, so its events are numbered 1, 2, 3, ... and their positions grow in
-- commit order.
CREATE OR REPLACE FUNCTION eventlog.append(batch jsonb)
RETURNS TABLE (event_position bigint, event_version bigint, event_tenant text, event_tenant_seq bigint,
               event_hash bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    claims jsonb := CASE jsonb_typeof(batch->'idempotency')
                        WHEN 'object' THEN jsonb_build_array(batch->'idempotency') ELSE batch->'idempotency' END;
    claim jsonb;
    lock_check jsonb;
    lock_item record;
    required record;
    expectation record;
    mismatch jsonb;
    held record;
    route_sessions uuid[];
    route_spaces uuid[];
    route_tenants text[];
    on_space_topic boolean[];
    session_seqs bigint[];
    space_seqs bigint[];
    next_versions bigint[];
    follows_in_batch boolean[];
    last_type text;
    actual_ids uuid[];
    tenant_seqs bigint[];
    positions bigint[];
    versions bigint[];
    tenants text[];
    numbers bigint[];
    digests bytea[];
BEGIN
    -- An idempotency key admits one request at a time, and one change ever. The try
    -- never waits, so it cannot deadlock with the sorted locks below.
    IF claims IS NOT NULL THEN
        FOR claim IN SELECT c FROM jsonb_array_elements(claims) AS c LOOP
            IF NOT pg_try_advisory_xact_lock(hashtextextended('idempotency:' || (claim->>'actor') || ':' || (claim->>'key'), 0)) THEN
                RAISE EXCEPTION 'a request with this idempotency key is still being processed' USING ERRCODE = 'RBIKP';
            END IF;
            IF EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.actor = claim->>'actor' AND k.key = claim->>'key') THEN
                RAISE EXCEPTION 'a request with this idempotency key has been answered' USING ERRCODE = 'RBIKA';
            END IF;
        END LOOP;
    END IF;

    -- Routes, the one place they are decided, by each stream type's row of
    -- eventlog.stream_routes: an event belongs to the work session and the space of its
    -- stream (named by the first event of the stream its row says, or by this batch for
    -- streams it starts), and to its space's tenant. It is on its work session's topic
    -- when it has one, and on its space's topic when its row says so. A stream of a type
    -- with `own_tenant` (a token revocation) belongs to no space and no topic: to the
    -- tenant its first event names, or to the tenant of the operator who made it.
    WITH items AS (
        SELECT i.ordinality AS ord, i.item->>'stream_type' AS stream_type, (i.item->>'stream_id')::uuid AS stream_id,
               i.item->'data' AS data, (i.item->>'expected_version')::bigint = 0 AS starts_stream,
               coalesce(k.is_space, false) AS is_space, coalesce(k.is_session, false) AS is_session,
               k.session_named_by, k.session_field, coalesce(k.on_space_topic, false) AS on_space_topic,
               coalesce(k.own_tenant, false) AS has_own_tenant
        FROM jsonb_array_elements(batch->'events') WITH ORDINALITY AS i(item, ordinality)
        LEFT JOIN eventlog.stream_routes k ON k.stream_type = i.item->>'stream_type'
    ),
    -- Streams this batch starts whose first event names their work session.
    new_children AS (
        SELECT DISTINCT stream_type, stream_id, (data->>session_field)::uuid AS work_session_id
        FROM items WHERE session_named_by = stream_type AND starts_stream
    ),
    new_sessions AS (
        SELECT DISTINCT stream_id, (data->>'space_id')::uuid AS space_id
        FROM items WHERE stream_type = 'work_session' AND starts_stream
    ),
    new_spaces AS (
        SELECT DISTINCT stream_id, coalesce(data->>'tenant', (SELECT legacy_tenant FROM eventlog.tenancy)) AS tenant
        FROM items WHERE is_space AND starts_stream
    ),
    -- The first events are read inline, not through eventlog.parent_of: a SQL function
    -- that reads a table is planned again at each call, an inline subquery once.
    with_session AS (
        SELECT items.ord, items.stream_id, items.is_space, items.on_space_topic,
               CASE
                   WHEN items.is_session THEN items.stream_id
                   WHEN items.session_named_by IS NOT NULL THEN
                       coalesce(n.work_session_id,
                                (SELECT (f.data->>items.session_field)::uuid FROM eventlog.events f
                                 WHERE f.stream_type = items.session_named_by AND f.stream_id = items.stream_id
                                   AND f.stream_version = 1))
               END AS work_session_id,
               CASE WHEN items.has_own_tenant THEN (
                   SELECT coalesce(r.first->>'tenant', split_part(r.first->>'created_by', '/', 1))
                   FROM (SELECT coalesce((SELECT f.data FROM eventlog.events f
                                          WHERE f.stream_type = items.stream_type
                                            AND f.stream_id = items.stream_id AND f.stream_version = 1),
                                         items.data) AS first) AS r)
               END AS own_tenant
        FROM items
        LEFT JOIN new_children n ON n.stream_type = items.session_named_by AND n.stream_id = items.stream_id
    ),
    session_spaces AS (
        SELECT s.work_session_id,
               coalesce(n.space_id, (SELECT (f.data->>'space_id')::uuid FROM eventlog.events f
                                     WHERE f.stream_type = 'work_session' AND f.stream_id = s.work_session_id
                                       AND f.stream_version = 1)) AS space_id
        FROM (SELECT DISTINCT work_session_id FROM with_session WHERE work_session_id IS NOT NULL) AS s
        LEFT JOIN new_sessions n ON n.stream_id = s.work_session_id
    ),
    routed AS (
        SELECT w.ord, w.on_space_topic, w.work_session_id, w.own_tenant,
               CASE WHEN w.is_space THEN w.stream_id ELSE ss.space_id END AS space_id
        FROM with_session w LEFT JOIN session_spaces ss ON ss.work_session_id = w.work_session_id
    )
    SELECT array_agg(r.work_session_id ORDER BY r.ord),
           array_agg(r.space_id ORDER BY r.ord),
           array_agg(r.on_space_topic ORDER BY r.ord),
           array_agg(coalesce(ns.tenant, st.tenant, r.own_tenant) ORDER BY r.ord)
    INTO route_sessions, route_spaces, on_space_topic, route_tenants
    FROM routed r
    LEFT JOIN new_spaces ns ON ns.stream_id = r.space_id
    LEFT JOIN space_tenants st ON st.space_id = r.space_id;

    -- The batch's own locks first, sorted; its topics' locks last (below), also sorted:
    -- one global order, so no two appends can deadlock, and the topics stay locked only
    -- from just before the first write to the commit.
    FOR lock_item IN
        SELECT b->>'stream' AS stream, bool_or((b->>'exclusive')::boolean) AS exclusive
        FROM jsonb_array_elements(coalesce(batch->'locks', '[]'::jsonb)) AS b
        GROUP BY b->>'stream'
        ORDER BY b->>'stream'
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
    -- Most batches expect none: the test is an expression, the loop's query a statement.
    IF jsonb_array_length(coalesce(batch->'expect_children', '[]'::jsonb)) > 0 THEN
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
    END IF;

    -- An enforced lock admits only writes that carry its holder's token; the table
    -- holds the newest acquisition, so a holder whose lock was taken over (a higher
    -- fencing token) is refused too.
    IF batch ? 'lock_check' THEN
        FOR lock_check IN
            SELECT c FROM jsonb_array_elements(CASE jsonb_typeof(batch->'lock_check')
                WHEN 'object' THEN jsonb_build_array(batch->'lock_check') ELSE batch->'lock_check' END) AS c
        LOOP
            SELECT * INTO held FROM session_locks l
            WHERE l.work_session_id = (lock_check->>'work_session_id')::uuid
              AND l.enforce AND l.expires_at > clock_timestamp();
            IF FOUND AND held.token_sha256 IS DISTINCT FROM lock_check->>'token_sha256' THEN
                RAISE EXCEPTION 'work session % is locked by % until %', held.work_session_id, held.holder, held.expires_at
                    USING ERRCODE = 'RB423',
                          DETAIL = json_build_object('holder', held.holder, 'fencing_token', held.fencing_token,
                              'expires_at', to_char(held.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text;
            END IF;
        END LOOP;
    END IF;

    -- Versions, set-based: a new stream (expected 0) starts at 1 and the unique
    -- (stream, version) key refuses a second creator (a second creator in the same
    -- batch is refused here); any other event continues its stream, and must find it at
    -- the expected version when one is given.
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
    SELECT array_agg(current_version + 1 ORDER BY ordinality), array_agg(nth > 1 ORDER BY ordinality),
           (array_agg(jsonb_build_object('stream_type', item->>'stream_type', 'stream_id', item->>'stream_id',
                                         'current_version', current_version, 'expected_version', expected)
                      ORDER BY ordinality)
                FILTER (WHERE (expected IS NOT NULL AND expected <> 0 AND expected <> current_version)
                               OR (expected = 0 AND nth > 1)))[1]
    INTO next_versions, follows_in_batch, mismatch FROM versioned;
    IF mismatch IS NOT NULL THEN
        RAISE EXCEPTION '%:% is at version %, expected %', mismatch->>'stream_type', mismatch->>'stream_id',
            mismatch->>'current_version', mismatch->>'expected_version'
            USING ERRCODE = 'RB409', DETAIL = mismatch::text;
    END IF;

    FOR lock_item IN
        SELECT DISTINCT t.topic FROM (
            SELECT 'topic:work_session:' || r.session AS topic FROM unnest(route_sessions) AS r(session)
            WHERE r.session IS NOT NULL
            UNION ALL
            SELECT 'topic:space:' || r.space FROM unnest(route_spaces, on_space_topic) AS r(space, listed)
            WHERE r.listed AND r.space IS NOT NULL
        ) AS t
        ORDER BY t.topic
    LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended(lock_item.topic, 0));
    END LOOP;

    -- Topic numbers: each topic continues from its last event. Its exclusive lock keeps
    -- every other writer out, and every earlier event of it is committed and visible to
    -- this statement. Each head is read as DeliveryReader reads a topic's (the id as a
    -- range, ordered by id and position), so that only the topic's index serves it: a
    -- session gone quiet while others wrote is not found by walking the whole log back.
    WITH routed AS (
        SELECT * FROM unnest(route_sessions, route_spaces, on_space_topic) WITH ORDINALITY AS r(session, space, listed, ord)
    ),
    session_heads AS (
        SELECT t.session, coalesce((SELECT e.work_session_seq FROM eventlog.events e
                                    WHERE e.work_session_id >= t.session AND e.work_session_id <= t.session
                                    ORDER BY e.work_session_id DESC, e.position DESC LIMIT 1), 0) AS head
        FROM (SELECT DISTINCT session FROM routed WHERE session IS NOT NULL) AS t
    ),
    space_heads AS (
        SELECT t.space, coalesce((SELECT e.space_seq FROM eventlog.events e
                                  WHERE e.space_id >= t.space AND e.space_id <= t.space AND e.space_seq IS NOT NULL
                                  ORDER BY e.space_id DESC, e.position DESC LIMIT 1), 0) AS head
        FROM (SELECT DISTINCT space FROM routed WHERE listed AND space IS NOT NULL) AS t
    ),
    numbered AS (
        SELECT r.ord,
               CASE WHEN r.session IS NOT NULL
                    THEN sh.head + row_number() OVER (PARTITION BY r.session ORDER BY r.ord) END AS session_seq,
               CASE WHEN r.listed AND r.space IS NOT NULL
                    THEN ph.head + count(*) FILTER (WHERE r.listed) OVER (PARTITION BY r.space ORDER BY r.ord) END AS space_seq
        FROM routed r
        LEFT JOIN session_heads sh ON sh.session = r.session
        LEFT JOIN space_heads ph ON ph.space = r.space
    )
    SELECT array_agg(session_seq ORDER BY ord), array_agg(space_seq ORDER BY ord)
    INTO session_seqs, space_seqs FROM numbered;

    -- Each tenant's log (verifiable history): its events are numbered 1, 2, 3, ... in
    -- the order their appends commit. The tenant's row, updated here and locked to the
    -- commit, is the last lock taken (tenants sorted), so two appends of one tenant
    -- number their events one after the other, and never deadlock.
    WITH routed AS (
        SELECT r.tenant, r.ord FROM unnest(route_tenants) WITH ORDINALITY AS r(tenant, ord)
    ),
    grown AS (
        INSERT INTO eventlog.tenant_logs AS l (tenant, size)
        SELECT routed.tenant, count(*) FROM routed WHERE routed.tenant IS NOT NULL
        GROUP BY routed.tenant ORDER BY routed.tenant
        ON CONFLICT (tenant) DO UPDATE SET size = l.size + excluded.size
        RETURNING l.tenant, l.size
    ),
    numbered AS (
        SELECT r.ord, g.size - count(*) OVER (PARTITION BY r.tenant)
                      + row_number() OVER (PARTITION BY r.tenant ORDER BY r.ord) AS seq
        FROM routed r LEFT JOIN grown g ON g.tenant = r.tenant
    )
    SELECT array_agg(numbered.seq ORDER BY numbered.ord) INTO tenant_seqs FROM numbered;

    -- Each event's hash is computed here, set-based, when its stream's previous event is
    -- already stored (or it starts the stream): the chain trigger then does nothing for
    -- it (its WHEN clause). An event whose previous one is earlier in this batch is left
    -- to the trigger, which sees the rows this INSERT wrote before it. The time is taken
    -- once per event, in the batch's order, for both the column and its hash: OFFSET 0
    -- keeps the subquery from being merged into the INSERT, which would evaluate the
    -- volatile clock_timestamp() once for each use.
    WITH inserted AS (
        INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, recorded_at,
                                     hash, work_session_id, space_id, work_session_seq, space_seq, tenant, tenant_seq)
        SELECT n.event_id, n.stream_type, n.stream_id, n.stream_version, n.type, n.data, n.metadata, n.recorded_at,
               CASE WHEN NOT follows_in_batch[n.ordinality] THEN eventlog.event_digest(
                   CASE WHEN n.stream_version > 1 THEN
                       (SELECT e.hash FROM eventlog.events e
                        WHERE e.stream_type = n.stream_type AND e.stream_id = n.stream_id
                          AND e.stream_version = n.stream_version - 1)
                   END,
                   n.event_id, n.stream_type, n.stream_id, n.stream_version, n.type, n.data, n.metadata, n.recorded_at)
               END,
               route_sessions[n.ordinality], route_spaces[n.ordinality], session_seqs[n.ordinality], space_seqs[n.ordinality],
               route_tenants[n.ordinality], tenant_seqs[n.ordinality]
        FROM (
            SELECT i.ordinality, (i.item->>'event_id')::uuid AS event_id, i.item->>'stream_type' AS stream_type,
                   (i.item->>'stream_id')::uuid AS stream_id, next_versions[i.ordinality] AS stream_version,
                   i.item->>'type' AS type, i.item->'data' AS data,
                   coalesce(batch->'metadata', '{}') || coalesce(i.item->'metadata', '{}') AS metadata,
                   clock_timestamp() AS recorded_at
            FROM jsonb_array_elements(batch->'events') WITH ORDINALITY AS i(item, ordinality)
            OFFSET 0
        ) AS n
        ORDER BY n.ordinality
        RETURNING position, stream_version, tenant, tenant_seq, hash
    )
    SELECT array_agg(inserted.position ORDER BY inserted.position),
           array_agg(inserted.stream_version ORDER BY inserted.position),
           array_agg(inserted.tenant ORDER BY inserted.position),
           array_agg(inserted.tenant_seq ORDER BY inserted.position),
           array_agg(inserted.hash ORDER BY inserted.position)
    INTO positions, versions, tenants, numbers, digests FROM inserted;

    PERFORM eventlog.project(positions[1], positions[cardinality(positions)], pg_current_xact_id());

    IF claims IS NOT NULL THEN
        INSERT INTO idempotency_keys (actor, key, fingerprint, status, body)
        SELECT c->>'actor', c->>'key', c->>'fingerprint', (c->>'status')::integer, c->>'body'
        FROM jsonb_array_elements(claims) AS c WHERE c ? 'status';
    END IF;

    RETURN QUERY SELECT * FROM unnest(positions, versions, tenants, numbers, digests);
END;
$$;
