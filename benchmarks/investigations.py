#!/usr/bin/env python3
"""Investigations benchmark: `roboscope rebuild` over a log of 1,000,000 events next to
a plain `COPY eventlog.events TO '/dev/null'` of the same table in the same run (the read
ceiling), and `GET /markers/{id}?as_of=…` on a marker whose stream holds 1,000 events.

The log is generated in SQL (a space, 10 sessions, markers with created / details /
updated / details events in the shapes the service writes), with the triggers off while
it loads. Each event carries the transaction id of the request that would have written
it (a marker's create with its details, its update with its details): ids already
used up, below the generator's own, in the order of the events' positions, as the
append assigns them (docs/ordering.md). Started by deploy/local/bench; prints a table
and writes JSON.
"""
import statistics, json, os, re, subprocess, sys, time, http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import free_port, fresh_database, machine, percentile, psql, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

GENERATE = """
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, space_id, work_session_id, hash,
                             space_seq, transaction_id)
SELECT gen_random_uuid(), 'space', '00000000-0000-4000-8000-000000000001', 1, 'space.created',
       jsonb_build_object('id', '00000000-0000-4000-8000-000000000001', 'key', 'bench', 'name', 'Bench', 'description', null,
           'model_glb_url', null, 'model_usdc_url', null, 'preview_url', null, 'scan_url', null, 'ml_model_url', null,
           'meta', '{}'::jsonb, 'active', true, 'version', 1, 'created_at', '2026-11-22T00:00:00Z', 'updated_at', '2026-11-22T00:00:00Z'),
       '{"actor": "bench", "request_id": "bench", "correlation_id": "bench"}', '00000000-0000-4000-8000-000000000001', null, sha256('space'),
       1, (pg_current_xact_id()::text::bigint - TRANSACTION_COUNT)::text::xid8;
INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, space_id, work_session_id, hash,
                             work_session_seq, space_seq, transaction_id)
SELECT gen_random_uuid(), 'work_session', md5('session' || s)::uuid, 1, 'work_session.created',
       jsonb_build_object('id', md5('session' || s)::uuid, 'space_id', '00000000-0000-4000-8000-000000000001',
           'session_type', 'inspection', 'status', 'active', 'started_at', '2026-11-22T00:00:00Z', 'completed_at', null,
           'version', 1, 'meta', '{}'::jsonb, 'created_at', '2026-11-22T00:00:00Z', 'updated_at', '2026-11-22T00:00:00Z'),
       '{"actor": "bench", "request_id": "bench", "correlation_id": "bench"}', '00000000-0000-4000-8000-000000000001',
       md5('session' || s)::uuid, sha256(('session' || s)::bytea), 1, s + 2,
       (pg_current_xact_id()::text::bigint - TRANSACTION_COUNT + 1 + s)::text::xid8
FROM generate_series(0, 9) s;
-- Each topic numbered as the append numbers it: a session's own event is 1, then its
-- markers' events in position order (marker g belongs to session g % 10, which holds
-- the markers before g with the same remainder, 4 events each).
INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, space_id, work_session_id, hash,
                             work_session_seq, transaction_id)
SELECT gen_random_uuid(),
       CASE WHEN k % 2 = 1 THEN 'marker' ELSE 'marker_details' END,
       md5('marker' || g)::uuid,
       (k + 1) / 2,
       CASE k WHEN 1 THEN 'marker.created' WHEN 3 THEN 'marker.updated' ELSE 'marker_details.calculated' END,
       CASE WHEN k % 2 = 1 THEN jsonb_build_object('id', md5('marker' || g)::uuid, 'work_session_id', md5('session' || g % 10)::uuid,
               'label', 'm' || g || ' v' || (k + 1) / 2, 'p1', jsonb_build_array(0, 0, k), 'p2', '[2, 0, 1]'::jsonb,
               'p3', '[2, 0, 4]'::jsonb, 'p4', '[0, 0, 4]'::jsonb, 'color', null, 'version', (k + 1) / 2, 'meta', '{}'::jsonb,
               'custom_props', '{}'::jsonb, 'calibrated_data', null,
               'created_at', '2026-11-22T00:00:00Z', 'updated_at', '2026-11-22T00:00:00Z')
            ELSE jsonb_build_object('marker_id', md5('marker' || g)::uuid, 'center_location_long', 2.5, 'center_location_cross', 1,
               'left_distance', 0, 'right_distance', 2, 'far_distance', 4, 'near_distance', 1, 'long_size', 3, 'cross_size', 2,
               'custom_props', '{}'::jsonb, 'created_at', '2026-11-22T00:00:00Z', 'updated_at', '2026-11-22T00:00:00Z')
       END,
       '{"actor": "bench", "request_id": "bench", "correlation_id": "bench"}',
       '00000000-0000-4000-8000-000000000001', md5('session' || g % 10)::uuid, sha256(g::text::bytea),
       1 + 4 * ((g - ((g - 1) % 10 + 1)) / 10) + k,
       (pg_current_xact_id()::text::bigint - TRANSACTION_COUNT + 11 + 2 * (g - 1) + (k - 1) / 2)::text::xid8
FROM generate_series(1, MARKER_COUNT) g CROSS JOIN generate_series(1, 4) k
ORDER BY g, k;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;
ANALYZE eventlog.events;
"""

