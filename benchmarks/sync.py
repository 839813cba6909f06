#!/usr/bin/env python3
"""Sync-protocol benchmark, each figure next to its ceiling in the same run:

- catch-up: a topic of N events read through GET /api/v1/changes (pages of 1,000), in
  events/s (the exchanges only: the client's own JSON parse is reported apart), next to Postgres streaming the same rows (`COPY (…the feed's query…) TO
  STDOUT`) and the bare event rows (`COPY (SELECT * FROM eventlog.events …)`);
- markers by place: p50/p99 of `GET /markers?space_id=&near=x,z&range=r` on a space of
  M markers, next to the same SQL run by pgbench;
- with --baseline-binary (a build of the release before the sync protocol, with its own
  --baseline-schema): marker creates over HTTP across many work sessions for both
  builds, alternating, and the ratio new / old (what ordering on a topic costs).

Writes JSON and prints a table. Started by deploy/local/bench (`sync`).
"""
import http.client, json, os, random, re, statistics, subprocess, sys, tempfile, time

from write_path import free_port, fresh_database, machine, percentile, post_markers, psql, request, save_results, sessions_in  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def serve(binary, url, schema=None, extra=()):
    arguments = [binary, "serve", "--database-url", url, "--host", "127.0.0.1", "--log-level", "error",
                 "--db-pool-size", "32", "--role", "api", *extra]
    if schema:
        arguments += ["--schema-dir", schema]
    port = free_port()
    server = subprocess.Popen(arguments + ["--http-port", str(port)])
    for _ in range(600):
        try:
            if request(port, "GET", "/readyz")[0] == 200:
                return server, port
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not start")


def spread(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def fill(port, session, markers, place=lambda i: (0.0, 0.0)):
    """`markers` markers in `session` through POST /markers/bulk (1,000 a request)."""
    for start in range(0, markers, 1000):
        items = []
        for i in range(start, min(markers, start + 1000)):
            x, z = place(i)
            items.append({"work_session_id": session, "p1": [x - 0.5, 0, z - 0.5], "p2": [x + 0.5, 0, z - 0.5],
                          "p3": [x + 0.5, 0, z + 0.5], "p4": [x - 0.5, 0, z + 0.5]})
        status, _ = request(port, "POST", "/api/v1/markers/bulk", {"markers": items})
        assert status == 201, status


def timed(command, **kwargs):
    started = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    return time.perf_counter() - started


def paged_sql(url, session, pages):
    """Events/s of Postgres serving the feed's pages itself: the page query (1,001 rows, the
    same settings in a read-only transaction) after random positions of the topic, by pgbench."""
    low, high = psql(url, f"SELECT min(position), max(position) - 1001 FROM eventlog.events "
                          f"WHERE work_session_id = '{session}'").split("|")
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "page.sql")
        with open(script, "w") as f:
            f.write(f"\\set since random({low}, {high})\n"
                    "BEGIN READ ONLY;\nSET LOCAL enable_bitmapscan = off;\nSET LOCAL enable_sort = off;\n"
                    f"SELECT * FROM eventlog.delivery_rows WHERE work_session_id = '{session}' AND position > :since "
                    "ORDER BY position LIMIT 1001;\nCOMMIT;\n")
        output = subprocess.run(["pgbench", "-n", "-t", str(pages), "-f", script, url],
                                check=True, capture_output=True, text=True, env=WITHOUT_JIT).stdout
    tps = float(next(line for line in output.splitlines() if line.startswith("tps")).split()[2])
    return tps * 1000


# The ceilings run without JIT: once the statistics know the topic, the planner's estimate for a whole topic
# (COPY) passes jit_above_cost, and compiling then takes 0.3 s of a 0.75 s read. The service's pages stay
# far below that cost; the ceiling should be Postgres at its best.
WITHOUT_JIT = {**os.environ, "PGOPTIONS": "-c jit=off"}


def page_through(port, topic, parse=True):
    """A client catching up: `GET /changes` from 0, page after page, on one kept-alive connection (as a client
    holds one). Returns (events, seconds exchanging, seconds parsing). The server's part is each request until
    its whole answer is in; the client's JSON parse is timed apart (a slow parser here would otherwise be the
    figure), and it is also the time a client spends on a page before asking for the next. Without `parse`, the
    client asks for the next page at once (it reads only the page's tail), and the server has no time to read
    ahead in but the answer's own transfer."""
    since, read, exchanging, parsing = 0, 0, 0.0, 0.0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while True:
        started = time.perf_counter()
        connection.request("GET", f"/api/v1/changes?topic={topic}&since={since}&limit=1000")
        reply = connection.getresponse()
        body = reply.read()
        exchanged = time.perf_counter()
        assert reply.status == 200
        if parse:
            page = json.loads(body)
            count, since, more = len(page["data"]), page["next_since"], page["has_more"]
        else:
            tail = re.search(rb'"next_since":(\d+),"has_more":(true|false)}$', body)
            count, since, more = body.count(b'"op":"event"'), int(tail.group(1)), tail.group(2) == b"true"
        exchanging += exchanged - started
        parsing += time.perf_counter() - exchanged
        read += count
        if not more:
            break
    connection.close()
    return read, exchanging, parsing


