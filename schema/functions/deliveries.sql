-- requires: delivery_rows, delivery_horizon
-- What a WebSocket gateway's tailer reads live: up to `max_events` events after a
-- cursor, in delivery order, holding back every event whose transaction might still be
-- followed by an earlier one.
--
-- The horizon (the oldest transaction of this database still running, from
-- eventlog.delivery_horizon) is read in its own statement *before* the scan, so the
-- scan's snapshot is newer: every transaction of this database below the horizon had
-- ended when the horizon was read, so the scan sees all of its rows.
-- Reading the horizon inside the scanning statement was not safe in practice: a test
-- with 12 concurrent writers on a cold cluster saw a follower skip committed events.
CREATE OR REPLACE FUNCTION eventlog.deliveries(after_transaction xid8, after_position bigint, max_events integer)
RETURNS SETOF eventlog.delivery_rows
-- VOLATILE: each statement inside takes a new snapshot (a STABLE function would
-- reuse the caller's for both).
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    horizon xid8;
BEGIN
    horizon := eventlog.delivery_horizon();
    RETURN QUERY
    SELECT * FROM eventlog.delivery_rows r
    WHERE (r.transaction_id, r.position) > (after_transaction, after_position)
      AND r.transaction_id < horizon
    ORDER BY r.transaction_id, r.position
    LIMIT max_events;
END;
$$;
