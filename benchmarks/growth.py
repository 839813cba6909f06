#!/usr/bin/env python3
"""Cost growth: how write latency and rebuild time change as the log grows. For each
size (10^4, 10^5, 10^6 events by default) a fresh database gets a generated log of
that size (investigations.py's generator), `roboscope rebuild` is timed, then markers
are created over HTTP by 8 clients with wrk (requests per second, p50, p99).
Started by deploy/local/bench; prints a table and writes JSON.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from investigations import generated_logs, timed  # noqa: E402
from write_path import machine, post_markers, psql, start_server  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--admin-url", required=True, help="a database URL of the server; benches make their own databases")
    parser.add_argument("--binary", required=True)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--output", default=os.path.join(HERE, "results", "growth.json"))
    args = parser.parse_args()

    points = []
    for url, events in generated_logs(args.admin_url, args.binary, "growth", args.sizes):
        rebuild_seconds, _ = timed([args.binary, "rebuild", "--database-url", url])
        psql(url, "CHECKPOINT")
        server, port, _, session = start_server(args.binary, "--database-url", url, "--db-pool-size", str(args.clients))
        try:
            writes = post_markers(port, args.clients, args.seconds, session)
        finally:
            server.terminate()
            server.wait(timeout=30)
        points.append({"events": events, "rebuild_seconds": rebuild_seconds, "rebuild_events_per_second": events / rebuild_seconds,
                       "writes": writes})
        print(f"{events:>9} events: rebuild {rebuild_seconds:7.2f} s ({events / rebuild_seconds:,.0f} events/s); "
              f"writes at {args.clients} clients {writes['requests_per_second']:.0f}/s, p50 {writes['p50_ms']:.1f} ms, "
              f"p99 {writes['p99_ms']:.1f} ms", flush=True)

    result = {"machine": machine(), "clients": args.clients, "seconds_per_run": args.seconds, "points": points}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