def catch_up(binary, admin_url, events, repeat):
    """The changes feed paged from 0 over a topic of `events` events, by two servers on one database: one
    reading every page when asked (`--changes-read-ahead 0`), one reading the next page while the client
    takes in the last (the default), in alternating rounds with COPY and pgbench serving the same rows."""
    url = fresh_database(admin_url, "roboscope_bench_sync_feed")
    server, port = serve(binary, url, extra=["--changes-read-ahead", "0"])
    ahead, ahead_port = serve(binary, url)
    try:
        _, space = request(port, "POST", "/api/v1/spaces", {"key": "feed", "name": "feed"})
        _, session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]})
        fill(port, session["id"], events // 2)  # a marker and its details: two events each
        psql(url, "VACUUM ANALYZE")
        topic = f"work_session:{session['id']}"
        total = int(psql(url, f"SELECT count(*) FROM eventlog.events WHERE work_session_id = '{session['id']}'"))
        query = (f"SELECT * FROM eventlog.delivery_rows WHERE work_session_id = '{session['id']}' ORDER BY position")
        feed_rates, ahead_rates, copy_rates, raw_rates, paged_rates = [], [], [], [], []
        parse_seconds, cold_wall, ahead_wall, eager_rates, eager_ahead_rates = [], [], [], [], []
        for _ in range(repeat):
            read, exchanging, parsing = page_through(port, topic)
            assert read == total, (read, total)
            feed_rates.append(total / exchanging)
            parse_seconds.append(parsing)
            cold_wall.append(total / (exchanging + parsing))
            read, exchanging, parsing = page_through(ahead_port, topic)
            assert read == total, (read, total)
            ahead_rates.append(total / exchanging)
            ahead_wall.append(total / (exchanging + parsing))
            for rates, client_port in ((eager_rates, port), (eager_ahead_rates, ahead_port)):
                read, exchanging, _ = page_through(client_port, topic, parse=False)
                assert read == total, (read, total)
                rates.append(total / exchanging)
            with open(os.devnull, "w") as sink:
                copy_rates.append(total / timed(["psql", url, "-qAtc", f"COPY ({query}) TO STDOUT"], stdout=sink,
                                                env=WITHOUT_JIT))
                raw_rates.append(total / timed(["psql", url, "-qAtc", "COPY (SELECT * FROM eventlog.events WHERE "
                                                f"work_session_id = '{session['id']}' ORDER BY position) TO STDOUT"],
                                               stdout=sink, env=WITHOUT_JIT))
            paged_rates.append(paged_sql(url, session["id"], pages=50))
        return {"events": total, "rounds": repeat, "feed_events_per_second": spread(feed_rates),
                "read_ahead_events_per_second": spread(ahead_rates),
                "client_json_parse_seconds": spread(parse_seconds),
                "with_client_parse_events_per_second": spread(cold_wall),
                "read_ahead_with_client_parse_events_per_second": spread(ahead_wall),
                "paged_sql_events_per_second": spread(paged_rates),
                "ratio_to_paged_sql": spread([f / p for f, p in zip(feed_rates, paged_rates)]),
                "copy_same_rows_per_second": spread(copy_rates), "copy_event_rows_per_second": spread(raw_rates),
                "ratio_to_copy": spread([f / c for f, c in zip(feed_rates, copy_rates)]),
                "read_ahead_ratio_to_copy": spread([f / c for f, c in zip(ahead_rates, copy_rates)]),
                "read_ahead_speedup_with_client_parse": spread([a / c for a, c in zip(ahead_wall, cold_wall)]),
                "eager_client_events_per_second": spread(eager_rates),
                "eager_client_read_ahead_events_per_second": spread(eager_ahead_rates),
                "eager_client_read_ahead_ratio_to_copy": spread([f / c for f, c in zip(eager_ahead_rates, copy_rates)])}
    finally:
        for process in (server, ahead):
            process.terminate()
            process.wait(timeout=30)


def marker_select():
    """The service's own select of markers with their details (MarkerRows.select), read from its source so that
    the SQL ceiling runs the very statement the API does."""
    source = open(os.path.join(HERE, "..", "Sources", "RoboscopePostgres", "ReadModels", "MarkerRows.swift")).read()
    columns = re.search(r'static let columns = """\n(.*?)\n\s*"""', source, re.S).group(1)
    tables = re.search(r'static let tables = "(.*?)"', source).group(1)
    return " ".join(f"SELECT {columns} {tables}".split())


def near(binary, admin_url, markers, queries, range_m):
    url = fresh_database(admin_url, "roboscope_bench_sync_place")
    server, port = serve(binary, url)
    try:
        _, space = request(port, "POST", "/api/v1/spaces", {"key": "place", "name": "place"})
        # A space of four sessions, markers spread over a 200 m x 600 m hull.
        sessions = sessions_in(port, space["id"], 4)
        rng = random.Random(7)
        for session in sessions:
            fill(port, session, markers // 4, lambda i: (rng.uniform(-100, 100), rng.uniform(0, 600)))
        # The fill leaves autovacuum and a checkpoint to run: settle them, so that neither side measures them.
        psql(url, "VACUUM ANALYZE")
        psql(url, "CHECKPOINT")
        points = [(rng.uniform(-100, 100), rng.uniform(0, 600)) for _ in range(queries)]
        api_ms, sql_ms, found = [], [], []
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with tempfile.TemporaryDirectory() as folder:
            # The same SQL the service runs, through pgbench (prepared), latencies logged per query.
            script = os.path.join(folder, "near.sql")
            with open(script, "w") as f:
                f.write("\\set x random(-100, 100)\n\\set z random(0, 600)\n"
                        f"{marker_select()} "
                        f"WHERE m.space_id = '{space['id']}' AND m.center <@ circle(point(:x, :z), {range_m}) "
                        "ORDER BY m.center <-> point(:x, :z) LIMIT 10001;\n")
            # Rounds alternate the API and the SQL, so that both see the same state of the machine.
            rounds = 5
            for round in range(rounds):
                share = points[round::rounds]
                for x, z in share:
                    started = time.perf_counter()
                    connection.request("GET", f"/api/v1/markers?space_id={space['id']}&near={x:.3f},{z:.3f}&range={range_m}")
                    reply = connection.getresponse()
                    body = reply.read()
                    api_ms.append((time.perf_counter() - started) * 1000)
                    assert reply.status == 200
                    found.append(len(json.loads(body)))
                prefix = os.path.join(folder, f"log{round}")
                subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", "1", "-t", str(len(share)), "-f", script, "-l",
                                "--log-prefix", prefix, url], check=True, capture_output=True, cwd=folder)
                log = [name for name in os.listdir(folder) if name.startswith(f"log{round}.")][0]
                sql_ms += [int(line.split()[2]) / 1000 for line in open(os.path.join(folder, log))]
        connection.close()
        plan = psql(url, "EXPLAIN SELECT m.id FROM markers m WHERE m.space_id = "
                    f"'{space['id']}' AND m.center <@ circle(point(0, 300), {range_m}) ORDER BY m.center <-> point(0, 300)")
        return {"markers": markers, "queries": queries, "range_m": range_m, "found_median": statistics.median(found),
                "api_ms": {"p50": percentile(api_ms, 50), "p99": percentile(api_ms, 99), "max": max(api_ms)},
                "sql_ms": {"p50": percentile(sql_ms, 50), "p99": percentile(sql_ms, 99), "max": max(sql_ms)},
                "index_used": "markers_place_idx" in plan}
    finally:
        server.terminate()
        server.wait(timeout=30)


