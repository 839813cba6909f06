-- The event log: the source of truth. Rows are only ever inserted.
CREATE SCHEMA eventlog;

CREATE TABLE eventlog.events (
    -- Unique and increasing within every stream; followers read in
    -- (transaction_id, position) order, see docs/ordering.md.
    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Assigned by Postgres when the appending transaction first writes, which is
    -- after it holds every stream lock it needs.
    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    event_id        uuid NOT NULL,
    stream_type     text NOT NULL,
    stream_id       uuid NOT NULL,
    stream_version  bigint NOT NULL CHECK (stream_version > 0),
    type            text NOT NULL,
    data            jsonb NOT NULL,
    metadata        jsonb NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT events_stream_version_key UNIQUE (stream_type, stream_id, stream_version)
);

-- The follower's scan order.
CREATE INDEX events_follow_idx ON eventlog.events (transaction_id, position);

CREATE FUNCTION eventlog.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % refused on eventlog.events', TG_OP
        USING ERRCODE = 'RB001';
END;
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON eventlog.events
    FOR EACH ROW EXECUTE FUNCTION eventlog.refuse_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON eventlog.events
    FOR EACH STATEMENT EXECUTE FUNCTION eventlog.refuse_change();
