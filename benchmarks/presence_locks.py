#!/usr/bin/env python3
"""Presence and lock benchmark: heartbeats per second at 32 clients next to
redis-benchmark running the very script a heartbeat runs (same run), over the
WebSocket (`presence` ops, each for a user the connection has not held yet, so each is
one heartbeat in Redis; sent by gateway-load) and over HTTP; and the round-trip latency
of lock acquire and release. Started by deploy/local/bench."""
import http.client, json, os, re, statistics, subprocess, sys, time
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import free_port, machine, percentile, request, run_wrk, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

# The script a heartbeat runs: a copy of PresenceStore.heartbeatScript (Sources/RoboscopeRedis),
# so that redis-benchmark measures the same work.
HEARTBEAT = """local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local added = redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2] * 2)
if added == 1 then
    redis.call('PUBLISH', ARGV[3], cjson.encode({event = 'join', user_id = ARGV[1]}))
end
return {added, now}"""


def redis_benchmark(redis_url, clients, requests, session):
    url = urlparse(redis_url)
    key = f"roboscope:presence:bench-{session}"
    out = subprocess.run(["redis-benchmark", "-h", url.hostname, "-p", str(url.port or 6379), "-c", str(clients),
                          "-n", str(requests), "-r", "1000", "-q", "EVAL", HEARTBEAT, "1", key, "user-__rand_int__",
                          "30000", key + ":events"], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"([\d.]+) requests per second", out).group(1))


def drained(port, session, timeout=120):
    """Waits until the users the last run held have left (their connections closed; the
    gateway leaves for them after the grace period), so each run starts from the same state."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, body = request(port, "GET", f"/api/v1/presence/{session}")
        if status == 200 and not any(user.startswith("load-") for user in body["users"]):
            return
        time.sleep(0.5)
    raise RuntimeError("presence did not drain")


def main():
    args = command_line(database_url=REQUIRED, redis_url=REQUIRED, binary=REQUIRED,
                        load=(REQUIRED, "the gateway-load binary"), seconds=6, repeat=3, lock_rounds=300,
                        output=os.path.join(HERE, "results", "presence_locks.json"))

    subprocess.run([args.binary, "migrate", "--database-url", args.database_url], check=True, capture_output=True)
    ws_port = free_port()
    server, port, _, session_id = start_server(args.binary, "--database-url", args.database_url, "--redis-url", args.redis_url,
                                               "--ws-port", str(ws_port), "--ws-presence-grace", "1",
                                               # One trusted load generator measures throughput: the per-connection
                                               # bounds against hostile clients (20 ops/s, 16 presences, 1,000 users a
                                               # session) would refuse it after a second.
                                               "--ws-op-rate", "1000000", "--ws-max-presence", "10000",
                                               "--presence-max-users", "1000000")
    try:
        ws_runs = []
        for _ in range(args.repeat):
            out = subprocess.run([args.load, "--mode", "presence", "--ws-port", str(ws_port), "--http-port", str(port),
                                  "--connections", "32", "--seconds", str(args.seconds), "--session", session_id],
                                 check=True, capture_output=True, text=True).stdout
            load = json.loads(out)
            # The run's users leave after it (a leave each, in Redis): not while the ceiling runs.
            drained(port, session_id)
            ceiling = redis_benchmark(args.redis_url, 32, max(20000, int(load["presence_per_second"] * args.seconds * 3)), session_id)
            ws_runs.append({"ws": load, "redis_benchmark": ceiling, "ratio": load["presence_per_second"] / ceiling})
        runs = []
        for _ in range(args.repeat):
            api = run_wrk(f"http://127.0.0.1:{port}", 32, args.seconds, script="heartbeat.lua",
                          env=dict(os.environ, BENCH_SESSION_ID=session_id))
            ceiling = redis_benchmark(args.redis_url, 32, max(20000, int(api["requests_per_second"] * args.seconds * 3)), session_id)
            runs.append({"api": api, "redis_benchmark": ceiling, "ratio": api["requests_per_second"] / ceiling})

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        acquire_ms, release_ms = [], []
        path = f"/api/v1/locks/{session_id}"
        for _ in range(args.lock_rounds):
            started = time.perf_counter()
            conn.request("POST", path, body=json.dumps({"ttl_seconds": 30}), headers={"Content-Type": "application/json"})
            reply = json.loads(conn.getresponse().read())
            acquire_ms.append((time.perf_counter() - started) * 1000)
            assert reply["acquired"], reply
            started = time.perf_counter()
            conn.request("DELETE", path, body=json.dumps({"token": reply["token"]}), headers={"Content-Type": "application/json"})
            assert json.loads(conn.getresponse().read())["released"]
            release_ms.append((time.perf_counter() - started) * 1000)
    finally:
        server.terminate()
        server.wait(timeout=30)

    spread = lambda values: {"min": min(values), "median": statistics.median(values), "max": max(values)}
    latency = lambda values: {"p50": percentile(values, 50), "p99": percentile(values, 99), "max": max(values)}
    result = {"machine": machine(), "seconds_per_run": args.seconds, "repeat": args.repeat,
              "websocket_heartbeats": {"clients": 32, "runs": ws_runs,
                                       "ws_per_second": spread([r["ws"]["presence_per_second"] for r in ws_runs]),
                                       "errors": sum(r["ws"]["presence_errors"] for r in ws_runs),
                                       "redis_benchmark_per_second": spread([r["redis_benchmark"] for r in ws_runs]),
                                       "ratio": spread([r["ratio"] for r in ws_runs])},
              "heartbeats": {"clients": 32, "runs": runs,
                             "api_per_second": spread([r["api"]["requests_per_second"] for r in runs]),
                             "redis_benchmark_per_second": spread([r["redis_benchmark"] for r in runs]),
                             "ratio": spread([r["ratio"] for r in runs])},
              "lock_round_trip_ms": {"rounds": args.lock_rounds, "acquire": latency(acquire_ms), "release": latency(release_ms)}}
    save_results(result, args.output)
    h = result["heartbeats"]
    fmt = lambda s, f: f"{s['median']:{f}} [{s['min']:{f}}-{s['max']:{f}}]"
    print(f"heartbeats at 32 clients, {args.repeat} runs of {args.seconds} s, median [min-max]:")
    w = result["websocket_heartbeats"]
    print(f"  WebSocket presence ops {fmt(w['ws_per_second'], '.0f')}/s, redis-benchmark same script "
          f"{fmt(w['redis_benchmark_per_second'], '.0f')}/s, ratio {fmt(w['ratio'], '.2f')}, errors {w['errors']}")
    print(f"  API {fmt(h['api_per_second'], '.0f')}/s, redis-benchmark same script {fmt(h['redis_benchmark_per_second'], '.0f')}/s, "
          f"ratio {fmt(h['ratio'], '.2f')}, non-2xx {sum(r['api']['non_2xx'] for r in runs)}")
    for name in ("acquire", "release"):
        l = result["lock_round_trip_ms"][name]
        print(f"  lock {name}: p50 {l['p50']:.2f} ms, p99 {l['p99']:.2f} ms, max {l['max']:.2f} ms ({args.lock_rounds} rounds)")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
