#!/usr/bin/env python3
"""What verifiable history costs (issue 49), in one run on one machine:

- the write path with signing and checkpoints vs without: markers created over HTTP by
  two instances side by side, one with a history key (`--signing-key-file`, every
  append signed in its transaction, a checkpoint a second) and one without, each on a
  database of its own, in alternation; the target is a ratio of at least 0.95. Each run
  also samples how many of its database's backends wait on a lock (one tenant's appends
  queue on its log's row until they commit) and how many are active, and the CPU the
  server and Postgres used per marker;
- checkpoint lag: from an event's append (its `recorded_at`) to the first signed
  checkpoint that covers it, over every event the signed runs wrote (target p99 < 2 s);
- proof answers on a log of 10^6 events: a tenant's log filled with synthetic events in
  SQL, covered by the checkpointer (how fast it signs a backlog is a figure too), then
  inclusion and consistency proofs over HTTP at random sizes (target p99 < 10 ms).

Prints a table and writes JSON; started by `deploy/local/bench history`.
"""
import http.client, os, random, statistics, subprocess, sys, tempfile, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import (  # noqa: E402
    free_port, fresh_database, machine, metric, percentile, post_markers, psql, save_results, sessions_in, start_server)
from command_line import command_line, REQUIRED  # noqa: E402


def deployment(kind):
    """A deployment name of its own for each server and run: Redis witnesses each log's
    newest checkpoint under it, and another run's log of the same name is not this one."""
    return f"bench-{kind}-{uuid.uuid4().hex[:8]}"


