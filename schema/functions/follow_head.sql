-- requires: delivery_horizon
-- Where a new follower starts: the last event that no running transaction can precede.
CREATE OR REPLACE FUNCTION eventlog.follow_head(OUT transaction_id xid8, OUT "position" bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    horizon xid8;
BEGIN
    horizon := eventlog.delivery_horizon();
    SELECT e.transaction_id, e.position INTO transaction_id, "position"
    FROM eventlog.events e
    WHERE e.transaction_id < horizon
    ORDER BY e.transaction_id DESC, e.position DESC
    LIMIT 1;
    transaction_id := coalesce(transaction_id, '0'::xid8);
    "position" := coalesce("position", 0);
END;
$$;
