#!/usr/bin/env python3
"""Write-path benchmark: markers created over HTTP at 1, 8 and 32 concurrent clients,
each request into one of 64 work sessions at random (collaboration's shape: a few
devices per session), next to pgbench running the very statement the service runs
(eventlog.append with the same batch, into the same sessions) and pgbench running the
minimal transaction that stores the same facts (benchmarks/minimal_write.pgbench: two
event rows, two projection upserts, prepared, nothing else) in the same run; the
rate into one single work session, whose writes take its topic's lock in turn
(docs/ordering.md); and POST /markers/bulk with 1,000 markers, in rounds, each next
to the one statement that stores the same facts (benchmarks/minimal_bulk.pgbench).

Prints a table and writes JSON. Started by deploy/local/bench.
"""
import functools, http.client, json, os, random, re, socket, statistics, subprocess, sys, tempfile, time, uuid

from command_line import REQUIRED, command_line

HERE = os.path.dirname(os.path.abspath(__file__))


def save_results(result, path, indent=2, **options):
    """Writes a benchmark's figures as JSON to `path` (its folder made first); nothing
    when no path was asked for."""
    if not path:
        return
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        json.dump(result, out, indent=indent, **options)


_given_ports = set()


def free_port():
    """A free loopback port below the kernel's ephemeral range (32768 and up on Linux),
    never the same twice in a run: a port the kernel picks from that range can be taken
    as the local port of an outbound connection before the server binds it."""
    for _ in range(500):
        port = random.randint(20000, 32767)
        if port in _given_ports:
            continue
        _given_ports.add(port)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free loopback port below 32768")


def request(port, method, path, body=None):
    status, payload = exchange(port, method, path, json.dumps(body).encode() if body is not None else None)
    return status, (json.loads(payload) if payload else None)


def exchange(port, method, path, data=None):
    """One request with a body already encoded: (status, the answer's bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    payload = reply.read()
    conn.close()
    return reply.status, payload


def psql(url, sql):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qtAc", sql], check=True,
                          capture_output=True, text=True).stdout.strip()


def metric(port, name):
    """The server's /metrics value of `name`, summed over its series (every label set)."""
    _, body = exchange(port, "GET", "/metrics")
    total = 0.0
    for match in re.finditer(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", body.decode(), re.M):
        total += float(match.group(1))
    return total


def fresh_database(admin_url, name):
    """An empty database `name` on the server of `admin_url` (dropped first if it exists); its URL."""
    psql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    psql(admin_url, f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + "/" + name


def run_wrk(url, clients, seconds, script=None, env=None):
    """wrk against `url` (a GET, or what the Lua `script` sends): requests/s, p50 and p99 in ms, non-2xx."""
    extra = ["-s", os.path.join(HERE, script)] if script else []
    out = subprocess.run(["wrk", "-t", str(min(clients, 2)), "-c", str(clients), "-d", f"{seconds}s", "--latency", *extra, url],
                         check=True, capture_output=True, text=True, env=env).stdout

    def ms(text):
        value, unit = re.match(r"([\d.]+)(\w+)", text).groups()
        return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]
    latency = {p: ms(re.search(rf"\s{p}%\s+([\d.]+\w+)", out).group(1)) for p in ("50", "99")}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": latency["50"], "p99_ms": latency["99"], "non_2xx": int(errors.group(1)) if errors else 0}


def post_markers(port, clients, seconds, sessions, keyed=False):
    """`POST /api/v1/markers` with the body the iOS app sends, each into one of `sessions`
    (a list of ids, or one id) at random; `keyed`: each with a new `Idempotency-Key`."""
    ids = sessions if isinstance(sessions, str) else ",".join(sessions)
    return run_wrk(f"http://127.0.0.1:{port}/api/v1/markers", clients, seconds, script="post_marker.lua",
                   env=dict(os.environ, BENCH_SESSION_IDS=ids, BENCH_IDEMPOTENCY_KEYS="1" if keyed else "0"))


def pgbench(url, clients, seconds, space, sessions):
    """eventlog.append of the service's batch, each transaction into one of `sessions` at random."""
    psql(url, "DROP TABLE IF EXISTS bench.sessions; CREATE TABLE bench.sessions (n int PRIMARY KEY, id uuid NOT NULL);"
         + "".join(f"INSERT INTO bench.sessions VALUES ({n}, '{id}');" for n, id in enumerate(sessions, 1)))
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(f"\\set n random(1, {len(sessions)})\n"
                     "SELECT count(*) FROM eventlog.append(bench.marker_batch(:space::uuid, "
                     "(SELECT id FROM bench.sessions WHERE n = :n)));\n")
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
                          "-f", script.name, "-D", f"space={space}", url],
                         check=True, capture_output=True, text=True).stdout
    os.unlink(script.name)
    return float(re.search(r"tps = ([\d.]+)", out).group(1))


