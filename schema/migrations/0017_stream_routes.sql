-- Where each kind of stream belongs, as data: eventlog.append routes an event by its
-- stream type's row, and `roboscope verify` (eventlog.misrouted_events,
-- eventlog.topic_sequence_breaks) checks the stored routes by the same rows. A new kind
-- of entity is one row here, in its own migration, not a case in each of those functions.
--
-- An event belongs to the work session of its stream, to that session's space (a space's
-- events to the space itself) and to the space's tenant; it is on its work session's
-- topic when it has one, and also on its space's when `on_space_topic`. The rows are the
-- owner's: the serving role reads them and cannot change where anything is routed.
CREATE TABLE eventlog.stream_routes (
    stream_type       text PRIMARY KEY,
    -- The stream is a space: its id is the space's.
    is_space          boolean NOT NULL DEFAULT false,
    -- The stream's id is its work session's (the session itself, its lock's stream).
    is_session        boolean NOT NULL DEFAULT false,
    -- Else the work session is named by `session_field` of the first event of the stream
    -- of type `session_named_by` with the same id (a marker's details: the marker's).
    session_named_by  text,
    session_field     text,
    on_space_topic    boolean NOT NULL DEFAULT false,
    -- Belongs to no space, to the tenant its first event names (`tenant`, or the tenant
    -- of the operator in `created_by`).
    own_tenant        boolean NOT NULL DEFAULT false,
    CHECK ((session_named_by IS NULL) = (session_field IS NULL)),
    CHECK (num_nonnulls(nullif(is_space, false), nullif(is_session, false), session_named_by,
                        nullif(own_tenant, false)) = 1)
);

INSERT INTO eventlog.stream_routes
    (stream_type, is_space, is_session, session_named_by, session_field, on_space_topic, own_tenant)
VALUES ('space', true, false, NULL, NULL, true, false),
       ('work_session', false, true, NULL, NULL, true, false),
       ('work_session_lock', false, true, NULL, NULL, false, false),
       ('marker', false, false, 'marker', 'work_session_id', false, false),
       ('marker_details', false, false, 'marker', 'work_session_id', false, false),
       ('token_revocation', false, false, NULL, NULL, false, true);
