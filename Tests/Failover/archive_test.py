#!/usr/bin/env python3
"""WAL archiving survives failovers (issue 48), on deploy/local/cluster, after the tests
that kill, stall and partition its nodes. Promises:

- the primary archives the segment it closes now within 60 s: no segment a rejoined node
  kept from a timeline it left holds the archiver up (a clean-clone run once saw one
  refused forever, and the restore drill that followed found nothing archived);
- deploy/ha/archive-wal, the nodes' archive_command: a second copy of an archived segment
  that differs from the repository's is taken as archived when the segment's timeline is
  older than the node's newest (the copy past the fork is never read), and refused when
  it is on the node's own timeline (that would be a real fault).

Prints the archiver's figures and exits non-zero on any broken promise.
"""
import os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import cluster, eventually, node_port, psql, report


def as_postgres(command):
    """`command` as the account that runs the nodes (root runs the tests in CI)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(prefix + command, capture_output=True, text=True)


def archiver(port):
    return psql(port, "SELECT coalesce(last_archived_wal, '') || ' ' || failed_count || ' ' || "
                      "coalesce(last_failed_wal, '') FROM pg_stat_archiver").split(" ")


def main():
    env = cluster("up", attempts=2)
    state, primary = env["STATE_DIR"], env["PG_PRIMARY"]
    port = node_port(env, primary)
    problems = []

    # A record, so that the switch closes a segment even on a quiet primary.
    psql(port, "SELECT pg_logical_emit_message(false, 'roboscope.archive-test', 'x')")
    closed = psql(port, "SELECT pg_walfile_name(pg_switch_wal())")
    try:
        took = eventually(f"{primary} archiving {closed}", 60, lambda: archiver(port)[0] >= closed)
        print(f"archive test: {primary} archived {closed} {took:.1f} s after closing it")
    except AssertionError as error:
        last, failed, last_failed = archiver(port)
        problems.append(f"{error}; the archiver's last: {last}, failures: {failed}, last failed: {last_failed}")

    # The rule of archive-wal, with a real segment from the repository and one byte changed.
    config = os.path.join(state, f"pgbackrest-{primary}.conf")
    segment = archiver(port)[0]
    timeline = int(segment[:8], 16)
    work = tempfile.mkdtemp(dir=state)
    try:
        if os.geteuid() == 0:
            shutil.chown(work, "postgres", "postgres")
        wal = os.path.join(work, "pg_wal")
        os.mkdir(wal)
        if os.geteuid() == 0:
            shutil.chown(wal, "postgres", "postgres")
        copy = os.path.join(wal, segment)
        fetched = as_postgres(["pgbackrest", f"--config={config}", "--stanza=roboscope", "archive-get", segment, copy])
        if fetched.returncode != 0:
            problems.append(f"archive-get {segment}: {fetched.stderr[-500:]}")
        else:
            with open(copy, "r+b") as file:
                file.seek(-1, os.SEEK_END)
                last = file.read(1)
                file.seek(-1, os.SEEK_END)
                file.write(bytes([last[0] ^ 0xFF]))
            push = [os.path.join(state, "archive-wal"), config, "roboscope", copy]
            own = as_postgres(push)
            if own.returncode == 0:
                problems.append(f"a different copy of {segment} on the node's own timeline was taken as archived")
            with open(os.path.join(wal, f"{timeline + 1:08X}.history"), "w") as history:
                history.write(f"{timeline}\t0/0\tno recovery target specified\n")
            left = as_postgres(push)
            if left.returncode != 0:
                problems.append(f"a different copy of {segment}, on a timeline the node left, stopped archiving: "
                                f"exit {left.returncode}, {left.stderr[-500:]}")
            elif "archive-wal:" not in left.stderr:
                problems.append(f"archive-wal took {segment} without saying why: {left.stderr[-500:]}")
            print(f"archive test: a different {segment} refused on timeline {timeline} "
                  f"(exit {own.returncode}), taken as archived once timeline {timeline + 1} exists")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report("archive test", problems)


if __name__ == "__main__":
    main()
