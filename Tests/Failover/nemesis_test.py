#!/usr/bin/env python3
"""A nemesis on deploy/local/cluster (issue 48): for `--seconds`, under keyed writers and
resuming WebSocket subscribers, a seeded random schedule of faults, one at a time: the
Postgres primary killed (its machine dies), the synchronous standby killed, an etcd
member killed, the primary cut off etcd (then healed), the Redis master killed, an API
instance and a gateway instance killed. Each fault is followed by `cluster up`, which
brings back what died, before the next one after a random quiet spell. The schedule
runs every kind once in a shuffled order before any kind again.

Promises, checked at the end:
- 0 acknowledged writes lost, 0 stored twice (every 2xx in the log exactly once);
- every subscriber got every event of its topic exactly once, in order;
- writes resume within 30 s of each fault: no stretch of 30 s without a 2xx from the
  fault until `cluster up` has brought everything back (the worst per kind is printed);
- no 503 without Retry-After; `roboscope verify` and `verify --chain` pass.

The seed is printed first: `--seed N` replays the same schedule.
"""
import argparse, os, random, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import (API, CLUSTER, Subscriber, Writers, cluster, eventually, first_write_after, new_sessions,
                             report, subscribers_thread, verify, writes_and_deliveries)

RESUME_WITHIN = 30


def partition_and_heal():
    subprocess.run([CLUSTER, "partition-postgres-primary"], check=True, capture_output=True)
    return lambda: subprocess.run([CLUSTER, "heal"], check=True, capture_output=True)


def kill(command):
    def fault():
        subprocess.run([CLUSTER, command], check=True, capture_output=True)
        return None
    return fault


FAULTS = {
    "primary killed": kill("kill-postgres-primary"),
    "sync standby killed": kill("kill-postgres-sync-standby"),
    "etcd member killed": kill("kill-etcd-member"),
    "primary partitioned": partition_and_heal,
    "redis master killed": kill("kill-redis-master"),
    "api killed": kill("kill-api"),
    "gateway killed": kill("kill-gateway"),
}


def longest_pause(writers, start, end):
    """The longest stretch of [start, end] in which no write was answered 2xx."""
    with writers.lock:
        answered = sorted(at for *_, at in writers.acknowledged if start <= at <= end)
    moments = [start, *answered, end]
    return max(later - earlier for earlier, later in zip(moments, moments[1:]))


def schedule(rng):
    """Every kind once, shuffled, then again."""
    while True:
        kinds = list(FAULTS)
        rng.shuffle(kinds)
        yield from kinds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--subscribers", type=int, default=40)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"nemesis: seed {seed} (replay with --seed {seed})", flush=True)
    rng = random.Random(seed)
    env = cluster("up", attempts=2)
    api = API(env["API_URL"])
    sessions = new_sessions(api, args.sessions, "nemesis")
    subscribers = [Subscriber(env["WS_URL"], f"work_session:{sessions[n % len(sessions)]}") for n in range(args.subscribers)]
    stop_subscribers = threading.Event()
    listening = subscribers_thread(subscribers, stop_subscribers)
    eventually("every subscriber subscribed", 30, lambda: all(s.subscribed for s in subscribers))
    writers = Writers(api, sessions, args.writers)
    writers.start()
    problems, worst, log = [], {}, []
    ends = time.monotonic() + args.seconds
    for kind in schedule(rng):
        if time.monotonic() >= ends:
            break
        time.sleep(rng.uniform(1, 4))
        mend = FAULTS[kind]()
        # Once the command has returned: the fault is in place (a kill is done, a cut made).
        struck = time.monotonic()
        resumed = first_write_after(writers, struck, limit=RESUME_WITHIN * 2)
        if mend:
            mend()
        cluster("up")
        # The longest time without a 2xx from the fault until everything is back: a cut-off
        # primary still answers until it demotes itself, and the pause comes then.
        pause = longest_pause(writers, struck, time.monotonic())
        if resumed is None or pause > RESUME_WITHIN:
            problems.append(f"{kind}: writes paused {pause:.1f} s (first 2xx after {resumed}); at most {RESUME_WITHIN} s")
        worst[kind] = max(worst.get(kind, 0), pause)
        log.append(kind)
        print(f"nemesis: {kind}: first 2xx after {resumed or 0:.1f} s, longest pause {pause:.1f} s", flush=True)
    writers.stop()
    problems += list(writers.broken)
    if api.bare_503s:
        problems.append(f"{api.bare_503s} answers 503 had no Retry-After")
    outcome = writes_and_deliveries(api, writers.acknowledged, subscribers, stop_subscribers, listening)
    problems += outcome.problems
    problems += verify(env["DATABASE_URL"])
    print(f"nemesis: seed {seed}, {len(log)} faults over {args.seconds:.0f} s; longest pause per kind: "
          + ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in sorted(worst.items()))
          + f"; {len(writers.acknowledged)} writes acknowledged, {writers.retries} retries, {outcome.lost} lost, "
          f"{outcome.doubled} doubled; {len(subscribers)} subscribers, {sum(s.reconnects for s in subscribers)} reconnects, "
          f"{sum(len(s.events) for s in subscribers)} events delivered")
    report("nemesis", problems)


if __name__ == "__main__":
    main()