# One marker whose stream holds 1,000 events: a create and 999 moves, through the real append.
HOT = """
ALTER TABLE eventlog.events DISABLE TRIGGER USER;
INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, space_id, work_session_id, hash)
SELECT gen_random_uuid(), 'marker', '00000000-0000-4000-8000-0000000000aa', v,
       CASE v WHEN 1 THEN 'marker.created' ELSE 'marker.updated' END,
       jsonb_build_object('id', '00000000-0000-4000-8000-0000000000aa', 'work_session_id', md5('session0')::uuid,
           'label', 'hot v' || v, 'p1', jsonb_build_array(0, 0, v), 'p2', '[2, 0, 1]'::jsonb, 'p3', '[2, 0, 4]'::jsonb,
           'p4', '[0, 0, 4]'::jsonb, 'color', null, 'version', v, 'meta', '{}'::jsonb, 'custom_props', '{}'::jsonb,
           'calibrated_data', null, 'created_at', '2026-11-22T00:00:00Z', 'updated_at', '2026-11-22T00:00:00Z'),
       '{"actor": "bench", "request_id": "bench", "correlation_id": "bench"}',
       '00000000-0000-4000-8000-000000000001', md5('session0')::uuid, sha256(('hot' || v)::bytea)
FROM generate_series(1, 1000) v;
ALTER TABLE eventlog.events ENABLE TRIGGER USER;
ANALYZE eventlog.events;
"""


# Uses up transaction ids until the server's next one is past `$count`: an empty
# transaction per id (about 200,000 a second), so that a generated log's requests can
# carry ids no transaction can still be running under.
BURN_TRANSACTION_IDS = """
DO $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', false);
    WHILE pg_current_xact_id()::text::bigint < $count LOOP
        COMMIT;
    END LOOP;
END $$
"""


def generate(url, events):
    """GENERATE's log of about `events` events into the migrated database at `url`."""
    markers = max(1, (events - 11) // 4)
    transactions = 11 + 2 * markers + 1
    psql(url, BURN_TRANSACTION_IDS.replace("$count", str(transactions + 3)))
    subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qc",
                    GENERATE.replace("MARKER_COUNT", str(markers)).replace("TRANSACTION_COUNT", str(transactions))],
                   check=True, capture_output=True)


def generated_log(admin_url, binary, name, events):
    """A fresh database `name` on the server of `admin_url`, migrated by `binary`, holding a
    generated log of about `events` events (GENERATE); its URL."""
    url = fresh_database(admin_url, name)
    subprocess.run([binary, "migrate", "--database-url", url], check=True, capture_output=True)
    generate(url, events)
    return url


def generated_logs(admin_url, binary, kind, sizes):
    """(url, events) of a generated log per size in `sizes` ("10000,1000000"), each in its
    own database roboscope_bench_<kind>_<size>, made when the caller asks for the next and
    dropped once the caller is done with it (a 10^7 log takes 10 GB)."""
    for size in [int(s) for s in sizes.split(",")]:
        name = f"roboscope_bench_{kind}_{size}"
        url = generated_log(admin_url, binary, name, size)
        yield url, int(psql(url, "SELECT count(*) FROM eventlog.events"))
        psql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def timed(arguments):
    started = time.monotonic()
    out = subprocess.run(arguments, check=True, capture_output=True, text=True)
    return time.monotonic() - started, out.stdout + out.stderr


