#!/usr/bin/env python3
"""Idle long polls against a busy log (issue 34): N long polls wait on one work session
while another takes W writes a second; the database transactions of the window are
counted (Postgres's own xact_commit for the database) with and without the polls, and
the ratio printed. The review measured 921 transactions for 5 writes with 50 polls
before polls were woken per topic (39 without).

Postgres flushes an idle backend's counts within 10 s: each count is read after 11 s
of quiet. Polls wait 30 s (the most `wait` allows), which bounds the window.

Writes JSON and prints a table. Started by deploy/local/bench (`polls`).
"""
import asyncio, threading, time

from sync import serve
from write_path import fresh_database, machine, metric, psql, request, save_results
from command_line import command_line, REQUIRED

# Seconds before reading pg_stat_database: an idle backend flushes its counts only after
# 10 s (Postgres 15's PGSTAT_IDLE_INTERVAL), so a shorter wait undercounts.
SETTLE = 11


def transactions(url):
    return int(psql(url, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))


async def hold_polls(port, topic, since, count, ready, done):
    """`count` long polls of `topic`, each its own connection and subject, until `done`."""
    async def one(index):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((f"GET /api/v1/changes?topic={topic}&since={since}&wait=30 HTTP/1.1\r\nHost: localhost\r\n"
                      f"X-User-Id: poller-{index}\r\n\r\n").encode())
        await writer.drain()
        try:
            await asyncio.wait_for(reader.read(1), timeout=40)
        except TimeoutError:
            pass
        finally:
            # Also when cancelled: a poll left open holds the server's graceful stop for
            # its whole wait (30 s).
            writer.close()
    tasks = [asyncio.create_task(one(i)) for i in range(count)]
    ready.set()
    while not done.is_set():
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()


def writes(port, session, rate, seconds):
    """`rate` marker creates a second for `seconds`, paced; returns how many were made."""
    body = {"work_session_id": session, "p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}
    made, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        # Read once: the due time may pass between a check and the sleep.
        time.sleep(max(0.0, started + made / rate - time.perf_counter()))
        status, _ = request(port, "POST", "/api/v1/markers", body)
        assert status == 201, status
        made += 1
    return made


def window(url, port, busy, rate, seconds, settle):
    time.sleep(settle)
    before = transactions(url)
    checks, woken = metric(port, "roboscope_changes_head_checks_total"), metric(port, "roboscope_changes_wakeups_total")
    made = writes(port, busy, rate, seconds)
    time.sleep(settle)
    return {"transactions": transactions(url) - before, "writes": made,
            "head_checks": metric(port, "roboscope_changes_head_checks_total") - checks,
            "wakeups": metric(port, "roboscope_changes_wakeups_total") - woken}


def main():
    args = command_line(admin_url=REQUIRED, binary=REQUIRED, polls=1000, rate=100.0, seconds=5.0,
                        settle=(float(SETTLE),
                                "seconds for Postgres to count the transactions (shorter undercounts; the quick run's 2)"),
                        output=None)
    url = fresh_database(args.admin_url, "roboscope_bench_polls")
    server, port = serve(args.binary, url, extra=("--changes-max-waiting-per-subject", "100000"))
    try:
        space = request(port, "POST", "/api/v1/spaces", {"key": "polls", "name": "polls"})[1]["id"]
        quiet = request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"]
        busy = request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"]
        topic = f"work_session:{quiet}"
        head = request(port, "GET", f"/api/v1/changes?topic={topic}&since=0")[1]["next_since"]

        without = window(url, port, busy, args.rate, args.seconds, args.settle)

        ready, done = threading.Event(), threading.Event()
        polls = threading.Thread(target=lambda: asyncio.run(hold_polls(port, topic, head, args.polls, ready, done)))
        polls.start()
        ready.wait()
        deadline = time.time() + 20
        while metric(port, "roboscope_changes_waiting") < args.polls and time.time() < deadline:
            time.sleep(0.2)
        waiting = int(metric(port, "roboscope_changes_waiting"))
        with_polls = window(url, port, busy, args.rate, args.seconds, args.settle)
        still = int(metric(port, "roboscope_changes_waiting"))
        done.set()
        polls.join()
    finally:
        server.terminate()
        server.wait()
    # Per write: the two windows make about, not exactly, the same number of writes.
    ratio = (with_polls["transactions"] / max(1, with_polls["writes"])) / (without["transactions"] / max(1, without["writes"]))
    result = {"machine": machine(), "polls": args.polls, "waiting": waiting, "still_waiting_after": still,
              "rate": args.rate, "seconds": args.seconds, "without_polls": without, "with_polls": with_polls,
              "ratio": ratio, "target": 1.1}
    print(f"{'':24}{'transactions':>14}{'writes':>8}{'head checks':>13}{'wake-ups':>10}")
    for name, row in (("no polls", without), (f"{waiting} idle polls", with_polls)):
        print(f"{name:24}{row['transactions']:>14}{row['writes']:>8}{row['head_checks']:>13.0f}{row['wakeups']:>10.0f}")
    print(f"transactions per write, with polls / without: {ratio:.3f} (target at most 1.1); "
          f"polls still waiting after the writes: {still}")
    save_results(result, args.output)


if __name__ == "__main__":
    main()
