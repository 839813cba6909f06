#!/usr/bin/env python3
"""Fan-out latency with the server and the load generator on cores of their own (issue
51): `roboscope serve` pinned to one core (`taskset`), gateway-load to the other, so the
latency measured is the server's and not the two fighting over the same core. Postgres
and Redis are not pinned (they run where the scheduler puts them).

Scenarios (each `--runs` times, every run reported, since the target holds in every run):
1,000 subscribers of one work session at 100 writes/s (target p99 < 10 ms), and 10,000
at 10 writes/s (target p99 < 50 ms). With `--broadcast`, each run is paired with one of
the minimal broadcaster (benchmarks/minimal_broadcast.c: epoll, one writev of shared
pre-framed bytes per subscriber, nothing stored) pinned to the same core with the same
subscribers, writes and frames per write, the pair's order swapped every run: the floor
of this box for the shape, in the same run. Started by deploy/local/bench (`pinned`);
prints a line per run and writes JSON.
"""
import functools, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gateway import load  # noqa: E402
from write_path import free_port, machine, ready, request, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


FIGURES = ("connections_opened", "writes", "deliveries_expected", "deliveries_matched", "latency_ms_p50",
           "latency_ms_p99", "latency_ms_max", "server_cpu_seconds")


def minimal_run(args, subscribers, rate):
    """One run of the minimal broadcaster, started for it on the server's core."""
    port = free_port()
    broadcaster = subprocess.Popen(["taskset", "-c", args.server_core, args.broadcast, str(port), "2"],
                                   stderr=subprocess.DEVNULL)
    try:
        ready(port, path=None)
        return load(args.load, pin=args.load_core, mode="reference", ws_port=port, ws_path="/ws", http_port=port,
                    session="00000000-0000-4000-8000-000000000000", server_pid=broadcaster.pid,
                    connections=subscribers, threads=1, rate=rate, seconds=args.seconds)
    finally:
        broadcaster.terminate()
        broadcaster.wait(timeout=30)


def main():
    args = command_line(binary=REQUIRED, database_url=(REQUIRED, "a fresh database"), load=(REQUIRED, "gateway-load"),
                        broadcast=(None, "the minimal broadcaster, built: measured beside the server when given"),
                        scenarios=("1000:100:10,10000:10:50", "subscribers:writes per second:p99 target in ms, ..."),
                        seconds=10.0, runs=5, server_core="0", load_core="1", output=REQUIRED)

    port, ws_port = free_port(), free_port()
    server = subprocess.Popen(["taskset", "-c", args.server_core, args.binary, "serve", "--database-url",
                               args.database_url, "--host", "127.0.0.1", "--http-port", str(port), "--ws-port",
                               str(ws_port), "--log-level", "error", "--ws-max-connections-per-client", "50000"])
    results = []
    try:
        ready(port)
        _, space = request(port, "POST", "/api/v1/spaces", {"key": f"pinned-{time.time_ns()}", "name": "pinned"})

        def roboscope_run(subscribers, rate):
            session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]})[1]["id"]
            return load(args.load, pin=args.load_core, mode="gateway", ws_port=ws_port, http_port=port,
                        session=session, server_pid=server.pid, connections=subscribers, threads=1, rate=rate,
                        seconds=args.seconds)

        for scenario in args.scenarios.split(","):
            subscribers, rate, target = (float(part) for part in scenario.split(":"))
            runs, floor = [], []
            # The pair's order swaps every run: the service first, then the broadcaster.
            pair = [(runs, roboscope_run)] + ([(floor, functools.partial(minimal_run, args))] if args.broadcast else [])
            for number in range(args.runs):
                for kept, measure in (pair if number % 2 == 0 else reversed(pair)):
                    kept.append({key: value for key, value in measure(int(subscribers), rate).items()
                                 if key in FIGURES})
                run = runs[-1]
                beside = f"; minimal broadcaster p99 {floor[-1]['latency_ms_p99']:.1f} ms" if floor else ""
                print(f"pinned: {int(subscribers):,} subscribers at {rate:g} writes/s, run {number + 1}: p50 "
                      f"{run['latency_ms_p50']:.1f} ms, p99 {run['latency_ms_p99']:.1f} ms (target < {target:g}), "
                      f"{run['deliveries_matched']}/{run['deliveries_expected']} delivered{beside}", flush=True)
            result = {"subscribers": int(subscribers), "writes_per_second": rate, "target_p99_ms": target,
                      "runs": runs, "worst_p99_ms": max(run["latency_ms_p99"] for run in runs)}
            if floor:
                result["minimal_runs"] = floor
                result["minimal_worst_p99_ms"] = max(run["latency_ms_p99"] for run in floor)
            results.append(result)
    finally:
        server.terminate()
        server.wait(timeout=30)
    save_results({"machine": machine(), "seconds": args.seconds, "server_core": args.server_core,
                  "load_core": args.load_core, "scenarios": results}, args.output)


if __name__ == "__main__":
    main()
