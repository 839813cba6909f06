-- Tamper evidence: every appended event gets its hash (eventlog.event_digest) before
-- it is inserted. A BEFORE INSERT trigger sees the rows the same INSERT wrote before
-- it, so several events of one stream in one batch chain too. Editing, removing or
-- reordering an event breaks the chain at that event or the next one; `roboscope
-- verify --chain` finds it. Rewriting a stream's whole chain from the edit on is not
-- detected by the chain alone: anchor it by publishing stream heads elsewhere
-- (docs/investigations.md).
--
-- eventlog.append supplies the hashes it computed set-based, and a restore
-- (deploy/backup/restore-events) inserts every event with the hash it was stored with:
-- a supplied hash is kept, so that `verify --chain` after a restore checks the backup's
-- own hashes (recomputing would bless whatever the backup holds).
CREATE OR REPLACE FUNCTION eventlog.chain_hash() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    previous bytea;
BEGIN
    IF NEW.hash IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF NEW.stream_version > 1 THEN
        SELECT e.hash INTO previous FROM eventlog.events e
        WHERE e.stream_type = NEW.stream_type AND e.stream_id = NEW.stream_id
          AND e.stream_version = NEW.stream_version - 1;
    END IF;
    NEW.hash := eventlog.event_digest(previous, NEW.event_id, NEW.stream_type, NEW.stream_id, NEW.stream_version,
                                      NEW.type, NEW.data, NEW.metadata, NEW.recorded_at);
    RETURN NEW;
END;
$$;

-- Only for rows that come without a hash: eventlog.append hashes most of its events
-- itself, set-based, and a row it hashed must not cost a call of this function.
CREATE OR REPLACE TRIGGER events_hash_chain
    BEFORE INSERT ON eventlog.events
    FOR EACH ROW WHEN (NEW.hash IS NULL) EXECUTE FUNCTION eventlog.chain_hash();
