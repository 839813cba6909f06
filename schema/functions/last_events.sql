-- The last event of each stream of one type within a range of positions (only those
-- of one transaction when `only_transaction` is given): what eventlog.project folds.
CREATE OR REPLACE FUNCTION eventlog.last_events(first_position bigint, last_position bigint, only_transaction xid8, kind text)
RETURNS SETOF eventlog.events
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (e.stream_id) e.*
    FROM eventlog.events e
    WHERE e.position BETWEEN first_position AND last_position
      AND (only_transaction IS NULL OR e.transaction_id = only_transaction)
      AND e.stream_type = kind
    ORDER BY e.stream_id, e.position DESC
$$;
