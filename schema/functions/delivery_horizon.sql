-- The oldest transaction of this database still running (or, when none is, the first
-- that has not started yet): an event whose transaction is below it can no longer be
-- preceded by one committed later. Read it in a statement of its own before reading
-- the events, so that their scan's snapshot is newer.
--
-- Only this database's transactions count. The cluster's snapshot xmin counts every
-- database's, and one long write elsewhere on the cluster (a batch job, a migration)
-- held back every event here for as long as it ran. A transaction elsewhere cannot
-- write to this log: a backend is bound to one database.
--
-- Why the intersection is safe: the snapshot lists every transaction running when it
-- was taken. The backends' transaction ids are read after it (the cached copy of a
-- transaction's earlier reads is dropped first). A transaction of this database
-- running then has its id in both lists. One that ended in between is committed (or
-- gone) before the events are read. One that started after the snapshot has an id at
-- or above its xmax, which bounds the answer.
CREATE OR REPLACE FUNCTION eventlog.delivery_horizon() RETURNS xid8
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    snapshot pg_snapshot := pg_current_snapshot();
    horizon xid8;
BEGIN
    PERFORM pg_stat_clear_snapshot();
    SELECT min(running) INTO horizon
    FROM pg_snapshot_xip(snapshot) AS running
    WHERE running::text::bigint % 4294967296 IN (
        SELECT a.backend_xid::text::bigint FROM pg_stat_get_activity(NULL) a
        WHERE a.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND a.backend_xid IS NOT NULL
        UNION ALL
        SELECT p.transaction::text::bigint FROM pg_prepared_xacts p WHERE p.database = current_database()
    );
    RETURN coalesce(horizon, pg_snapshot_xmax(snapshot));
END;
$$;
