#!/usr/bin/env python3
"""Read benchmark: `GET /markers?work_session_id=…` on a work session of 500 markers
(each with its details), 8 concurrent clients with wrk: requests per second and
latency percentiles, repeated. Next to it, in alternating runs, the ceiling: Postgres
building the same JSON itself (`json_agg` of the same rows in the same shape, through
pgbench with as many clients). Started by deploy/local/bench; prints and writes JSON.
"""
import json, os, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import machine, request, run_wrk, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def stamp(column):
    """A timestamptz as the wire writes it (`2026-11-22T01:24:59Z`); the colons come from
    chr(58), because pgbench reads `:name` in a script as a variable."""
    return f"""replace(to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24.MI.SS"Z"'), '.', chr(58))"""


def json_agg_sql(session):
    """The list's JSON built by Postgres: every field of every marker and its details, in order."""
    details = ", ".join(f"'{c}', d.{c}" for c in ("marker_id", "center_location_long", "center_location_cross",
                                                    "left_distance", "right_distance", "far_distance", "near_distance",
                                                    "long_size", "cross_size", "custom_props"))
    marker = ", ".join(f"'{c}', m.{c}" for c in ("id", "work_session_id", "label", "p1", "p2", "p3", "p4", "color",
                                                   "version", "meta", "custom_props", "calibrated_data"))
    return (f"SELECT json_agg(json_build_object({marker}, 'created_at', {stamp('m.created_at')}, "
            f"'updated_at', {stamp('m.updated_at')}, 'details', CASE WHEN d.marker_id IS NULL THEN NULL "
            f"ELSE json_build_object({details}, 'created_at', {stamp('d.created_at')}, "
            f"'updated_at', {stamp('d.updated_at')}) END) ORDER BY m.created_at, m.id) "
            f"FROM markers m LEFT JOIN marker_details d ON d.marker_id = m.id WHERE m.work_session_id = '{session}';\n")


def run_pgbench(url, script, clients, seconds):
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
                          "-T", str(seconds), "-f", script, url], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"tps = ([\d.]+)", out).group(1))


def main():
    args = command_line(database_url=REQUIRED, binary=REQUIRED, markers=500, clients=8, seconds=10, repeat=3,
                        output=os.path.join(HERE, "results", "reads.json"))

    subprocess.run([args.binary, "migrate", "--database-url", args.database_url], check=True, capture_output=True)
    server, port, _, session = start_server(args.binary, "--database-url", args.database_url)
    try:
        marker = {"work_session_id": session, "p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}
        status, created = request(port, "POST", "/api/v1/markers/bulk",
                                  {"markers": [dict(marker, label=f"m{i}") for i in range(args.markers)]})
        assert status == 201 and len(created) == args.markers, status
        url = f"http://127.0.0.1:{port}/api/v1/markers?work_session_id={session}"
        status, listed = request(port, "GET", url.split(str(port), 1)[1])
        assert status == 200 and len(listed) == args.markers
        body_bytes = len(json.dumps(listed, separators=(",", ":")))
        runs, ceiling = [], []
        with tempfile.TemporaryDirectory() as folder:
            script = os.path.join(folder, "json_agg.sql")
            with open(script, "w") as f:
                f.write(json_agg_sql(session))
            for _ in range(args.repeat):
                runs.append(run_wrk(url, args.clients, args.seconds))
                ceiling.append(run_pgbench(args.database_url, script, args.clients, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)

    spread = lambda key: {"min": min(r[key] for r in runs), "median": statistics.median(r[key] for r in runs),
                          "max": max(r[key] for r in runs)}
    result = {"machine": machine(), "markers": args.markers, "clients": args.clients, "seconds_per_run": args.seconds,
              "repeat": args.repeat, "body_bytes": body_bytes, "runs": runs,
              "requests_per_second": spread("requests_per_second"), "p50_ms": spread("p50_ms"), "p99_ms": spread("p99_ms"),
              "non_2xx": sum(r["non_2xx"] for r in runs),
              "json_agg_per_second": {"min": min(ceiling), "median": statistics.median(ceiling), "max": max(ceiling)},
              "ratios": [r["requests_per_second"] / c for r, c in zip(runs, ceiling)]}
    save_results(result, args.output)
    r = result
    print(f"list of {args.markers} markers ({body_bytes / 1024:.0f} KiB), {args.clients} clients, {args.repeat} x {args.seconds} s: "
          f"{r['requests_per_second']['median']:.0f} requests/s [{r['requests_per_second']['min']:.0f}-{r['requests_per_second']['max']:.0f}], "
          f"p99 {r['p99_ms']['median']:.1f} ms [{r['p99_ms']['min']:.1f}-{r['p99_ms']['max']:.1f}], non-2xx {r['non_2xx']}")
    print(f"Postgres building the same JSON (json_agg, pgbench, {args.clients} clients): "
          f"{r['json_agg_per_second']['median']:.0f}/s; API / that, each run: {', '.join(f'{x:.2f}' for x in r['ratios'])}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
