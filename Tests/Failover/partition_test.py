#!/usr/bin/env python3
"""A network partition of the Postgres primary on deploy/local/cluster (issues 36, 48): its
Patroni loses etcd, its standbys lose it and the load balancer stops sending it clients
(`cluster partition-postgres-primary` closes its relays to etcd and to its peers, and its
HAProxy server) while it and its Postgres keep running, under 8 keyed writers through
HAProxy.

- the cut-off primary demotes itself: within Patroni's ttl it refuses writes (read-only,
  or down), so two nodes never take writes at once;
- the standby, which still sees etcd, is promoted, and writes through HAProxy answer 2xx
  again;
- every write answered 2xx is in the log exactly once (so none went to the cut-off node
  after the new primary took over), and `verify --chain` passes;
- healed (`cluster heal`), the old primary rejoins as a standby, although a client's
  commit was waiting on it for the cut-off standbys when Patroni stopped it, in a session
  with a temporary table: the stop cancels that wait and ends the session, whose exit
  drops the table in a transaction of its own, and that commit waits for the standbys
  again, with nothing left to cancel it. The node's fast shutdown never ended (CI,
  7513ef9: the probe below was such a client) until Patroni was given
  `primary_stop_timeout`.
"""
import os, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import API, CLUSTER, Writers, node_port, cluster, eventually, feed, first_write_after, new_sessions, report, verify


def psql(port, sql, timeout=10):
    """The node's answer to `sql`, or None when it does not answer in time."""
    try:
        return subprocess.run(["psql", "-h", "127.0.0.1", "-p", port, "-U", "roboscope", "-d", "roboscope", "-tAc",
                               sql], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def takes_writes(port):
    """Whether the node accepts a write now (a temporary table: nothing it keeps). A commit that
    hangs counts as refused: in strict synchronous mode a primary cut off from its standby
    waits for it and acknowledges nothing, which is the promise."""
    run = psql(port, "CREATE TEMP TABLE partition_probe (i int); INSERT INTO partition_probe VALUES (1)", timeout=5)
    return run is not None and run.returncode == 0


def in_recovery(port):
    run = psql(port, "SELECT pg_is_in_recovery()")
    return run is not None and run.returncode == 0 and run.stdout.strip() == "t"


def main():
    env = cluster("up", attempts=2)
    api = API(env["API_URL"])
    problems = []
    sessions = new_sessions(api, 8, "partition")
    writers = Writers(api, sessions, 8)
    writers.start()
    eventually("writes flowing before the partition", 30, lambda: len(writers.acknowledged) >= 50)
    cut_off = env["PG_PRIMARY"]
    port = node_port(env, cut_off)
    assert takes_writes(port), f"{cut_off} took no write before the partition"
    # A client's commit waiting for the standbys when Patroni stops the node, in a session
    # with a temporary table: the standbys' WAL receivers are frozen for the moment of the
    # cut (still connected, so still the synchronous standbys the promotion needs).
    held = subprocess.Popen(["psql", "-h", "127.0.0.1", "-p", port, "-U", "roboscope", "-d", "roboscope", "-q"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    held.stdin.write("BEGIN; CREATE TEMP TABLE held_through_the_cut (i int);\n")
    held.stdin.flush()
    eventually("a transaction holding a temporary table", 10, lambda: psql(
        port, "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'").stdout.strip() != "0")
    receivers = subprocess.run(["pgrep", "-f", "postgres: roboscope: walreceiver"], capture_output=True,
                               text=True).stdout.split()
    for pid in receivers:
        os.kill(int(pid), signal.SIGSTOP)
    try:
        held.stdin.write("COMMIT;\n")
        held.stdin.flush()
        eventually("a commit waiting for the standbys", 10, lambda: psql(
            port, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").stdout.strip() != "0")
        subprocess.run([CLUSTER, "partition-postgres-primary"], check=True, capture_output=True)
    finally:
        for pid in receivers:
            os.kill(int(pid), signal.SIGCONT)
    cut_at = time.monotonic()
    try:
        demoted = eventually(f"{cut_off} refusing writes", 60, lambda: not takes_writes(port), step=0.2)
        promoted = eventually("another node promoted", 60,
                              lambda: cluster("env")["PG_PRIMARY"] not in ("none", cut_off), step=0.2) + demoted
    except AssertionError as error:
        writers.stop()
        subprocess.run([CLUSTER, "heal"], capture_output=True)
        report("partition", [str(error)])
    after_promotion = first_write_after(writers, cut_at + promoted)
    if after_promotion is None:
        problems.append("no write answered 2xx within 120 s of the promotion")
    else:
        # Writing goes on on the new primary for a while, so a cut-off node that still
        # took writes would show them missing.
        settled = len(writers.acknowledged)
        eventually("writes on the new primary", 30, lambda: len(writers.acknowledged) >= settled + 50)
    writers.stop()
    problems += writers.broken

    keys = {}
    for session in sessions:
        for _, _, kind, key in feed(api, f"work_session:{session}"):
            if key and kind == "marker.created":
                keys[key] = keys.get(key, 0) + 1
    lost = [key for key, *_ in writers.acknowledged if keys.get(key, 0) == 0]
    doubled = [key for key, count in keys.items() if count > 1]
    if lost:
        problems.append(f"{len(lost)} acknowledged writes are not in the log (taken by the cut-off node?)")
    if doubled:
        problems.append(f"{len(doubled)} writes are in the log twice")
    problems += verify(env["DATABASE_URL"])

    subprocess.run([CLUSTER, "heal"], check=True, capture_output=True)
    try:
        eventually(f"{cut_off} back as a standby", 90, lambda: in_recovery(port), step=0.5)
    except AssertionError as error:
        problems.append(str(error))
    held.kill()
    recovery = f"{promoted + after_promotion:.1f} s" if after_promotion is not None else "never"
    print(f"partition: {cut_off} cut off etcd; it refused writes {demoted:.1f} s later, another node was primary "
          f"{promoted:.1f} s after the cut, the first 2xx write {recovery} after it; "
          f"{len(writers.acknowledged)} writes acknowledged, {len(lost)} lost, {len(doubled)} doubled")
    report("partition", problems)


if __name__ == "__main__":
    main()