def minimal(url, clients, seconds, space, sessions):
    """The ceiling: benchmarks/minimal_write.pgbench, into the bench.sessions that pgbench() left."""
    out = pgbench_script(url, "minimal_write.pgbench", space, sessions,
                         "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds))
    return float(re.search(r"tps = ([\d.]+)", out).group(1))


def minimal_bulk(url, transactions, space, sessions):
    """The ceiling of a 1,000-marker bulk: benchmarks/minimal_bulk.pgbench, one client, its
    mean latency in ms."""
    out = pgbench_script(url, "minimal_bulk.pgbench", space, sessions, "-c", "1", "-t", str(transactions))
    return float(re.search(r"latency average = ([\d.]+) ms", out).group(1))


def pgbench_script(url, script, space, sessions, *shape):
    """pgbench's output for one of this directory's scripts, prepared, into the bench.sessions
    that pgbench() left; `shape`: its clients and its length."""
    return subprocess.run(["pgbench", "-n", "-M", "prepared", *shape, "-f", os.path.join(HERE, script),
                           "-D", f"space={space}", "-D", f"sessions={len(sessions)}", url],
                          check=True, capture_output=True, text=True).stdout


def bulk_requests(port, session, count):
    """`count` requests of POST /markers/bulk with 1,000 markers, one after another: each
    one's time in ms, from its first byte sent to its answer's last received. This
    client's own JSON encoding and parsing (about 3 and 11 ms in Python for 146 KB in and
    625 KB out) is not the service's."""
    marker = {"work_session_id": session, "p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}
    times = []
    for _ in range(count):
        data = json.dumps({"markers": [dict(marker, label=f"b{i}") for i in range(1000)]}).encode()
        started = time.perf_counter()
        status, payload = exchange(port, "POST", "/api/v1/markers/bulk", data)
        times.append((time.perf_counter() - started) * 1000)
        assert status == 201 and len(json.loads(payload)) == 1000, status
    return times


def sessions_in(port, space, count):
    """`count` more work sessions in `space`."""
    return [request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"] for _ in range(count)]


def ready(port, path="/readyz", seconds=60):
    """Waits until `GET path` on the port answers 200 (path None: until it accepts a
    connection); exits the benchmark if nothing does within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if path is None:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            if request(port, "GET", path)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"nothing answered on port {port}")


def start_server(binary, *arguments):
    """Starts `roboscope serve` on a free port; returns (process, port, space id, session id)
    once it is ready, with a fresh space and work session to bench against."""
    port = free_port()
    # A WebSocket port of its own too: the default one (8081) is taken by the first server
    # when the quick suite runs two scenarios at once.
    ws = [] if "--ws-port" in arguments else ["--ws-port", str(free_port())]
    server = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--http-port", str(port),
                               "--log-level", "error", *ws, *arguments])
    ready(port, seconds=30)
    _, space = request(port, "POST", "/api/v1/spaces", {"key": f"bench-{uuid.uuid4()}", "name": "bench"})
    _, session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]})
    return server, port, space["id"], session["id"]


def machine():
    """What every result states about where it was measured."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    model = ""
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(), "memory_gib": round(memory, 1), "cpu": model,
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    args = command_line(database_url=(REQUIRED, "an existing database on the server to bench against"), binary=REQUIRED,
                        seconds=10, clients="1,8,32", bulk_requests=20,
                        repeat=(3, "runs of each point, alternating API and pgbench"),
                        sessions=(64, "work sessions the writes spread over"),
                        output=os.path.join(HERE, "results", "write_path.json"))

    url = args.database_url
    subprocess.run([args.binary, "migrate", "--database-url", url], check=True, capture_output=True)
    psql(url, open(os.path.join(HERE, "marker_batch.sql")).read())
    psql(url, open(os.path.join(HERE, "minimal_write.sql")).read())
    server, port, space_id, session_id = start_server(args.binary, "--database-url", url, "--db-pool-size", "32")
    try:
        sessions = [session_id] + sessions_in(port, space_id, args.sessions - 1)
        rows = []
        single = []
        for clients in [int(c) for c in args.clients.split(",")]:
            runs = []
            measures = {"api": functools.partial(post_markers, port, clients, args.seconds, sessions),
                        "same_sql": functools.partial(pgbench, url, clients, args.seconds, space_id, sessions),
                        "minimal": functools.partial(minimal, url, clients, args.seconds, space_id, sessions)}
            for round_number in range(args.repeat):
                # Which goes first swaps every round: the 20,000-30,000 rows a run writes are
                # flushed, and their tables vacuumed, during the run after it, which was always
                # the API's. (A checkpoint before each run was tried instead: the first change
                # to each page after it writes the whole page to the WAL, a cost of its own.)
                order = list(measures) if round_number % 2 == 0 else list(measures)[::-1]
                measured = {name: measures[name]() for name in order}
                api, same_sql, ceiling = measured["api"], measured["same_sql"], measured["minimal"]
                runs.append({"api": api, "pgbench_tps": same_sql, "ratio": api["requests_per_second"] / same_sql,
                             "minimal_tps": ceiling, "minimal_ratio": api["requests_per_second"] / ceiling})
            spread = lambda values: {"min": min(values), "median": statistics.median(values), "max": max(values)}
            rows.append({"clients": clients, "runs": runs,
                         "api_per_second": spread([r["api"]["requests_per_second"] for r in runs]),
                         "pgbench_tps": spread([r["pgbench_tps"] for r in runs]),
                         "ratio": spread([r["ratio"] for r in runs]),
                         "minimal_tps": spread([r["minimal_tps"] for r in runs]),
                         "minimal_ratio": spread([r["minimal_ratio"] for r in runs]),
                         "non_2xx": sum(r["api"]["non_2xx"] for r in runs)})
            if clients > 1:
                one = [post_markers(port, clients, args.seconds, session_id) for _ in range(args.repeat)]
                single.append({"clients": clients, "api_per_second": spread([r["requests_per_second"] for r in one]),
                               "p99_ms": spread([r["p99_ms"] for r in one]), "non_2xx": sum(r["non_2xx"] for r in one)})

        # Keyed creates at the most clients, each run next to a plain one.
        most = max(int(c) for c in args.clients.split(","))
        keyed = []
        for _ in range(args.repeat):
            plain = post_markers(port, most, args.seconds, sessions)
            with_keys = post_markers(port, most, args.seconds, sessions, keyed=True)
            keyed.append({"plain": plain["requests_per_second"], "keyed": with_keys["requests_per_second"],
                          "ratio": with_keys["requests_per_second"] / plain["requests_per_second"],
                          "non_2xx": plain["non_2xx"] + with_keys["non_2xx"]})

        # Bulk: rounds of requests, each next to the ceiling of storing the same facts.
        bulk = []
        for _ in range(args.repeat):
            api_ms = bulk_requests(port, session_id, args.bulk_requests)
            ceiling_ms = minimal_bulk(url, args.bulk_requests, space_id, sessions)
            bulk.append({"api_ms": api_ms, "p50_ms": percentile(api_ms, 50), "minimal_ms": ceiling_ms,
                         "ratio": ceiling_ms / percentile(api_ms, 50)})
        every_bulk = [t for b in bulk for t in b["api_ms"]]
        events = int(psql(url, "SELECT count(*) FROM eventlog.events"))
    finally:
        server.terminate()
        server.wait(timeout=30)

    result = {"machine": machine(), "seconds_per_run": args.seconds, "repeat": args.repeat, "sessions": args.sessions,
              "write_path": rows, "one_session": single,
              "keyed": {"clients": most, "runs": keyed,
                        "plain_per_second": spread([k["plain"] for k in keyed]),
                        "keyed_per_second": spread([k["keyed"] for k in keyed]),
                        "ratio": spread([k["ratio"] for k in keyed]), "non_2xx": sum(k["non_2xx"] for k in keyed)},
              "bulk_1000": {"requests_per_round": args.bulk_requests, "rounds": bulk,
                            "p50_ms": spread([b["p50_ms"] for b in bulk]),
                            "minimal_ms": spread([b["minimal_ms"] for b in bulk]),
                            "ratio": spread([b["ratio"] for b in bulk]),
                            "all_ms": {"min": min(every_bulk), "p50": percentile(every_bulk, 50),
                                       "p90": percentile(every_bulk, 90), "max": max(every_bulk)}},
              "events_in_log_after": events}
    save_results(result, args.output)

    print(f"machine: {result['machine']['cores']} cores, {result['machine']['memory_gib']} GiB; {args.repeat} runs of {args.seconds} s per point; "
          "median [min-max]")
    print(f"{'clients':>8} {'API markers/s':>22} {'pgbench tps':>22} {'API/pgbench':>20} {'minimal tps':>22} {'API/minimal':>20} {'non-2xx':>8}")
    fmt = lambda s, f: f"{s['median']:{f}} [{s['min']:{f}}-{s['max']:{f}}]"
    for row in rows:
        print(f"{row['clients']:>8} {fmt(row['api_per_second'], '.0f'):>22} {fmt(row['pgbench_tps'], '.0f'):>22} "
              f"{fmt(row['ratio'], '.2f'):>20} {fmt(row['minimal_tps'], '.0f'):>22} {fmt(row['minimal_ratio'], '.2f'):>20} "
              f"{row['non_2xx']:>8}")
        for run in row["runs"]:
            print(f"{'':>8}   run: API p50 {run['api']['p50_ms']:.1f} ms, p99 {run['api']['p99_ms']:.1f} ms")
    for row in single:
        print(f"into one work session, {row['clients']} clients: {fmt(row['api_per_second'], '.0f')} markers/s, "
              f"p99 {fmt(row['p99_ms'], '.1f')} ms")
    k = result["keyed"]
    print(f"with an Idempotency-Key each, {k['clients']} clients: {fmt(k['keyed_per_second'], '.0f')} markers/s against "
          f"{fmt(k['plain_per_second'], '.0f')} without, keyed / plain {fmt(k['ratio'], '.2f')}")
    b = result["bulk_1000"]
    print(f"bulk 1000 markers, {args.repeat} rounds of {b['requests_per_round']} requests: p50 {fmt(b['p50_ms'], '.1f')} ms; "
          f"the same facts in one statement {fmt(b['minimal_ms'], '.1f')} ms; minimal / API {fmt(b['ratio'], '.2f')}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
