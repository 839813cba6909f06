#!/usr/bin/env python3
"""The kit's soak (issue 35): RoboscopeKit on a network that keeps going away.

For `--minutes` (30 by default) the app side is the kit's own command line, through two
socat relays (HTTP and WebSocket) that are cut (killed: connections reset, new ones
refused) and restored every `--cycle-seconds` (20 s: up for the cycle less
`--down-seconds`, then down):
- `roboscope-client apply` is fed `--rate` marker creates a second on its standard input
  (each stored in its outbox before it counts, sent with its own idempotency key, retried
  through the cuts), and prints a line as each settles;
- `roboscope-client watch --since 0 --state` follows the session's topic, reconnecting
  and resuming with `since` after every cut;
while another client writes `--rate` creates a second into the same session straight to
the server (Python, an Idempotency-Key per create, retried with the same key).

At the end the network is restored, `apply`'s input closed, and the run checks: every
line settled exactly once (201), the server holds exactly one marker per write of either
side, `watch` printed the topic's events exactly once each, in order (topic_seq 1, 2, 3,
... with no gap), and its markers are the server's. Figures: each line's time from input
to settled (while the network was up when it was written, and all), the time from each
restore to the first event `watch` printed after it, and the resident memory of both kit
processes (growth over the last two thirds, as the server's soak reads it). Started by
deploy/local/bench (`kitsoak`); writes JSON.
"""
import http.client, json, os, socket, statistics, subprocess, sys, tempfile, threading, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from soak import process_figures  # noqa: E402
from write_path import free_port, machine, percentile, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

