#!/usr/bin/env python3
"""Losing one of three, on deploy/local/cluster (issue 48): the synchronous standby, then
an etcd member, each SIGKILLed under keyed write load and WebSocket subscribers.

Patroni runs in strict synchronous mode: a commit is answered only once a synchronous
standby has flushed it. With the synchronous standby dead, commits wait until Patroni
names the other standby; writes must resume well within 30 s, and none is answered
before a standby has it. With one etcd member of three dead, the other two keep quorum
and Patroni its leader key: writes go on. After each fault `cluster up` brings the
member back. Then:

- every write answered 2xx is in the log exactly once, no key made two markers;
- every subscriber got every event of its topic exactly once, in order;
- `roboscope verify` and `verify --chain` pass.

Prints, per fault, the time from the kill to the first 2xx of a write started after it,
and exits non-zero on any broken promise.
"""
import argparse, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import CLUSTER, Load, cluster, eventually, first_write_after, load_arguments, report

RESUME_WITHIN = 30


def main():
    parser = argparse.ArgumentParser()
    load_arguments(parser, writers=8, sessions=10, subscribers=50)
    parser.add_argument("--between", type=float, default=3, help="seconds of writes around each fault")
    args = parser.parse_args()
    env = cluster("up", attempts=2)
    load = Load(env, "quorum", args.sessions, args.subscribers)
    subscribers = load.subscribers
    writers = load.writers(args.writers)
    problems, figures = [], []

    def fault(name, command, settled=None):
        """Kills with `command`, times the first 2xx after it, waits for `settled` (if
        any), then brings everything back with `cluster up`."""
        time.sleep(args.between)
        subprocess.run([CLUSTER, command], check=True, capture_output=True)
        killed_at = time.monotonic()
        recovered = first_write_after(writers, killed_at)
        if recovered is None or recovered > RESUME_WITHIN:
            problems.append(f"{name}: no write answered 2xx within {RESUME_WITHIN} s (first after {recovered})")
        if settled:
            try:
                eventually(f"{name}: {settled.__doc__}", 60, settled, step=0.2)
            except AssertionError as error:
                problems.append(str(error))
        figures.append(f"{name} {recovered or 0:.1f} s")
        time.sleep(args.between)
        cluster("up")

    # Both standbys synchronous first: `up` can return while a rejoined one still catches
    # up, and the standby killed is the first Patroni reports synchronous at the kill (a
    # clean-clone run read pg2 here, then pg1 joined and was the one killed).
    eventually("both standbys synchronous", 60,
               lambda: len(cluster("env").get("PG_SYNC_STANDBYS", "").split(",")) == 2, step=0.2)
    standby = cluster("env")["PG_SYNC_STANDBY"]

    def other_standby_synchronous():
        """another standby synchronous"""
        now = cluster("env")
        return now["PG_SYNC_STANDBY"] not in ("none", standby) and now["PG_PRIMARY"] != standby

    fault(f"synchronous standby {standby} killed", "kill-postgres-sync-standby", other_standby_synchronous)

    fault("etcd member etcd1 killed", "kill-etcd-member")
    found, outcome = load.finish(writers, env["DATABASE_URL"])
    problems += found
    print(f"quorum: first 2xx after the fault: {'; '.join(figures)}; {len(writers.acknowledged)} writes acknowledged, "
          f"{writers.retries} retries, {outcome.lost} lost, {outcome.doubled} doubled; {len(subscribers)} subscribers, "
          f"{sum(len(s.events) for s in subscribers)} events delivered")
    report("quorum", problems)


if __name__ == "__main__":
    main()