def write_cost(binary, baseline, baseline_schema, admin_url, clients, seconds, repeat, sessions):
    """Marker creates across `sessions` work sessions, the new build and the old one alternating."""
    runs = {"new": [], "old": []}
    single = {"new": [], "old": []}
    servers = {}
    try:
        for name, build, schema in (("new", binary, None), ("old", baseline, baseline_schema)):
            url = fresh_database(admin_url, f"roboscope_bench_sync_{name}")
            server, port = serve(build, url, schema)
            _, space = request(port, "POST", "/api/v1/spaces", {"key": "w", "name": "w"})
            servers[name] = (server, port, sessions_in(port, space["id"], sessions))
        for round in range(repeat):
            # Alternating which build goes first cancels the drift of the shared disk within a round.
            order = list(servers.items()) if round % 2 == 0 else list(reversed(servers.items()))
            for name, (_, port, ids) in order:
                runs[name].append(post_markers(port, clients, seconds, ids)["requests_per_second"])
                single[name].append(post_markers(port, clients, seconds, ids[0])["requests_per_second"])
    finally:
        for server, _, _ in servers.values():
            server.terminate()
            server.wait(timeout=30)
    return {"clients": clients, "sessions": sessions, "repeat": repeat, "new_per_second": spread(runs["new"]),
            "old_per_second": spread(runs["old"]), "ratio": spread([n / o for n, o in zip(runs["new"], runs["old"])]),
            "one_session_new_per_second": spread(single["new"]), "one_session_old_per_second": spread(single["old"])}


