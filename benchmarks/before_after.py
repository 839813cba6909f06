#!/usr/bin/env python3
"""Before and after (issue 45: "the write path and the fan-out benchmarks do not regress
by more than 5%"): the same measurements against this build and a baseline build (a
release build of an earlier commit, with its own schema/), alternating which goes first
in each round so that the drift of the shared machine falls on both:

- the write path: `POST /markers` from 32 wrk clients across 64 work sessions;
- fan-out latency: 1,000 subscribers of one work session while writes come at 100 a
  second (gateway-load), p99 delivery latency;
- fan-out throughput: the same subscribers, four writers flat out, messages a second.

Each build serves from a fresh database of its own. Reported: the medians and the
after/before ratios (targets: write path and fan-out throughput >= 0.95, fan-out p99
<= 1.05). Started by deploy/local/bench (`beforeafter`, with ROBOSCOPE_BASELINE_BINARY
and ROBOSCOPE_BASELINE_SCHEMA); prints a table and writes JSON.
"""
import json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gateway import load  # noqa: E402
from write_path import free_port, fresh_database, machine, post_markers, save_results, sessions_in, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def serve(binary, schema, admin_url, name):
    url = fresh_database(admin_url, f"roboscope_bench_before_after_{name}")
    ws_port = free_port()
    extra = ["--schema-dir", schema] if schema else []
    server, port, space, session = start_server(binary, "--database-url", url, "--ws-port", str(ws_port),
                                                "--ws-max-connections-per-client", "50000", *extra)
    return {"server": server, "port": port, "ws_port": ws_port, "session": session,
            "sessions": [session] + sessions_in(port, space, 63)}


def measure(build, args):
    write = post_markers(build["port"], 32, args.seconds, build["sessions"])["requests_per_second"]
    common = dict(mode="gateway", ws_port=build["ws_port"], http_port=build["port"], session=build["session"],
                  server_pid=build["server"].pid, connections=args.subscribers, threads=2)
    latency = load(args.load, rate=args.rate, seconds=args.seconds, **common)
    flat = load(args.load, rate=0, writers=4, seconds=min(args.seconds, 10), **common)
    return {"writes_per_second": write, "fanout_p99_ms": latency["latency_ms_p99"],
            "fanout_messages_per_second": flat["messages_per_second"]}


def main():
    args = command_line(admin_url=REQUIRED, binary=REQUIRED, baseline_binary=REQUIRED, baseline_schema=REQUIRED,
                        baseline_name=("baseline", "what the baseline is (a commit)"), load=(REQUIRED, "gateway-load"),
                        subscribers=1000, rate=100.0, seconds=10, repeat=3, output=REQUIRED)

    builds = {}
    try:
        builds["after"] = serve(args.binary, None, args.admin_url, "after")
        builds["before"] = serve(args.baseline_binary, args.baseline_schema, args.admin_url, "before")
        runs = {"after": [], "before": []}
        for round in range(args.repeat):
            order = ["after", "before"] if round % 2 == 0 else ["before", "after"]
            for name in order:
                runs[name].append(measure(builds[name], args))
                print(f"round {round + 1} {name}: {runs[name][-1]}", file=sys.stderr)
    finally:
        for build in builds.values():
            build["server"].terminate()
            build["server"].wait(timeout=30)
    median = {name: {key: statistics.median(run[key] for run in results) for key in results[0]}
              for name, results in runs.items()}
    ratios = {key: median["after"][key] / median["before"][key] for key in median["after"]}
    result = {"machine": machine(), "baseline": args.baseline_name, "subscribers": args.subscribers,
              "rate": args.rate, "seconds": args.seconds, "repeat": args.repeat, "runs": runs, "median": median,
              "ratio": ratios}
    save_results(result, args.output)
    print(json.dumps({"ratio": ratios}))


if __name__ == "__main__":
    sys.exit(main())
