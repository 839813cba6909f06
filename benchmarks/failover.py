#!/usr/bin/env python3
"""Failovers on deploy/local/cluster, several of each kind, and write throughput through
HAProxy (issue 36). Needs root or sudo (Debian packages, the postgres account).

Kinds, each `--rounds` times, under 8 keyed writers (every write retried with its
Idempotency-Key until 2xx) and 20 WebSocket subscribers resuming with `since`:

- postgres: kill -9 of the primary's machine (Patroni and Postgres); the killed node
  rejoins (`cluster up`) before the next round;
- partition: the primary's Patroni cut off etcd; healed once the other node is primary,
  and the cut-off node rejoins before the next round; recovery is the first 2xx of a
  write started after the promotion (the cut-off node answers until it demotes itself);
- redis: kill -9 of the Redis master; recovery is the first heartbeat answered 200;
- api, gateway: kill -9 of the first instance; restarted before the next round.

Per round: time from the kill to the first 2xx of a write (or heartbeat) started after
it, the longest pause between two 2xx writes around it, and writes retried; over all rounds: acknowledged writes lost and doubled (by key,
against the changes feed), and events missed or doubled by subscribers.

Throughput: writes per second (16 writers, `--seconds` each way) through HAProxy with
two API instances, and direct to one instance, same run.
"""
import os, statistics, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Failover"))
sys.path.insert(0, HERE)
# After sys.path names Tests/Failover, where these live.
from cluster_support import API, CLUSTER, Subscriber, Writers, cluster, feed, first_write_after, new_sessions, subscribers_thread  # noqa: E402
from write_path import machine, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def presence_back(api, session, moment, limit=60):
    while time.monotonic() - moment < limit:
        status, _ = api.call("POST", f"/api/v1/presence/{session}", {"user_id": "bench"})
        if status == 200:
            return time.monotonic() - moment
        time.sleep(0.05)
    return None


def throughput(api, sessions, seconds, writers=16):
    load = Writers(api, sessions, writers)
    load.start()
    time.sleep(1)
    with load.lock:
        start_count = len(load.acknowledged)
    started = time.monotonic()
    time.sleep(seconds)
    with load.lock:
        done = len(load.acknowledged) - start_count
    elapsed = time.monotonic() - started
    load.stop()
    return done / elapsed


