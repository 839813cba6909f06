#!/usr/bin/env python3
"""A nemesis on deploy/local/cluster (issue 48): for `--seconds`, under keyed writers and
resuming WebSocket subscribers, a seeded random schedule of faults, one at a time: the
Postgres primary killed (its machine dies), the synchronous standby killed, an etcd
member killed, the primary cut off etcd (then healed), one node's disk frozen for 10-30 s
(`stall-disk`, where each node has a file system of its own), the Redis master killed, an API
instance and a gateway instance killed. Each fault is followed by `cluster up`, which
brings back what died, before the next one after a random quiet spell. The schedule
runs every kind once in a shuffled order before any kind again.

Promises, checked at the end:
- 0 acknowledged writes lost, 0 stored twice (every 2xx in the log exactly once);
- every subscriber got every event of its topic exactly once, in order;
- writes resume within 30 s of each fault: no stretch of 30 s without a 2xx from the
  fault's end (a kill's moment, a stalled disk's thaw)
  until `cluster up` has brought everything back (the worst per kind is printed);
- no 503 without Retry-After; `roboscope verify` and `verify --chain` pass.

The seed is printed first: `--seed N` replays the same schedule.
"""
import argparse, os, random, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import CLUSTER, Load, cluster, first_write_after, load_arguments, report

RESUME_WITHIN = 30


# A fault is a function of the schedule's random source that puts the fault in place and
# returns when it is over on its own (a monotonic time; now for a kill) and how to mend it
# then (or None).
def partition_and_heal(_rng):
    subprocess.run([CLUSTER, "partition-postgres-primary"], check=True, capture_output=True)
    return time.monotonic(), lambda: subprocess.run([CLUSTER, "heal"], check=True, capture_output=True)


def kill(command):
    def fault(_rng):
        subprocess.run([CLUSTER, command], check=True, capture_output=True)
        return time.monotonic(), None
    return fault


def stall_disk(rng):
    """One node's file system frozen for 10 to 30 s: a Postgres node or an etcd member."""
    env = cluster("env")
    node = rng.choice(env["PG_NODES"].split(",") + env["ETCD_MEMBERS"].split(","))
    seconds = rng.randint(10, 30)
    subprocess.run([CLUSTER, "stall-disk", node, str(seconds)], check=True, capture_output=True)
    synchronous = env.get("PG_SYNC_STANDBYS", env["PG_SYNC_STANDBY"]).split(",")
    role = ("primary" if node == env["PG_PRIMARY"] else "synchronous standby" if node in synchronous
            else "standby" if node.startswith("pg") else "etcd member")
    print(f"nemesis: {node}'s disk ({role}) frozen for {seconds} s", flush=True)
    return time.monotonic() + seconds, None


FAULTS = {
    "primary killed": kill("kill-postgres-primary"),
    "sync standby killed": kill("kill-postgres-sync-standby"),
    "etcd member killed": kill("kill-etcd-member"),
    "primary partitioned": partition_and_heal,
    "redis master killed": kill("kill-redis-master"),
    "api killed": kill("kill-api"),
    "gateway killed": kill("kill-gateway"),
    "disk stalled": stall_disk,
}


def longest_pause(writers, start, end):
    """The longest stretch of [start, end] in which no write was answered 2xx."""
    with writers.lock:
        answered = sorted(at for *_, at in writers.acknowledged if start <= at <= end)
    moments = [start, *answered, end]
    return max(later - earlier for earlier, later in zip(moments, moments[1:]))


def schedule(rng, kinds):
    """Every kind once, shuffled, then again."""
    while True:
        kinds = list(kinds)
        rng.shuffle(kinds)
        yield from kinds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=None)
    load_arguments(parser, writers=8, sessions=8, subscribers=40)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"nemesis: seed {seed} (replay with --seed {seed})", flush=True)
    rng = random.Random(seed)
    env = cluster("up", attempts=2)
    kinds = list(FAULTS)
    if env.get("DISK_STALLS") != "yes":
        kinds.remove("disk stalled")
        print("nemesis: no disk stalls (the nodes share one file system on this machine)", flush=True)
    load = Load(env, "nemesis", args.sessions, args.subscribers)
    subscribers = load.subscribers
    writers = load.writers(args.writers)
    problems, worst, log = [], {}, []
    ends = time.monotonic() + args.seconds
    for kind in schedule(rng, kinds):
        if time.monotonic() >= ends:
            break
        time.sleep(rng.uniform(1, 4))
        over_at, mend = FAULTS[kind](rng)
        # Once the command has returned: the fault is in place (a kill is done, a cut made).
        # A stall is over when its disk thaws: writes on the frozen node wait until then,
        # and the promise counts from there.
        struck = time.monotonic()
        time.sleep(max(0, over_at - struck))
        over = max(struck, over_at)
        resumed = first_write_after(writers, over, limit=RESUME_WITHIN * 2)
        if mend:
            mend()
        cluster("up")
        # The longest time without a 2xx from the fault's end until everything is back: a
        # cut-off primary still answers until it demotes itself, and the pause comes then.
        now = time.monotonic()
        pause = longest_pause(writers, over, now)
        during = f", {longest_pause(writers, struck, over):.1f} s during it" if over > struck else ""
        if resumed is None or pause > RESUME_WITHIN:
            problems.append(f"{kind}: writes paused {pause:.1f} s (first 2xx after {resumed}); at most {RESUME_WITHIN} s")
        worst[kind] = max(worst.get(kind, 0), pause)
        log.append(kind)
        print(f"nemesis: {kind}: first 2xx after {resumed or 0:.1f} s, longest pause {pause:.1f} s{during}", flush=True)
    found, outcome = load.finish(writers, env["DATABASE_URL"])
    problems += found
    print(f"nemesis: seed {seed}, {len(log)} faults over {args.seconds:.0f} s; longest pause per kind: "
          + ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in sorted(worst.items()))
          + f"; {len(writers.acknowledged)} writes acknowledged, {writers.retries} retries, {outcome.lost} lost, "
          f"{outcome.doubled} doubled; {len(subscribers)} subscribers, {sum(s.reconnects for s in subscribers)} reconnects, "
          f"{sum(len(s.events) for s in subscribers)} events delivered")
    report("nemesis", problems)


if __name__ == "__main__":
    main()
