-- The hash of one event: SHA-256 over the previous hash of its stream and its
-- canonical content, fields in a fixed order separated by the unit separator; jsonb
-- prints keys in one canonical order, timestamps as epoch microseconds. Routes and
-- topic numbers are derived columns and not covered.
--
-- STABLE, as what it calls (concat_ws, extract) is: Postgres inlines a SQL function
-- only when it is declared no stricter than its body. Declared IMMUTABLE it was run as
-- a separate query, parsed and planned again for every event the trigger hashed (an
-- eighth of the database's time in a marker create).
CREATE OR REPLACE FUNCTION eventlog.event_digest(
    previous bytea, event_id uuid, stream_type text, stream_id uuid, stream_version bigint,
    type text, data jsonb, metadata jsonb, recorded_at timestamptz
)
RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT sha256(coalesce(previous, '\x'::bytea) || convert_to(concat_ws(E'\x1f',
        event_id::text, stream_type, stream_id::text, stream_version::text, type, data::text, metadata::text,
        (extract(epoch FROM recorded_at) * 1000000)::bigint::text), 'UTF8'))
$$;