def main():
    args = command_line(rounds=5, kinds="postgres,partition,redis,api,gateway",
                        seconds=(10.0, "seconds of each throughput measurement"), output=REQUIRED)
    env = cluster("up", attempts=2)
    api = API(env["API_URL"])
    sessions = new_sessions(api, 20, "bench-failover")

    # Throughput first, on a quiet cluster: through HAProxy (two instances) and direct to one.
    # api1 listens one port above HAProxy's HTTP port (deploy/local/cluster).
    direct = API(f"http://127.0.0.1:{int(env['API_URL'].rsplit(':', 1)[1]) + 1}")
    through = {"haproxy_two_instances": [], "direct_one_instance": []}
    for _ in range(2):
        through["haproxy_two_instances"].append(throughput(api, sessions, args.seconds))
        through["direct_one_instance"].append(throughput(direct, sessions, args.seconds))
    print("writes/s through HAProxy (2 API instances): " + ", ".join(f"{x:.0f}" for x in through["haproxy_two_instances"])
          + "; direct to one instance: " + ", ".join(f"{x:.0f}" for x in through["direct_one_instance"]), flush=True)

    subscribers = [Subscriber(env["WS_URL"], f"work_session:{sessions[n]}") for n in range(20)]
    stop_subscribers = threading.Event()
    listening = subscribers_thread(subscribers, stop_subscribers)
    writers = Writers(api, sessions, 8)
    writers.start()
    time.sleep(2)

    kinds = {}
    for kind in args.kinds.split(","):
        rounds = []
        for number in range(args.rounds):
            time.sleep(2)
            with writers.lock:
                retries_before = writers.retries
            before = cluster("env")
            command = {"postgres": "kill-postgres-primary", "partition": "partition-postgres-primary",
                       "redis": "kill-redis-master", "api": "kill-api", "gateway": "kill-gateway"}[kind]
            subprocess.run([CLUSTER, command], check=True, capture_output=True)
            moment = time.monotonic()
            if kind == "redis":
                recovered = presence_back(api, sessions[0], moment)
            elif kind == "partition":
                # The cut-off primary answers until it demotes itself: recovery is the
                # first 2xx of a write started once the other node is primary.
                promoted = None
                while promoted is None and time.monotonic() - moment < 90:
                    if cluster("env")["PG_PRIMARY"] not in ("none", before["PG_PRIMARY"]):
                        promoted = time.monotonic()
                    time.sleep(0.1)
                after = first_write_after(writers, promoted) if promoted else None
                recovered = promoted - moment + after if after is not None else None
            else:
                recovered = first_write_after(writers, moment)
            time.sleep(2)
            with writers.lock:
                retried = writers.retries - retries_before
                answered = sorted(at for *_, at in writers.acknowledged if at >= moment - 5)
            # Writes never stop for long when nothing fails (8 writers); the longest pause
            # between two 2xx answers around the kill is the outage writers saw.
            gap = max((later - earlier for earlier, later in zip(answered, answered[1:])), default=None)
            if kind == "partition":
                subprocess.run([CLUSTER, "heal"], check=True, capture_output=True)
            # The node or instance comes back before the next round (the standby streaming,
            # the Sentinels seeing a healthy replica: `up` waits for both).
            restarted = time.monotonic()
            cluster("up")
            rounds.append({"recovered_seconds": recovered, "retries": retried, "write_gap_seconds": gap, "rejoin_seconds": time.monotonic() - restarted,
                           "primary_before": before["PG_PRIMARY"], "master_before": before["REDIS_MASTER"]})
            print(f"{kind} {number + 1}: recovered in {recovered if recovered is None else round(recovered, 1)} s, "
                  f"longest pause between 2xx writes {gap if gap is None else round(gap, 1)} s, "
                  f"{retried} retries, back in {rounds[-1]['rejoin_seconds']:.1f} s", flush=True)
        kinds[kind] = rounds
    writers.stop()

    expected = {f"work_session:{s}": feed(api, f"work_session:{s}") for s in sessions}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(len(s.events) < len(expected[s.topic]) for s in subscribers):
        time.sleep(0.2)
    stop_subscribers.set()
    listening.join(timeout=10)
    keys = {}
    for events in expected.values():
        for _, _, kind, key in events:
            if key and kind == "marker.created":
                keys[key] = keys.get(key, 0) + 1
    lost = sum(1 for key, *_ in writers.acknowledged if keys.get(key, 0) == 0)
    doubled = sum(1 for count in keys.values() if count > 1)
    subscriber_problems = sum(1 for s in subscribers if s.events != expected[s.topic])
    result = {"machine": machine(), "rounds": args.rounds, "kinds": kinds, "throughput": through,
              "throughput_ratio": statistics.median(through["haproxy_two_instances"]) / statistics.median(through["direct_one_instance"]),
              "acknowledged": len(writers.acknowledged), "lost": lost, "doubled": doubled, "retries": writers.retries,
              "subscribers": len(subscribers), "subscribers_with_gaps_or_repeats": subscriber_problems,
              "events_delivered": sum(len(s.events) for s in subscribers), "broken": writers.broken[:10],
              "build": os.path.basename(os.path.dirname(os.environ.get("ROBOSCOPE_BINARY", ".build/debug/roboscope")))}
    for kind, rounds in kinds.items():
        times = [r["recovered_seconds"] for r in rounds if r["recovered_seconds"] is not None]
        print(f"{kind}: recovered in median {statistics.median(times):.1f} s, max {max(times):.1f} s "
              f"({len(rounds) - len(times)} rounds never recovered)" if times else f"{kind}: never recovered")
    print(f"{len(writers.acknowledged)} writes acknowledged, {lost} lost, {doubled} doubled; {len(subscribers)} subscribers, "
          f"{subscriber_problems} with a gap or a repeat; throughput through HAProxy / direct: {result['throughput_ratio']:.2f}")
    save_results(result, args.output)
    print(f"wrote {args.output}")
    if lost or doubled or subscriber_problems or writers.broken:
        sys.exit(1)


if __name__ == "__main__":
    main()
