#!/usr/bin/env python3
"""Cost growth: what the hot paths cost as the log grows. For each size (10^4, 10^6 and
10^7 events by default) a fresh database gets a generated log of that size
(investigations.py's generator, rows written in SQL), and then, on that log:

- `roboscope rebuild`, timed;
- writes: markers created over HTTP by 8 clients with wrk (requests/s, p50, p99);
- fan-out: 100 WebSocket subscribers of one work session while markers are written
  into it at 50/s (gateway-load; p50, p99, max, every delivery counted), three runs per
  size (`--repeat`): a load this machine carries with room to spare, so that what
  changes between sizes is the log;
- catch-up: the last 10,000 events of one of the log's work sessions read through
  GET /api/v1/changes in pages of 1,000 (events/s);
- the hot statements of hot_plans.py under EXPLAIN (ANALYZE, BUFFERS): median time and
  plan (with --plans).

Started by deploy/local/bench; prints a table and writes JSON.
"""
import http.client, json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from investigations import generated_logs, timed  # noqa: E402
from hot_plans import head_and_cursor, measure  # noqa: E402
from write_path import free_port, machine, post_markers, psql, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

# A work session of the generated log (investigations.GENERATE names them so).
LOG_SESSION_SQL = "md5('session' || 3)::uuid"


def fan_out(load, port, ws_port, session, server, subscribers, rate, seconds):
    out = subprocess.run([load, "--mode", "gateway", "--ws-port", str(ws_port), "--http-port", str(port),
                          "--connections", str(subscribers), "--session", session, "--rate", str(rate),
                          "--seconds", str(seconds), "--server-pid", str(server.pid)],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {key: r[key] for key in ("writes_per_second", "latency_ms_p50", "latency_ms_p99", "latency_ms_max",
                                    "deliveries_matched", "deliveries_expected")}


def catch_up(url, port, events):
    """Events/s of reading a work session's last `events` events through the changes feed."""
    session = psql(url, f"SELECT {LOG_SESSION_SQL}")
    since = int(psql(url, f"""SELECT coalesce((SELECT position FROM eventlog.events WHERE work_session_id = '{session}'
                                 ORDER BY position DESC OFFSET {events} LIMIT 1), 0)"""))
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    read, started = 0, time.perf_counter()
    while True:
        connection.request("GET", f"/api/v1/changes?topic=work_session:{session}&since={since}&limit=1000")
        reply = connection.getresponse()
        page = json.loads(reply.read())
        assert reply.status == 200, reply.status
        read += len(page["data"])
        since = page["next_since"]
        if not page["has_more"]:
            break
    seconds = time.perf_counter() - started
    connection.close()
    return {"events": read, "events_per_second": read / seconds}


def hot_statements(url):
    psql(url, "VACUUM ANALYZE eventlog.events")
    return measure(url, head_and_cursor(url))


def main():
    args = command_line(admin_url=(REQUIRED, "a database URL of the server; benches make their own databases"),
                        binary=REQUIRED, load=(None, "the gateway-load binary (fan-out is skipped without it)"),
                        sizes="10000,1000000,10000000", clients=8, seconds=10, subscribers=100, rate=50.0,
                        catch_up_events=10000, repeat=(3, "fan-out runs per size"),
                        plans=(False, "also EXPLAIN ANALYZE the hot statements at each size"),
                        output=os.path.join(HERE, "results", "growth.json"))

    points = []
    for url, events in generated_logs(args.admin_url, args.binary, "growth", args.sizes):
        rebuild_seconds, _ = timed([args.binary, "rebuild", "--database-url", url])
        psql(url, "VACUUM ANALYZE")
        psql(url, "CHECKPOINT")
        point = {"events": events, "rebuild_seconds": rebuild_seconds, "rebuild_events_per_second": events / rebuild_seconds}
        ws_port = free_port()
        server, port, _, session = start_server(args.binary, "--database-url", url, "--db-pool-size", str(args.clients),
                                                "--ws-port", str(ws_port))
        try:
            point["catch_up"] = catch_up(url, port, args.catch_up_events)
            if args.load:
                runs = [fan_out(args.load, port, ws_port, session, server, args.subscribers, args.rate, args.seconds)
                        for _ in range(args.repeat)]
                point["fan_out_runs"] = runs
                # The run with the median p99 stands for the size; the report gives the spread.
                point["fan_out"] = sorted(runs, key=lambda run: run["latency_ms_p99"])[len(runs) // 2]
            point["writes"] = post_markers(port, args.clients, args.seconds, session)
        finally:
            server.terminate()
            server.wait(timeout=30)
        if args.plans:
            point["plans"] = hot_statements(url)
        points.append(point)
        fan = point.get("fan_out")
        print(f"{events:>10,} events: rebuild {rebuild_seconds:7.2f} s ({events / rebuild_seconds:,.0f} events/s); "
              f"writes at {args.clients} clients {point['writes']['requests_per_second']:.0f}/s, "
              f"p50 {point['writes']['p50_ms']:.1f} ms, p99 {point['writes']['p99_ms']:.1f} ms; "
              f"catch-up {point['catch_up']['events_per_second']:,.0f} events/s"
              + (f"; fan-out p50 {fan['latency_ms_p50']:.1f} ms, p99 "
                 + ", ".join(f"{run['latency_ms_p99']:.1f}" for run in point["fan_out_runs"]) + " ms, "
                 + ", ".join(f"{run['deliveries_matched']}/{run['deliveries_expected']}" for run in point["fan_out_runs"])
                 if fan else ""), flush=True)
        for row in point.get("plans", []):
            print(f"    {row['statement']:<70} {row['median_ms']:9.3f} ms  {row['buffers']:>6} buffers  "
                  f"{', '.join(row['plan'][:4])}", flush=True)

    result = {"machine": machine(), "clients": args.clients, "seconds_per_run": args.seconds,
              "subscribers": args.subscribers, "rate": args.rate, "fan_out_repeat": args.repeat, "points": points}
    save_results(result, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
