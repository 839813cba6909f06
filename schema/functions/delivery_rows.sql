-- An event as clients receive it (the WebSocket gateways, the changes feed): its place
-- in the log and on its topics, who caused it, and for a marker its details as of
-- the same transaction (clients get markers in the REST shape, details included).
-- A view, so that each reader's WHERE, ORDER BY and LIMIT reach the log's indexes and
-- the details are looked up only for the rows returned, and only when selected: a page
-- of one topic selects every column but the details and finds most of them in its own
-- rows (DeliveryReader.rows, PageDetails; docs/ordering.md).
CREATE OR REPLACE VIEW eventlog.delivery_rows AS
SELECT e.position, e.transaction_id, e.stream_type, e.stream_id, e.stream_version, e.type, e.data,
       e.metadata->>'actor' AS actor, e.metadata->>'client_mutation_id' AS client_mutation_id, e.recorded_at,
       e.work_session_id, e.space_id, e.work_session_seq, e.space_seq,
       CASE WHEN e.stream_type = 'marker' AND e.type <> 'marker.deleted' THEN (
           SELECT CASE WHEN d.type = 'marker_details.deleted' THEN NULL ELSE d.data END
           FROM eventlog.events d
           WHERE d.stream_type = 'marker_details' AND d.stream_id = e.stream_id
             AND d.transaction_id <= e.transaction_id
           ORDER BY d.stream_version DESC LIMIT 1)
       END AS details,
       -- Last: a view gains columns only at its end.
       e.metadata->>'traceparent' AS traceparent
FROM eventlog.events e;