def call(port, method, path, body=None, headers=None):
    """One request straight to the server: (status, the answer's JSON)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                            headers={"Content-Type": "application/json", **(headers or {})})
        reply = connection.getresponse()
        payload = reply.read()
        return reply.status, (json.loads(payload) if payload else None)
    finally:
        connection.close()


QUAD = {"p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}


class Relay:
    """socat from a port of its own to `target`; `cut` kills it and every connection it
    forwards, `restore` starts it again on the same port."""

    def __init__(self, target):
        self.target, self.port, self.process = target, free_port(), None

    def restore(self):
        self.process = subprocess.Popen(["socat", f"TCP-LISTEN:{self.port},bind=127.0.0.1,reuseaddr,fork",
                                         f"TCP:127.0.0.1:{self.target}"], start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.01)
        raise SystemExit("the relay did not start")

    def cut(self):
        if self.process:
            os.killpg(self.process.pid, 9)
            self.process.wait()
            self.process = None


def other_writer(port, session, rate, stop, made):
    """Creates markers straight to the server, each with its key until it is answered."""
    interval, due, number = 1 / rate, time.monotonic(), 0
    while not stop.is_set():
        due += interval
        key, label = str(uuid.uuid4()), f"other-{number}"
        body = dict(QUAD, work_session_id=session, label=label)
        while not stop.is_set():
            try:
                status, _ = call(port, "POST", "/api/v1/markers", body, headers={"Idempotency-Key": key})
                if status == 201:
                    made.append(label)
                    break
            except OSError:
                pass
            time.sleep(0.2)
        number += 1
        time.sleep(max(0, due - time.monotonic()))


def main():
    args = command_line(binary=REQUIRED, client=(REQUIRED, "the roboscope-client binary"), minutes=30.0,
                        cycle_seconds=20.0, down_seconds=8.0, rate=2.0, sample_seconds=10.0, output=None)

    ws_port = free_port()
    server, port, _, session = start_server(args.binary, "--ws-port", str(ws_port), "--rate-limit", "0")
    http, ws = Relay(port), Relay(ws_port)
    http.restore(), ws.restore()
    state = tempfile.mkdtemp(prefix="roboscope-kit-soak-")
    apply = subprocess.Popen([args.client, "apply", "--url", f"http://127.0.0.1:{http.port}", "--state",
                              os.path.join(state, "apply")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    watch = subprocess.Popen([args.client, "watch", "--url", f"http://127.0.0.1:{http.port}", "--ws-url",
                              f"ws://127.0.0.1:{ws.port}/api/v1/ws", "--topic", f"work_session:{session}", "--since", "0",
                              "--state", os.path.join(state, "watch")], stdout=subprocess.PIPE, text=True)
    sent, settled, events, samples, restores = {}, {}, [], [], []
    network = {"up": True}
    stop = threading.Event()

    def read_apply():
        for line in apply.stdout:
            answer = json.loads(line)
            settled.setdefault(answer["line"], []).append((time.monotonic(), answer.get("status")))

    def read_watch():
        for line in watch.stdout:
            events.append((time.monotonic(), json.loads(line)))

    made_by_other = []
    threads = [threading.Thread(target=read_apply, daemon=True), threading.Thread(target=read_watch, daemon=True),
               threading.Thread(target=other_writer, args=(port, session, args.rate, stop, made_by_other), daemon=True)]
    for thread in threads:
        thread.start()

    started = time.monotonic()
    end = started + args.minutes * 60
    next_cut = started + args.cycle_seconds - args.down_seconds
    next_sample = started
    due, line_number = started, 0
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_sample:
            samples.append({"t": now - started, "apply": process_figures(apply.pid)[0], "watch": process_figures(watch.pid)[0]})
            next_sample += args.sample_seconds
        if network["up"] and now >= next_cut:
            http.cut(), ws.cut()
            network["up"] = False
        elif not network["up"] and now >= next_cut + args.down_seconds:
            http.restore(), ws.restore()
            network["up"] = True
            restores.append(time.monotonic())
            next_cut += args.cycle_seconds
        if now >= due:
            line_number += 1
            mutation = {"method": "POST", "path": "/markers",
                        "body": dict(QUAD, work_session_id=session, label=f"app-{line_number}")}
            sent[line_number] = (time.monotonic(), network["up"])
            apply.stdin.write(json.dumps(mutation) + "\n")
            apply.stdin.flush()
            due += 1 / args.rate
        time.sleep(0.02)

    stop.set()
    if not network["up"]:
        http.restore(), ws.restore()
        restores.append(time.monotonic())
    apply.stdin.close()
    apply_exit = apply.wait(timeout=300)
    threads[2].join(timeout=60)
    # Everything written; `watch` has it once it has printed a creation for every marker.
    _, markers = call(port, "GET", f"/api/v1/markers?work_session_id={session}&limit=10000")
    deadline = time.monotonic() + 120
    created = lambda: sum(1 for _, e in list(events) if e.get("op") == "event" and e.get("type") == "marker.created")
    while time.monotonic() < deadline and created() < len(markers):
        time.sleep(0.2)
    watch.terminate()
    watch.wait(timeout=30)
    server.terminate()
    server.wait(timeout=30)
    http.cut(), ws.cut()

    # Exactly once, on every side.
    labels = [m["label"] for m in markers]
    app_labels = {f"app-{n}" for n in sent}
    other_labels = set(made_by_other)
    once = lambda wanted: sum(1 for label in labels if label in wanted) == len(wanted) and all(
        labels.count(label) == 1 for label in wanted)
    topic_seqs = [e["topic_seq"] for _, e in events if e.get("op") == "event"]
    watched_ids = [e["stream_id"] for _, e in events if e.get("op") == "event" and e.get("type") == "marker.created"]
    settle = {n: settled[n][0][0] - sent[n][0] for n in sent if n in settled}
    settle_up = [settle[n] for n in settle if sent[n][1]]
    to_live = []
    for restored in restores:
        after = next((at for at, e in events if at >= restored), None)
        if after is not None:
            to_live.append(after - restored)
    third = [s for s in samples if s["t"] <= args.minutes * 20]
    last = [s for s in samples if s["t"] >= args.minutes * 60 - 60]

    def growth(name):
        if not third or not last:
            return None
        return (statistics.median(s[name] for s in last) - statistics.median(s[name] for s in third[-6:])) / 1024

    result = {
        "machine": machine(), "minutes": args.minutes, "cycle_seconds": args.cycle_seconds, "down_seconds": args.down_seconds,
        "rate": args.rate, "cuts": len(restores), "apply_exit": apply_exit,
        "app_writes": len(sent), "app_settled_once": sum(1 for n in sent if len(settled.get(n, [])) == 1),
        "app_settled_201": sum(1 for n in sent if settled.get(n) and settled[n][0][1] == 201),
        "other_writes": len(made_by_other), "server_markers": len(markers),
        "app_markers_once": once(app_labels), "other_markers_once": once(other_labels),
        "watch_events": len(topic_seqs), "watch_in_order_once": topic_seqs == list(range(1, len(topic_seqs) + 1)),
        "watch_markers_equal_server": sorted(watched_ids) == sorted(m["id"] for m in markers),
        "settle_seconds": {"p50": percentile(settle_up, 50), "p99": percentile(settle_up, 99), "max_while_up": max(settle_up),
                           "max_all": max(settle.values())},
        "to_live_seconds": {"p50": percentile(to_live, 50), "max": max(to_live)} if to_live else None,
        "rss_growth_mib": {"apply": growth("apply"), "watch": growth("watch")},
        "rss_kib_last": samples[-1] if samples else None, "samples": samples,
    }
    print(f"kit soak: {args.minutes:g} min, network cut {args.down_seconds:g} s in every {args.cycle_seconds:g} s "
          f"({result['cuts']} cuts), {args.rate:g} writes/s from the app and {args.rate:g} from another client")
    print(f"  app writes {result['app_writes']}: settled once {result['app_settled_once']}, 201 {result['app_settled_201']}, "
          f"apply exit {apply_exit}; other writes {result['other_writes']}")
    print(f"  server markers {len(markers)}: each app write once {result['app_markers_once']}, "
          f"each other write once {result['other_markers_once']}")
    print(f"  watch: {len(topic_seqs)} events, topic_seq 1..n each once {result['watch_in_order_once']}, "
          f"its markers are the server's {result['watch_markers_equal_server']}")
    s = result["settle_seconds"]
    print(f"  input to settled, written while up: p50 {s['p50']:.2f} s, p99 {s['p99']:.2f} s, max {s['max_while_up']:.2f} s; "
          f"max over all {s['max_all']:.2f} s")
    if to_live:
        print(f"  restore to watch's first event after it: p50 {result['to_live_seconds']['p50']:.2f} s, "
              f"max {result['to_live_seconds']['max']:.2f} s")
    g = result["rss_growth_mib"]
    if g["apply"] is not None:
        print(f"  RSS growth over the last two thirds: apply {g['apply']:+.2f} MiB, watch {g['watch']:+.2f} MiB")
    save_results(result, args.output)


if __name__ == "__main__":
    main()
