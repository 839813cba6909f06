-- Folds the lock streams of a range into session_locks: the current acquisition of
-- each work session, which eventlog.append checks enforced locks against.
CREATE OR REPLACE FUNCTION eventlog.project_locks(first_position bigint, last_position bigint, only_transaction xid8)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    e eventlog.events;
BEGIN
    -- Few events, and each depends on the one before (an extend needs its acquisition):
    -- folded one by one, in order.
    FOR e IN
        SELECT * FROM eventlog.events ev
        WHERE ev.position BETWEEN first_position AND last_position
          AND (only_transaction IS NULL OR ev.transaction_id = only_transaction)
          AND ev.stream_type = 'work_session_lock'
        ORDER BY ev.position
    LOOP
        CASE e.type
        WHEN 'work_session.lock_acquired' THEN
            INSERT INTO session_locks (work_session_id, holder, token_sha256, fencing_token, enforce, expires_at)
            VALUES (e.stream_id, e.data->>'holder', e.data->>'token_sha256', e.stream_version,
                    (e.data->>'enforce')::boolean, e.recorded_at + make_interval(secs => (e.data->>'ttl_seconds')::bigint))
            ON CONFLICT (work_session_id) DO UPDATE SET
                holder = EXCLUDED.holder, token_sha256 = EXCLUDED.token_sha256, fencing_token = EXCLUDED.fencing_token,
                enforce = EXCLUDED.enforce, expires_at = EXCLUDED.expires_at;
        WHEN 'work_session.lock_extended' THEN
            UPDATE session_locks
            SET expires_at = e.recorded_at + make_interval(secs => (e.data->>'ttl_seconds')::bigint)
            WHERE work_session_id = e.stream_id AND fencing_token = (e.data->>'fencing_token')::bigint;
        WHEN 'work_session.lock_released', 'work_session.lock_broken' THEN
            DELETE FROM session_locks
            WHERE work_session_id = e.stream_id AND fencing_token = (e.data->>'fencing_token')::bigint;
        ELSE
            NULL;
        END CASE;
    END LOOP;
END;
$$;
