-- For `roboscope verify`: events whose number on a topic is not what the topic's
-- order gives (1, 2, 3, ... in position order, each on its topics only): a client
-- checking topic_seq would see a jump or a repeat there. An event is on its space's
-- topic when its stream type's row of eventlog.stream_routes says so.
CREATE OR REPLACE FUNCTION eventlog.topic_sequence_breaks()
RETURNS TABLE ("position" bigint, stored jsonb, expected jsonb)
LANGUAGE sql STABLE AS $$
    SELECT x.position,
           jsonb_build_object('work_session_seq', x.work_session_seq, 'space_seq', x.space_seq),
           jsonb_build_object('work_session_seq', x.expected_session_seq, 'space_seq', x.expected_space_seq)
    FROM (
        SELECT e.position, e.work_session_seq, e.space_seq,
               CASE WHEN e.work_session_id IS NOT NULL THEN
                   row_number() OVER (PARTITION BY e.work_session_id IS NOT NULL, e.work_session_id ORDER BY e.position)
               END AS expected_session_seq,
               CASE WHEN k.on_space_topic THEN
                   row_number() OVER (PARTITION BY k.on_space_topic IS TRUE, e.space_id ORDER BY e.position)
               END AS expected_space_seq
        FROM eventlog.events e LEFT JOIN eventlog.stream_routes k ON k.stream_type = e.stream_type
    ) AS x
    WHERE x.work_session_seq IS DISTINCT FROM x.expected_session_seq
       OR x.space_seq IS DISTINCT FROM x.expected_space_seq
    ORDER BY x.position
$$;