def main():
    args = command_line(database_url=REQUIRED, binary=REQUIRED, events=1_000_000,
                        repeat=(3, "runs of COPY and of rebuild"),
                        out=os.path.join(HERE, "results", "investigations.json"))
    url = args.database_url

    subprocess.run([args.binary, "migrate", "--database-url", url], check=True, capture_output=True)
    started = time.monotonic()
    generate(url, args.events)
    generated = time.monotonic() - started
    events = int(psql(url, "SELECT count(*) FROM eventlog.events"))
    size = psql(url, "SELECT pg_size_pretty(pg_total_relation_size('eventlog.events'))")

    results = {"machine": machine(), "events": events, "table_size": size, "generate_seconds": generated,
               "repeat": args.repeat, "copy": [], "rebuild": []}
    results["ratios"] = []
    for _ in range(args.repeat):
        seconds, _ = timed(["psql", url, "-qc", "COPY eventlog.events TO '/dev/null'"])
        results["copy"].append(events / seconds)
        seconds, output = timed([args.binary, "rebuild", "--database-url", url])
        rate = float(re.search(r"\((\d+) events/s\)", output).group(1))
        results["rebuild"].append(rate)
        # Each rebuild next to the COPY just before it: the machine drifts between runs.
        results["ratios"].append(rate / results["copy"][-1])
    copy_rate = sorted(results["copy"])[len(results["copy"]) // 2]
    rebuild_rate = sorted(results["rebuild"])[len(results["rebuild"]) // 2]
    results["copy_events_per_second"] = copy_rate
    results["rebuild_events_per_second"] = rebuild_rate
    results["ratio"] = sorted(results["ratios"])[len(results["ratios"]) // 2]

    psql(url, HOT)
    middle = psql(url, "SELECT position FROM eventlog.events WHERE stream_id = '00000000-0000-4000-8000-0000000000aa' "
                       "AND stream_version = 500")
    port = free_port()
    server = subprocess.Popen([args.binary, "serve", "--database-url", url, "--host", "127.0.0.1", "--http-port", str(port),
                               "--ws-port", str(free_port()), "--log-level", "error"])
    try:
        for _ in range(300):
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        # Rounds of 200 requests after 20 unmeasured ones; the target holds in every round.
        results["as_of_rounds"] = []
        for _ in range(args.repeat):
            latencies = []
            for _ in range(220):
                started = time.monotonic()
                connection.request("GET", f"/api/v1/markers/00000000-0000-4000-8000-0000000000aa?as_of={middle}")
                reply = connection.getresponse()
                body = json.loads(reply.read())
                latencies.append((time.monotonic() - started) * 1000)
                assert reply.status == 200 and body["label"] == "hot v500", body
            results["as_of_rounds"].append({"p50": percentile(latencies[20:], 50), "p99": percentile(latencies[20:], 99),
                                            "max": max(latencies[20:])})
        results["as_of_ms_p50"] = statistics.median(r["p50"] for r in results["as_of_rounds"])
        results["as_of_ms_p99"] = max(r["p99"] for r in results["as_of_rounds"])
    finally:
        server.terminate()
        server.wait()

    save_results(results, args.out, indent=2, sort_keys=True)
    print(f"log: {events} events ({size}), generated in {generated:.1f} s")
    print(f"COPY eventlog.events TO '/dev/null': {copy_rate:,.0f} events/s (runs: {', '.join(f'{r:,.0f}' for r in results['copy'])})")
    print(f"roboscope rebuild:                  {rebuild_rate:,.0f} events/s (runs: {', '.join(f'{r:,.0f}' for r in results['rebuild'])})")
    print(f"rebuild / COPY, each run: {', '.join(f'{r:.2f}' for r in results['ratios'])}   target: >= 0.5")
    print("as_of on a marker with 1,000 events, through the API, each round: "
          + ", ".join(f"p50 {r['p50']:.1f} ms p99 {r['p99']:.1f} ms" for r in results["as_of_rounds"]) + " (target: p99 < 10 ms)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
