-- The last event of each stream of one type within a range of positions (only those
-- of one transaction when `only_transaction` is given): what eventlog.project folds.
--
-- The range is read on its own (OFFSET 0 keeps the type's test out of the scan): the
-- plan is generic, and before the log's first ANALYZE the planner took `stream_type =
-- $4` for as selective as the range and ANDed a scan of the stream index over every
-- event of the type, so each create's fold read the whole kind (a young database ran
-- creates at half speed, and slower as the log grew; benchmarks/analysis.md).
CREATE OR REPLACE FUNCTION eventlog.last_events(first_position bigint, last_position bigint, only_transaction xid8, kind text)
RETURNS SETOF eventlog.events
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (r.stream_id) r.*
    FROM (
        SELECT e.* FROM eventlog.events e
        WHERE e.position BETWEEN first_position AND last_position
          AND (only_transaction IS NULL OR e.transaction_id = only_transaction)
        OFFSET 0
    ) AS r
    WHERE r.stream_type = kind
    ORDER BY r.stream_id, r.position DESC
$$;