def sample_lock_waits(admin_url, database, seconds):
    """Starts sampling, every 100 ms for `seconds`, how many of `database`'s backends wait
    on a lock, how many of those on a row's (`transactionid` or `tuple`: a creates-only
    load contends for no row but its tenant's `tenant_logs` one), and how many are active,
    in one backend of its own; `lock_waits` reads the means when it ends."""
    samples = max(1, int(seconds * 10))
    sql = f"""
        DO $$
        DECLARE waiting bigint := 0; on_rows bigint := 0; active bigint := 0; w bigint; r bigint; a bigint;
        BEGIN
            FOR i IN 1..{samples} LOOP
                PERFORM pg_stat_clear_snapshot();
                SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'),
                       count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')),
                       count(*) FILTER (WHERE state = 'active')
                INTO w, r, a FROM pg_stat_activity WHERE datname = '{database}';
                waiting := waiting + w; on_rows := on_rows + r; active := active + a;
                PERFORM pg_sleep(0.1);
            END LOOP;
            RAISE NOTICE 'lock_waits % % %', waiting::float / {samples}, on_rows::float / {samples},
                active::float / {samples};
        END $$"""
    return subprocess.Popen(["psql", admin_url, "-qtAc", sql], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def lock_waits(sampler):
    """The means `sample_lock_waits` found: backends waiting on a lock, of those on a row's,
    backends active."""
    _, err = sampler.communicate(timeout=120)
    for line in err.splitlines():
        if "lock_waits" in line:
            waiting, on_rows, active = line.rsplit(" ", 3)[-3:]
            return float(waiting), float(on_rows), float(active)
    return None, None, None


def cpu_seconds(pids):
    """User and system CPU seconds the processes `pids` have used (those gone count 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def append_counters(port):
    """The server's appends so far: (transactions, requests), from its /metrics; their
    ratio over a run is the mean group of requests one append transaction carried."""
    return metric(port, "roboscope_append_transactions_total"), metric(port, "roboscope_append_requests_total")


def postgres_pids():
    """Every process of the Postgres server (backends come and go; each run counts those
    alive at its end, and a backend of either database lives as long as its pool)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as comm:
                    if comm.read().strip() == "postgres":
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def write_path(args, key_file):
    urls = {mode: fresh_database(args.admin_url, f"roboscope_bench_history_{mode}") for mode in ("signed", "unsigned")}
    servers = {}
    try:
        for mode, url in urls.items():
            extra = ["--signing-key-file", key_file, "--deployment-name", deployment("write")] if mode == "signed" else []
            servers[mode] = start_server(args.binary, "--database-url", url, "--db-pool-size", "32",
                                         "--ws-port", str(free_port()), *extra)
        sessions = {mode: [server[3]] + sessions_in(server[1], server[2], args.sessions - 1)
                    for mode, server in servers.items()}
        runs = {mode: [] for mode in urls}
        # Each pair of runs in the other order than the last: the log grows and the machine
        # drifts, and neither mode should always go first.
        for repeat in range(args.repeat):
            for mode in (list(urls) if repeat % 2 == 0 else list(urls)[::-1]):
                sampler = sample_lock_waits(args.admin_url, urls[mode].rsplit("/", 1)[1], args.seconds)
                database = postgres_pids()
                before = (cpu_seconds([servers[mode][0].pid]), cpu_seconds(database))
                appends_before = append_counters(servers[mode][1])
                result = post_markers(servers[mode][1], args.clients, args.seconds, sessions[mode])
                after = (cpu_seconds([servers[mode][0].pid]), cpu_seconds(database))
                appends = [now - then for now, then in zip(append_counters(servers[mode][1]), appends_before)]
                waiting, on_rows, active = lock_waits(sampler)
                requests = max(1, result["requests_per_second"] * args.seconds)
                runs[mode].append({"per_second": result["requests_per_second"], "p99_ms": result["p99_ms"],
                                   "non_2xx": result["non_2xx"], "lock_waiters": waiting, "row_lock_waiters": on_rows,
                                   "active_backends": active,
                                   "server_cpu_us": (after[0] - before[0]) / requests * 1e6,
                                   "postgres_cpu_us": (after[1] - before[1]) / requests * 1e6,
                                   "requests_per_append": appends[1] / max(1, appends[0])})
        # Every event written is covered by a checkpoint within a few intervals.
        size = int(psql(urls["signed"], "SELECT coalesce(max(size), 0) FROM eventlog.tenant_logs"))
        deadline = time.time() + 60
        while time.time() < deadline and int(psql(urls["signed"], "SELECT coalesce(max(size), 0) FROM eventlog.checkpoints")) < size:
            time.sleep(0.2)
        lag = psql(urls["signed"], """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), percentile_cont(0.99) WITHIN GROUP (ORDER BY lag),
                   max(lag), count(*)
            FROM (SELECT extract(epoch FROM c.signed_at - e.recorded_at) AS lag
                  FROM eventlog.events e
                  JOIN LATERAL (SELECT signed_at FROM eventlog.checkpoints c
                                WHERE c.tenant = e.tenant AND c.size >= e.tenant_seq ORDER BY c.size LIMIT 1) c ON true) x
        """).split("|")
        signatures = int(psql(urls["signed"], "SELECT count(*) FROM eventlog.append_signatures"))
    finally:
        for process, *_ in servers.values():
            process.terminate()
            process.wait(timeout=30)
    median = lambda mode, key: statistics.median(run[key] for run in runs[mode])
    modes = {mode: {"per_second": median(mode, "per_second"), "p99_ms": median(mode, "p99_ms"),
                    "non_2xx": sum(run["non_2xx"] for run in runs[mode]),
                    "lock_waiters": statistics.median(run["lock_waiters"] or 0 for run in runs[mode]),
                    "row_lock_waiters": statistics.median(run["row_lock_waiters"] or 0 for run in runs[mode]),
                    "active_backends": statistics.median(run["active_backends"] or 0 for run in runs[mode]),
                    "server_cpu_us": statistics.median(run["server_cpu_us"] for run in runs[mode]),
                    "postgres_cpu_us": statistics.median(run["postgres_cpu_us"] for run in runs[mode]),
                    "requests_per_append": statistics.median(run["requests_per_append"] for run in runs[mode]),
                    "runs": runs[mode]} for mode in urls}
    pairs = [signed["per_second"] / unsigned["per_second"] for signed, unsigned in zip(runs["signed"], runs["unsigned"])]
    cpu = lambda run: run["server_cpu_us"] + run["postgres_cpu_us"]
    cpu_pairs = [cpu(unsigned) / cpu(signed) for signed, unsigned in zip(runs["signed"], runs["unsigned"])]
    return {"modes": modes, "pair_ratios": pairs, "signed_over_unsigned": statistics.median(pairs),
            "cpu_unsigned_over_signed": statistics.median(cpu_pairs),
            "checkpoint_lag_s": {"p50": float(lag[0]), "p99": float(lag[1]), "max": float(lag[2]),
                                 "events": int(lag[3])},
            "append_signatures": signatures}


def proofs(args, key_file):
    url = fresh_database(args.admin_url, "roboscope_bench_history_proofs")
    subprocess.run([args.binary, "migrate", "--database-url", url], check=True, capture_output=True)
    # A log of `events` synthetic events of the default tenant (the one a server without
    # authentication serves), their digests made up: the proofs never read the events.
    started = time.time()
    psql(url, f"""
        ALTER TABLE eventlog.events DISABLE TRIGGER USER;
        INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata, hash,
                                     tenant, tenant_seq)
        SELECT gen_random_uuid(), 'space', gen_random_uuid(), 1, 'space.created', '{{}}', '{{}}',
               sha256(n::text::bytea), 'default', n
        FROM generate_series(1, {args.events}) AS n;
        ALTER TABLE eventlog.events ENABLE TRIGGER USER;
        INSERT INTO eventlog.tenant_logs (tenant, size) VALUES ('default', {args.events});
    """)
    filled = time.time() - started
    server = start_server(args.binary, "--database-url", url, "--signing-key-file", key_file,
                          "--deployment-name", deployment("proofs"), "--checkpoint-interval", "0.05",
                          "--ws-port", str(free_port()))
    try:
        started = time.time()
        while int(psql(url, "SELECT coalesce(max(size), 0) FROM eventlog.checkpoints")) < args.events:
            if time.time() - started > 1800:
                raise RuntimeError("the checkpointer did not cover the log in 30 minutes")
            time.sleep(0.5)
        covered = time.time() - started
        port = server[1]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        latencies = {"inclusion": [], "consistency": []}
        rng = random.Random(49)
        for index in range(args.proofs * 2):
            size = rng.randint(1, args.events)
            if index % 2 == 0:
                kind, path = "inclusion", f"/api/v1/proofs/inclusion?tenant_seq={rng.randint(1, size)}&tree_size={size}"
            else:
                kind, path = "consistency", f"/api/v1/proofs/consistency?from={rng.randint(1, size)}&to={size}"
            began = time.perf_counter()
            connection.request("GET", path)
            reply = connection.getresponse()
            body = reply.read()
            latencies[kind].append((time.perf_counter() - began) * 1000)
            if reply.status != 200:
                raise RuntimeError(f"{path}: {reply.status} {body[:200]!r}")
        nodes = int(psql(url, "SELECT count(*) FROM eventlog.merkle_nodes"))
        table_bytes = int(psql(url, "SELECT pg_total_relation_size('eventlog.merkle_nodes')"))
    finally:
        server[0].terminate()
        server[0].wait(timeout=30)
    summary = {kind: {"p50_ms": percentile(values, 50), "p99_ms": percentile(values, 99), "max_ms": max(values),
                      "requests": len(values)} for kind, values in latencies.items()}
    return {"events": args.events, "fill_seconds": filled, "checkpointer_seconds": covered,
            "leaves_per_second": args.events / covered, "merkle_nodes": nodes, "merkle_nodes_bytes": table_bytes,
            "proofs": summary}


def main():
    args = command_line(admin_url=(REQUIRED, "a database URL of the server; fresh databases are made next to it"),
                        binary=REQUIRED, seconds=4, repeat=20, clients=16, sessions=64,
                        events=(1_000_000, "the size of the log the proofs are asked of"),
                        proofs=(1000, "requests of each kind"), output=REQUIRED)

    with tempfile.TemporaryDirectory() as folder:
        key_file = os.path.join(folder, "history-key")
        subprocess.run([args.binary, "keygen", "--out", key_file, "--deployment-name", "bench"], check=True,
                       capture_output=True)
        result = {"machine": machine(), "seconds_per_run": args.seconds, "repeat": args.repeat,
                  "clients": args.clients, "write_path": write_path(args, key_file), "proofs": proofs(args, key_file)}
    save_results(result, args.output)
    write, proof = result["write_path"], result["proofs"]
    print(f"write path, {args.clients} clients: signed {write['modes']['signed']['per_second']:.0f}/s "
          f"(p99 {write['modes']['signed']['p99_ms']:.1f} ms), unsigned {write['modes']['unsigned']['per_second']:.0f}/s "
          f"(p99 {write['modes']['unsigned']['p99_ms']:.1f} ms); median of the pairs' ratios "
          f"{write['signed_over_unsigned']:.3f} ({', '.join(f'{r:.2f}' for r in write['pair_ratios'])}; target >= 0.95)")
    print("  backends of the database waiting on a lock (of those on a row's: the tenant's log) / active, "
          "median of the runs' means: "
          + ", ".join(f"{mode} {figures['lock_waiters']:.2f} ({figures['row_lock_waiters']:.2f}) / "
                      f"{figures['active_backends']:.2f}"
                      for mode, figures in write["modes"].items()))
    print("  CPU per marker, median of the runs: "
          + ", ".join(f"{mode} server {figures['server_cpu_us']:.0f} us + Postgres {figures['postgres_cpu_us']:.0f} us"
                      for mode, figures in write["modes"].items()))
    print(f"  CPU per marker, unsigned / signed, median of the pairs: {write['cpu_unsigned_over_signed']:.3f}")
    print("  requests per append transaction, median of the runs: "
          + ", ".join(f"{mode} {figures['requests_per_append']:.2f}" for mode, figures in write["modes"].items()))
    lag = write["checkpoint_lag_s"]
    print(f"checkpoint lag over {lag['events']} events: p50 {lag['p50']:.2f} s, p99 {lag['p99']:.2f} s, "
          f"max {lag['max']:.2f} s (target p99 < 2 s)")
    print(f"log of {proof['events']} events: filled in {proof['fill_seconds']:.1f} s, checkpointed in "
          f"{proof['checkpointer_seconds']:.1f} s ({proof['leaves_per_second']:.0f} leaves/s), "
          f"{proof['merkle_nodes']} stored subtrees ({proof['merkle_nodes_bytes'] / 2**20:.0f} MiB)")
    for kind, figures in proof["proofs"].items():
        print(f"  {kind} proofs: p50 {figures['p50_ms']:.2f} ms, p99 {figures['p99_ms']:.2f} ms, "
              f"max {figures['max_ms']:.2f} ms over {figures['requests']} (target p99 < 10 ms)")


if __name__ == "__main__":
    main()
