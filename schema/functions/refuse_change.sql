-- The event log is append-only: updates, deletes and truncation are refused.
CREATE OR REPLACE FUNCTION eventlog.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % refused on eventlog.events', TG_OP
        USING ERRCODE = 'RB001';
END;
$$;

CREATE OR REPLACE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON eventlog.events
    FOR EACH ROW EXECUTE FUNCTION eventlog.refuse_change();

CREATE OR REPLACE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON eventlog.events
    FOR EACH STATEMENT EXECUTE FUNCTION eventlog.refuse_change();
