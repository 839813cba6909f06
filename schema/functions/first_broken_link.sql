-- requires: chain_check
-- The first broken link of the whole log (`roboscope verify --chain`); NULLs when intact.
CREATE OR REPLACE FUNCTION eventlog.first_broken_link(
    OUT "position" bigint, OUT stream_type text, OUT stream_id uuid, OUT stream_version bigint, OUT problem text
)
LANGUAGE sql STABLE AS $$
    SELECT c.position, c.stream_type, c.stream_id, c.stream_version, c.problem FROM eventlog.chain_check(NULL, NULL) c
$$;
