-- Reads the log in delivery order after a cursor, holding back every event whose
-- transaction might still be followed by an earlier one.
--
-- The horizon (the oldest transaction still running) is read in its own statement
-- *before* the scan, so the scan's snapshot is newer: every transaction below the
-- horizon had ended when the horizon was read, so the scan sees all of its rows.
-- Reading the horizon inside the scanning statement was not safe in practice: a test
-- with 12 concurrent writers on a cold cluster saw a follower skip committed events.
CREATE FUNCTION eventlog.read_after(after_transaction xid8, after_position bigint, max_events integer)
RETURNS SETOF eventlog.events
-- VOLATILE: each statement inside takes a new snapshot (a STABLE function would
-- reuse the caller's for both).
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    horizon xid8;
BEGIN
    SELECT pg_snapshot_xmin(pg_current_snapshot()) INTO horizon;
    RETURN QUERY
        SELECT * FROM eventlog.events e
        WHERE (e.transaction_id, e.position) > (after_transaction, after_position)
          AND e.transaction_id < horizon
        ORDER BY e.transaction_id, e.position
        LIMIT max_events;
END;
$$;
