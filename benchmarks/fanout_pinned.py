#!/usr/bin/env python3
"""Fan-out latency with the server and the load generator on cores of their own (issue
51): `roboscope serve` pinned to one core (`taskset`), gateway-load to the other, so the
latency measured is the server's and not the two fighting over the same core. Postgres
and Redis are not pinned (they run where the scheduler puts them).

Scenarios (each `--runs` times, every run reported, since the target holds in every run):
1,000 subscribers of one work session at 100 writes/s (target p99 < 10 ms), and 10,000
at 10 writes/s (target p99 < 50 ms). Started by deploy/local/bench (`pinned`); prints a
line per run and writes JSON.
"""
import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gateway import load  # noqa: E402
from write_path import free_port, machine, ready, request  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def main():
    args = command_line(binary=REQUIRED, database_url=(REQUIRED, "a fresh database"), load=(REQUIRED, "gateway-load"),
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
        for scenario in args.scenarios.split(","):
            subscribers, rate, target = (float(part) for part in scenario.split(":"))
            runs = []
            for number in range(args.runs):
                session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]})[1]["id"]
                arguments = dict(mode="gateway", ws_port=ws_port, http_port=port, session=session,
                                 server_pid=server.pid, connections=int(subscribers), threads=1, rate=rate,
                                 seconds=args.seconds)
                run = load(args.load, pin=args.load_core, **arguments)
                runs.append({key: run.get(key) for key in (
                    "connections_opened", "writes", "deliveries_expected", "deliveries_matched", "latency_ms_p50",
                    "latency_ms_p99", "latency_ms_max", "server_cpu_seconds")})
                print(f"pinned: {int(subscribers):,} subscribers at {rate:g} writes/s, run {number + 1}: p50 "
                      f"{run['latency_ms_p50']:.1f} ms, p99 {run['latency_ms_p99']:.1f} ms (target < {target:g}), "
                      f"{run['deliveries_matched']}/{run['deliveries_expected']} delivered", flush=True)
            results.append({"subscribers": int(subscribers), "writes_per_second": rate, "target_p99_ms": target,
                            "runs": runs, "worst_p99_ms": max(run["latency_ms_p99"] for run in runs)})
    finally:
        server.terminate()
        server.wait(timeout=30)
    with open(args.output, "w") as out:
        json.dump({"machine": machine(), "seconds": args.seconds, "server_core": args.server_core,
                   "load_core": args.load_core, "scenarios": results}, out, indent=2)


if __name__ == "__main__":
    main()
