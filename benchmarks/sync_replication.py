#!/usr/bin/env python3
"""What strict synchronous replication costs the write path (issue 48), on
deploy/local/cluster: markers created over HTTP by one `serve` instance writing to the
cluster's primary, next to pgbench running the minimal transaction that stores the same
facts (benchmarks/minimal_write.pgbench), each twice in alternation:

- sync: as the service runs, every commit waits for both synchronous standbys' flush;
- single node: the same instance, primary and disk with `synchronous_commit = local`
  (set per connection in the database URL), which is what one Postgres without a
  standby does.

The same hardware and data either way, so the ratios say what the standby's round trip
and flush cost. Prints a table and writes JSON; started by `deploy/local/bench failover`.
"""
import os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Failover"))
sys.path.insert(0, HERE)
# After sys.path names Tests/Failover, where these live.
from cluster_support import binary, cluster  # noqa: E402
from write_path import free_port, machine, minimal, post_markers, psql, save_results, sessions_in, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

LOCAL_COMMIT = "options=-c%20synchronous_commit%3Dlocal"


def storage(state):
    """Where the nodes' data live: a node's file system, and what holds its image (the
    cluster's state folder: tmpfs, or a disk)."""
    def kind(path):
        return subprocess.run(["findmnt", "-no", "FSTYPE", "-T", path], capture_output=True, text=True).stdout.strip()
    node, holder = kind(os.path.join(state, "pg1")), kind(state)
    return f"{node} images on {holder}" if os.path.ismount(os.path.join(state, "pg1")) else holder


def main():
    args = command_line(seconds=10, clients=16, repeat=3, sessions=64, output=REQUIRED)

    env = cluster("up", attempts=2)
    url = env["DATABASE_URL"]
    urls = {"sync": url, "single_node": url + ("&" if "?" in url else "?") + LOCAL_COMMIT}
    assert psql(urls["single_node"], "SHOW synchronous_commit") == "local", "the URL's options were not applied"
    psql(url, open(os.path.join(HERE, "marker_batch.sql")).read())
    psql(url, open(os.path.join(HERE, "minimal_write.sql")).read())

    servers = {}
    try:
        # Two instances side by side: each its own WebSocket port.
        for mode, mode_url in urls.items():
            servers[mode] = start_server(binary(), "--database-url", mode_url, "--db-pool-size", "32",
                                         "--ws-port", str(free_port()))
        _, port, space, session = servers["sync"]
        sessions = [session] + sessions_in(port, space, args.sessions - 1)
        psql(url, "DROP TABLE IF EXISTS bench.sessions; CREATE TABLE bench.sessions (n int PRIMARY KEY, id uuid NOT NULL);"
             + "".join(f"INSERT INTO bench.sessions VALUES ({n}, '{id}');" for n, id in enumerate(sessions, 1)))
        runs = {mode: [] for mode in urls}
        for _ in range(args.repeat):
            for mode, mode_url in urls.items():
                api = post_markers(servers[mode][1], args.clients, args.seconds, sessions)
                ceiling = minimal(mode_url, args.clients, args.seconds, space, sessions)
                runs[mode].append({"api_per_second": api["requests_per_second"], "p99_ms": api["p99_ms"],
                                   "non_2xx": api["non_2xx"], "minimal_tps": ceiling,
                                   "ratio": api["requests_per_second"] / ceiling})
    finally:
        for process, *_ in servers.values():
            process.terminate()
            process.wait(timeout=30)

    median = lambda mode, key: statistics.median(run[key] for run in runs[mode])
    modes = {mode: {key: median(mode, key) for key in ("api_per_second", "p99_ms", "minimal_tps", "ratio")}
             | {"non_2xx": sum(run["non_2xx"] for run in runs[mode]), "runs": runs[mode]} for mode in urls}
    result = {"machine": machine(), "seconds_per_run": args.seconds, "repeat": args.repeat, "clients": args.clients,
              "storage": storage(env["STATE_DIR"]), "modes": modes,
              "sync_over_single_api": modes["sync"]["api_per_second"] / modes["single_node"]["api_per_second"],
              "sync_over_single_minimal": modes["sync"]["minimal_tps"] / modes["single_node"]["minimal_tps"]}
    save_results(result, args.output)
    print(f"{args.clients} clients, {args.repeat} runs of {args.seconds} s each way, nodes on {result['storage']}; medians")
    print(f"{'':>12} {'API markers/s':>14} {'API p99 ms':>11} {'minimal tps':>12} {'API/minimal':>12} {'non-2xx':>8}")
    for mode, m in modes.items():
        print(f"{mode:>12} {m['api_per_second']:>14.0f} {m['p99_ms']:>11.1f} {m['minimal_tps']:>12.0f} "
              f"{m['ratio']:>12.2f} {m['non_2xx']:>8}")
    print(f"sync / single node: API {result['sync_over_single_api']:.2f}, minimal {result['sync_over_single_minimal']:.2f}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
