#!/usr/bin/env python3
"""Catch-up reads on the standby (`--read-database-url`, issue 36), on deploy/local/cluster.

An instance (`serve --role all`) writes through HAProxy to the primary and reads
catch-ups on the streaming standby. Then:

- changes-feed pages and WebSocket catch-ups (`subscribe` with `since: 0`) give exactly
  what the primary gives, and are read on the standby (`roboscope_catch_up_reads_total`
  with `source="standby"`);
- with the standby's replay stopped (it lags), a client still reads its own writes at
  once: those reads go to the primary (`source="primary"`);
- replay resumed, reads go back to the standby.

Replay is stopped with SIGSTOP to the standby's startup process, not with
`pg_wal_replay_pause()`: on PostgreSQL 14 and later, Patroni resumes a paused replay on
its next loop (`handle_parameter_change`, every second here), and once it did so before
the writes below, every read went to a standby that had caught up (CI, 2026-11-27). The
WAL receiver goes on flushing meanwhile, so the primary's synchronous commits return.
"""
import http.client, os, signal, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import (API, MARKER, BlockingWebSocket, node_port, binary, cluster, eventually, feed, free_port, new_sessions, psql,
                             ready, record_pid, report)

def reads(api, reader, source):
    """roboscope_catch_up_reads_total{reader, source} of the instance."""
    connection = http.client.HTTPConnection(api.host, api.port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    for line in text.splitlines():
        if line.startswith("roboscope_catch_up_reads_total{") and f'reader="{reader}"' in line and f'source="{source}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def catch_up(ws_url, topic):
    """Every event a `subscribe` with `since: 0` sends before the socket goes quiet."""
    socket = BlockingWebSocket(ws_url)
    socket.send({"op": "subscribe", "topic": topic, "since": 0})
    events, quiet = [], 0
    while quiet < 2:
        message = socket.receive()
        if message is None:
            quiet += 1
        elif message.get("op") == "event":
            events.append((message["position"], message["topic_seq"], message["type"], message.get("client_mutation_id")))
    socket.close()
    return events


def main():
    env = cluster("up", attempts=2)
    problems = []
    standby_port = node_port(env, "pg2" if env["PG_PRIMARY"] == "pg1" else "pg1")
    assert psql(standby_port, "SELECT pg_is_in_recovery()") == "t", "the standby is not in recovery"

    http_port, ws_port = free_port(), free_port()
    server = subprocess.Popen([binary(), "serve", "--role", "all", "--database-url", env["DATABASE_URL"],
                               "--read-database-url", f"postgres://roboscope@127.0.0.1:{standby_port}/roboscope",
                               "--redis-url", "redis://127.0.0.1:1/0", "--redis-sentinels", env["REDIS_SENTINELS"],
                               "--redis-master-name", env["REDIS_MASTER_NAME"], "--host", "127.0.0.1",
                               "--http-port", str(http_port), "--ws-port", str(ws_port), "--no-migrate", "--log-level", "warning"],
                              env={**os.environ, "ROBOSCOPE_RATE_LIMIT": "0", "ROBOSCOPE_TENANT_RATE_LIMIT": "0"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record_pid(server.pid)
    api, primary_api = API(f"http://127.0.0.1:{http_port}"), API(env["API_URL"])
    ws_url = f"ws://127.0.0.1:{ws_port}/api/v1/ws"
    try:
        eventually("the instance ready", 60, lambda: ready(api))
        session = new_sessions(api, 1, "standby-reads")[0]
        topic = f"work_session:{session}"
        for number in range(50):
            assert api.call("POST", "/api/v1/markers", {"work_session_id": session, "label": f"m{number}", **MARKER})[0] == 201

        # Caught up: the standby serves, and serves what the primary has.
        eventually("a changes page read on the standby", 20,
                   lambda: feed(api, topic) is not None and reads(api, "changes", "standby") > 0)
        if feed(api, topic) != feed(primary_api, topic):
            problems.append("the changes feed read on the standby differs from the primary's")
        eventually("a WebSocket catch-up read on the standby", 20,
                   lambda: len(catch_up(ws_url, topic)) > 0 and reads(api, "websocket", "standby") > 0)
        if catch_up(ws_url, topic) != feed(primary_api, topic):
            problems.append("a WebSocket catch-up read on the standby differs from the primary's feed")

        # Lagging: replay stopped; own writes are still read at once, from the primary.
        replayer = int(psql(standby_port, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'startup'"))
        os.kill(replayer, signal.SIGSTOP)
        try:
            before = (reads(api, "changes", "primary"), reads(api, "websocket", "primary"))
            for number in range(10):
                assert api.call("POST", "/api/v1/markers", {"work_session_id": session, "label": f"late{number}", **MARKER})[0] == 201
            expected = feed(primary_api, topic)
            if feed(api, topic) != expected:
                problems.append("with the standby lagging, the changes feed missed the client's own writes")
            if catch_up(ws_url, topic) != expected:
                problems.append("with the standby lagging, a WebSocket catch-up missed the latest writes")
            if reads(api, "changes", "primary") <= before[0] or reads(api, "websocket", "primary") <= before[1]:
                problems.append("with the standby lagging, reads were not sent to the primary")
        finally:
            os.kill(replayer, signal.SIGCONT)
        standby_before = reads(api, "changes", "standby")
        eventually("reads back on the standby once it replayed", 20,
                   lambda: feed(api, topic) == expected and reads(api, "changes", "standby") > standby_before)
        counts = {f"{reader}/{source}": reads(api, reader, source) for reader in ("changes", "websocket")
                  for source in ("standby", "primary")}
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"standby reads: {len(expected)} events of one topic; reads by source: "
          + ", ".join(f"{name} {count:.0f}" for name, count in counts.items()))
    report("standby reads", problems)


if __name__ == "__main__":
    main()