def main():
    args = command_line(admin_url=(REQUIRED, "a database URL on the server; scratch databases are made beside it"),
                        binary=REQUIRED,
                        baseline_binary=(None, "the release before the sync protocol, for the write-cost comparison"),
                        baseline_schema=(None, "that release's schema/ folder"), events=100_000, markers=100_000,
                        queries=500, range=5.0, clients=32, seconds=10, repeat=3,
                        sessions=(256, "work sessions the write-cost comparison spreads over"),
                        parts=("catch_up,near,write_cost", "which measurements to run (comma-separated)"),
                        output=os.path.join(HERE, "results", "sync.json"))

    parts = set(args.parts.split(","))
    result = {"machine": machine(), "repeat": args.repeat}
    if os.path.exists(args.output):
        # A run of some parts keeps the others' last figures.
        with open(args.output) as f:
            result = {**json.load(f), **result}
    if "catch_up" in parts:
        result["catch_up"] = catch_up(args.binary, args.admin_url, args.events, args.repeat)
    if "near" in parts:
        result["near"] = near(args.binary, args.admin_url, args.markers, args.queries, args.range)
    if "write_cost" in parts and args.baseline_binary:
        result["write_cost"] = write_cost(args.binary, args.baseline_binary, args.baseline_schema, args.admin_url,
                                          args.clients, args.seconds, args.repeat, args.sessions)
    save_results(result, args.output)

    fmt = lambda s, f=",.0f": f"{s['median']:{f}} [{s['min']:{f}}-{s['max']:{f}}]"
    if "catch_up" in result:
        c = result["catch_up"]
        print(f"catch-up of {c['events']:,} events: feed {fmt(c['feed_events_per_second'])}/s, COPY of the same rows "
              f"{fmt(c['copy_same_rows_per_second'])}/s, ratio {fmt(c['ratio_to_copy'], '.2f')}; "
              f"COPY of the bare event rows {fmt(c['copy_event_rows_per_second'])}/s; the same pages served by Postgres "
              f"{fmt(c['paged_sql_events_per_second'])}/s (feed / that {fmt(c['ratio_to_paged_sql'], '.2f')}); "
              f"the client's JSON parse {fmt(c['client_json_parse_seconds'], '.2f')} s")
        print(f"  reading ahead: feed {fmt(c['read_ahead_events_per_second'])}/s, ratio to COPY "
              f"{fmt(c['read_ahead_ratio_to_copy'], '.2f')}; with the client's parse {fmt(c['with_client_parse_events_per_second'])}/s "
              f"without, {fmt(c['read_ahead_with_client_parse_events_per_second'])}/s with "
              f"(x{fmt(c['read_ahead_speedup_with_client_parse'], '.2f')})")
        print(f"  a client that asks for each page at once: {fmt(c['eager_client_events_per_second'])}/s without reading "
              f"ahead, {fmt(c['eager_client_read_ahead_events_per_second'])}/s with (ratio to COPY "
              f"{fmt(c['eager_client_read_ahead_ratio_to_copy'], '.2f')})")
    if "near" in result:
        n = result["near"]
        print(f"near on {n['markers']:,} markers (range {n['range_m']} m, {n['found_median']:.0f} found): API p50 "
              f"{n['api_ms']['p50']:.2f} ms, p99 {n['api_ms']['p99']:.2f} ms; SQL p50 {n['sql_ms']['p50']:.2f} ms, "
              f"p99 {n['sql_ms']['p99']:.2f} ms; index used: {n['index_used']}")
    if "write_cost" in result:
        w = result["write_cost"]
        print(f"writes at {w['clients']} clients over {w['sessions']} sessions: new {fmt(w['new_per_second'])}/s, "
              f"old {fmt(w['old_per_second'])}/s, new/old {fmt(w['ratio'], '.2f')}; into one session: new "
              f"{fmt(w['one_session_new_per_second'])}/s, old {fmt(w['one_session_old_per_second'])}/s")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
