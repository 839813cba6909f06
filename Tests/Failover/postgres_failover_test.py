#!/usr/bin/env python3
"""Kill -9 of the Postgres primary under load, on deploy/local/cluster (issue 36).

16 writers create markers through HAProxy, each with its own Idempotency-Key, retrying
the same key after a 503, a timeout or a dropped connection until it is answered 2xx;
200 WebSocket subscribers over 20 work sessions, through HAProxy, resume with `since`
if their socket drops. A few seconds in, the primary's machine dies (its Patroni and
Postgres get SIGKILL); writing goes on until well after the standby took over. Then:

- every write answered 2xx is in the log exactly once, and no key made two markers;
- every subscriber got every event of its topic exactly once, `topic_seq` 1..n with no
  gap, no repeat, in order, the same events the changes feed lists;
- `roboscope verify` and `verify --chain` pass on the new primary;
- the old primary rejoins as a standby (`cluster up` again; Patroni's pg_rewind).

Prints the failover's figures (time from the kill to the first 2xx write, writes
retried, lost, doubled) and exits non-zero on any broken promise.
"""
import argparse, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import (API, CLUSTER, Load, binary, cluster, eventually, first_write_after, free_port,
                             load_arguments, ready, record_pid, report, verify)


def main():
    parser = argparse.ArgumentParser()
    load_arguments(parser, writers=16, sessions=20, subscribers=200)
    parser.add_argument("--before", type=float, default=4, help="seconds of writes before the kill")
    parser.add_argument("--after", type=float, default=8, help="seconds of writes after the first 2xx following the kill")
    args = parser.parse_args()
    # A start that fails (a package mirror's hiccup, a port still held) is retried once
    # from nothing, its failure printed; the failover itself is never retried.
    env = cluster("up", attempts=2)
    load = Load(env, "failover", args.sessions, args.subscribers)
    api, subscribers = load.api, load.subscribers

    # One more API instance, outside HAProxy, on libpq's multi-host URL
    # (target_session_attrs=read-write): it must find the new primary by itself.
    multihost_port = free_port()
    multihost = subprocess.Popen([binary(), "serve", "--role", "api", "--database-url", env["DATABASE_URL_MULTIHOST"],
                                  "--redis-url", "redis://127.0.0.1:1/0", "--redis-sentinels", env["REDIS_SENTINELS"],
                                  "--redis-master-name", env["REDIS_MASTER_NAME"], "--host", "127.0.0.1",
                                  "--http-port", str(multihost_port), "--ws-port", str(free_port()), "--no-migrate",
                                  "--log-level", "warning", "--db-pool-size", "4"],
                                 env={**os.environ, "ROBOSCOPE_RATE_LIMIT": "0", "ROBOSCOPE_TENANT_RATE_LIMIT": "0"},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record_pid(multihost.pid)
    direct = API(f"http://127.0.0.1:{multihost_port}")
    eventually("the multi-host instance ready", 60, lambda: ready(direct))

    writers = load.writers(args.writers)
    multihost_writers = load.writers(4, api=direct)
    time.sleep(args.before)
    killed_primary = cluster("env")["PG_PRIMARY"]
    subprocess.run([CLUSTER, "kill-postgres-primary"], check=True, capture_output=True)
    # The machine is dead from here. Attempts already running on the old primary may have
    # committed (replicated to the standby) just before; the recovery is the first 2xx
    # of an attempt that started after this point.
    killed_at = time.monotonic()
    recovered = first_write_after(writers, killed_at)
    assert recovered is not None, "no write answered 2xx within 120 s of the kill"
    multihost_ok = first_write_after(multihost_writers, killed_at)
    time.sleep(args.after)
    writers.stop()
    multihost_writers.stop()
    multihost.terminate()
    multihost.wait(timeout=30)
    # Per second after the kill: writes acknowledged and attempts failed.
    timeline = {}
    for *_, at in writers.acknowledged:
        timeline.setdefault(int(at - killed_at), [0, 0])[0] += 1
    for at in writers.failures:
        timeline.setdefault(int(at - killed_at), [0, 0])[1] += 1
    print("second after the kill: acknowledged/failed  " + "  ".join(
        f"{second}:{ok}/{failed}" for second, (ok, failed) in sorted(timeline.items()) if second >= -1))
    acknowledged = writers.acknowledged + multihost_writers.acknowledged
    problems = list(writers.broken) + list(multihost_writers.broken)
    for name, client in (("through HAProxy", api), ("the multi-host instance", direct)):
        if client.bare_503s:
            problems.append(f"{client.bare_503s} answers 503 {name} had no Retry-After")
    if multihost_ok is None:
        problems.append("the multi-host instance answered no write 2xx within 120 s of the kill")

    outcome = load.check(acknowledged)
    problems += outcome.problems
    problems += verify(env["DATABASE_URL"])

    # The old primary rejoins as a standby.
    cluster("up")
    def rejoined():
        status_text = subprocess.run([CLUSTER, "status"], capture_output=True, text=True).stdout
        primary = cluster("env")["PG_PRIMARY"]
        return primary not in ("none", killed_primary) and f"patroni-{killed_primary}: up" in status_text
    try:
        eventually(f"{killed_primary} back as a standby", 30, rejoined, step=0.2)
    except AssertionError as error:
        problems.append(str(error))

    print(f"failover: {killed_primary} killed; the first 2xx of a write started after the kill "
          f"{recovered:.1f} s after it; "
          f"on the multi-host URL {multihost_ok or 0:.1f} s; "
          f"{len(acknowledged)} writes acknowledged, {writers.retries + multihost_writers.retries} retries, "
          f"{outcome.lost} lost, {outcome.doubled} doubled; "
          f"{len(subscribers)} subscribers, {sum(s.reconnects for s in subscribers)} reconnects, "
          f"{sum(len(s.events) for s in subscribers)} events delivered")
    report("failover", problems)


if __name__ == "__main__":
    main()
