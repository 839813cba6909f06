-- The sync protocol (docs/sync.md): a sequence per topic, idempotency keys, markers
-- by place. Functions that read or write these live in schema/functions/.

-- Order on a topic. An event of a work session's topic (its markers, their details,
-- its lock, the session itself: every event with a work_session_id) carries its
-- number on that topic; an event of a space's topic (the space and its work
-- sessions) its number on that one. eventlog.append assigns them under the topic's
-- lock, so on every topic both the numbers and the positions follow commit order.
ALTER TABLE eventlog.events ADD COLUMN work_session_seq bigint, ADD COLUMN space_seq bigint;

-- Events written before: numbered in position order, which is the order the
-- changes feed lists them in.
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
UPDATE eventlog.events e SET work_session_seq = n.seq
FROM (SELECT position, row_number() OVER (PARTITION BY work_session_id ORDER BY position) AS seq
      FROM eventlog.events WHERE work_session_id IS NOT NULL) AS n
WHERE e.position = n.position;
UPDATE eventlog.events e SET space_seq = n.seq
FROM (SELECT position, row_number() OVER (PARTITION BY space_id ORDER BY position) AS seq
      FROM eventlog.events WHERE space_id IS NOT NULL AND stream_type IN ('space', 'work_session')) AS n
WHERE e.position = n.position;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;

-- A space's topic, in order (its sessions' markers share space_id but not the topic).
-- A work session's topic is events_work_session_idx.
CREATE INDEX events_space_topic_idx ON eventlog.events (space_id, position) WHERE space_seq IS NOT NULL;

-- Routes and topic numbers are computed by eventlog.append, set-based, instead of a
-- row trigger; a restore supplies them.
DROP TRIGGER IF EXISTS events_a_route ON eventlog.events;
DROP FUNCTION IF EXISTS eventlog.route_event();
-- Followers read through eventlog.deliveries and eventlog.topic_events now.
DROP FUNCTION IF EXISTS eventlog.read_after(xid8, bigint, integer);
-- Its result gains the topic numbers (a new signature: schema/functions/deliveries.sql).
DROP FUNCTION IF EXISTS eventlog.deliveries(xid8, bigint, integer, xid8, bigint, uuid, uuid);

-- Idempotency keys: the answer to a keyed write, stored in the transaction of its
-- events, so no crash can separate a change from its answer.
CREATE TABLE public.idempotency_keys (
    actor        text NOT NULL,
    key          text NOT NULL,
    -- SHA-256 (hex) of the method, the path and the body of the first request.
    fingerprint  text NOT NULL,
    status       integer NOT NULL,
    body         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (actor, key)
);
CREATE INDEX idempotency_keys_created_at_idx ON public.idempotency_keys (created_at);

-- Markers by place: each marker row names its space (from its events' route), and
-- a GiST index over (space, centre on the floor plan) serves `near` and `bbox`.
CREATE EXTENSION IF NOT EXISTS btree_gist;
ALTER TABLE public.markers ADD COLUMN space_id uuid;
UPDATE public.markers m SET space_id = w.space_id FROM public.work_sessions w WHERE w.id = m.work_session_id;
ALTER TABLE public.markers ALTER COLUMN space_id SET NOT NULL;
-- The centre on the floor plan: x = cross axis, z = long axis, the mean of the four
-- corners (what center_location_cross and center_location_long hold, whatever a
-- client later PUTs into the details).
ALTER TABLE public.markers ADD COLUMN center point GENERATED ALWAYS AS (point(
    ((p1->>0)::float8 + (p2->>0)::float8 + (p3->>0)::float8 + (p4->>0)::float8) / 4,
    ((p1->>2)::float8 + (p2->>2)::float8 + (p3->>2)::float8 + (p4->>2)::float8) / 4)) STORED;
-- It serves `space_id` lists too (they are sorted after the scan): one index less to
-- maintain on every marker write.
CREATE INDEX markers_place_idx ON public.markers USING gist (space_id, center);
