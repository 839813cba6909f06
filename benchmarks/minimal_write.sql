-- The physical ceiling of a marker create: the same facts the append stores (the two
-- events with every column, the marker's row and its details' row), written with the
-- fewest statements, prepared, and nothing else: no function, no locks, no parent or
-- version check, no hash chain trigger, no routes, no audit indexes. The event table
-- keeps the two keys that make it a log (position, and one version per stream); the
-- projection tables keep every index, because the reads need them on both sides.
-- Run by pgbench next to the API (benchmarks/write_path.py); `:hi`/`:lo` make the
-- marker's id, `:n` picks one of the bench.sessions.
CREATE SCHEMA IF NOT EXISTS bench;
DROP TABLE IF EXISTS bench.min_events, bench.min_markers, bench.min_marker_details;
CREATE TABLE bench.min_events (
    LIKE eventlog.events INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED,
    PRIMARY KEY (position),
    UNIQUE (stream_type, stream_id, stream_version));
CREATE TABLE bench.min_markers (LIKE public.markers INCLUDING ALL);
CREATE TABLE bench.min_marker_details (LIKE public.marker_details INCLUDING ALL);
