#!/usr/bin/env python3
"""Noisy neighbour (issue 45): tenant B runs a steady mix of small reads and writes
(its space, a marker, a page of 50 markers, a marker created: paced, from threads of
this process) while tenant A runs one heavy shape at a time, as hard as its plan lets
it, from processes of their own at the lowest CPU priority (so that what A costs the
server is measured, not what A's own Python takes from two shared cores):

- lists: `GET /markers?limit=10000` of a session of `--markers` markers;
- as_of: the same list as it was at a past moment (a replay of the log);
- audit: audit pages of 1,000 events, newest first;
- histories: a marker's history, 1,000 events;
- integrity: the integrity check of A's big session;
- bulks: `POST /markers/bulk` of 1,000 markers;
- long_polls: `--polls` long polls of A's topic, opened again as soon as answered;
- catch_ups: WebSocket `subscribe since:0` of A's big topic, again and again;
- unread: large lists asked through a 4 KiB receive window and never read (the issue's
  150 unread answers).

A's workers use four subjects (the per-subject limit is not what stops them) and wait a
429's `Retry-After`: the tenant's limit is its plan. Reported per shape, next to a quiet
run of B alone on the same server: B's p50 and p99 (target: p99 within 2x of quiet plus
10 ms), the server's peak RSS (target: within `--response-memory` of quiet), A's
requests answered and refused, and the server's CPU per B request (the server's whole
CPU during the run, A's work included, over B's requests). Started by
deploy/local/bench (`fairshare`); prints a table and writes JSON.
"""
import base64, datetime, hashlib, hmac, http.client, json, multiprocessing, os, random, socket, subprocess, sys
import threading, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from deflate_fanout import cpu_seconds  # noqa: E402
from hostile import PeakMemory, resident_kib  # noqa: E402
from write_path import free_port, machine, percentile, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

SECRET = "fairshare-benchmark-secret-0123456789abcdef"
QUAD = {"p1": [0, 0, 0], "p2": [2, 0, 0], "p3": [2, 0, 2], "p4": [0, 0, 2]}
# Bulks last: the debt they leave the tenant (carried in full) would stop the next shape.
SHAPES = ["lists", "as_of", "audit", "histories", "integrity", "long_polls", "catch_ups", "unread", "bulks"]


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(tenant, scope, sub):
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": sub, "tenant": tenant, "scope": scope, "exp": int(time.time()) + 7200}).encode())
    mac = hmac.new(SECRET.encode(), f"{head}.{claims}".encode(), hashlib.sha256).digest()
    return f"{head}.{claims}.{b64(mac)}"


class Client:
    """One keep-alive connection with a bearer token; reconnects after a failure."""

    def __init__(self, port, bearer, timeout=120):
        self.port, self.bearer, self.timeout, self.conn = port, bearer, timeout, None

    def send(self, method, path, body=None):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                data = json.dumps(body).encode() if body is not None else None
                self.conn.request(method, path, body=data, headers={
                    "Authorization": f"Bearer {self.bearer}", "Content-Type": "application/json"})
                reply = self.conn.getresponse()
                payload = reply.read()
                return reply.status, payload, reply.getheader("Retry-After")
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 1:
                    return 0, b"", None

    def json(self, method, path, body=None):
        status, payload, _ = self.send(method, path, body)
        assert status in (200, 201), (method, path, status, payload[:300])
        return json.loads(payload)


def start_server(binary, database_url, limited=True):
    """The server; `limited`: with the default plan's rate limits (the set-up runs without)."""
    port, ws_port = free_port(), free_port()
    limits = ["--rate-limit", "100", "--tenant-rate-limit", "1000"] if limited \
        else ["--rate-limit", "0", "--tenant-rate-limit", "0"]
    server = subprocess.Popen([
        binary, "serve", "--host", "127.0.0.1", "--http-port", str(port), "--ws-port", str(ws_port),
        "--database-url", database_url, "--log-level", "error", "--auth-jwt-secret", SECRET,
        "--auth-allow-any-audience", "--auth-allow-any-issuer", *limits])
    for _ in range(300):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return server, port, ws_port
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not start")


def tenant_place(port, tenant, markers):
    """A space and a session of `tenant` with `markers` markers: (space, session, marker ids)."""
    admin = Client(port, token(tenant, "admin write read audit", "setup"))
    space = admin.json("POST", "/api/v1/spaces", {"key": f"{tenant}-{uuid.uuid4()}", "name": tenant})
    session = admin.json("POST", "/api/v1/work-sessions", {"space_id": space["id"], "session_type": "repair"})
    ids = []
    while len(ids) < markers:
        count = min(1000, markers - len(ids))
        items = [dict(QUAD, work_session_id=session["id"], label=f"{tenant} marker {len(ids) + i}") for i in range(count)]
        ids += [m["id"] for m in admin.json("POST", "/api/v1/markers/bulk", {"markers": items})]
    return space["id"], session["id"], ids


# Tenant A: one process per worker group, at nice 19.

def a_worker(shape, port, ws_port, place, subject, stop, tally):
    os.nice(19)
    bearer = token("acme", "read write audit", subject)
    client = Client(port, bearer, timeout=300)
    session, hot, moment, scratch = place["session"], place["hot"], place["moment"], place["scratch"]
    if shape in ("long_polls", "unread", "catch_ups"):
        return a_holder(shape, port, ws_port, place, bearer, stop, tally)
    paths = {
        "lists": f"/api/v1/markers?work_session_id={session}&limit=10000",
        "as_of": f"/api/v1/markers?work_session_id={session}&as_of={moment}&limit=10000",
        "audit": "/api/v1/audit?limit=1000&order=desc",
        "histories": f"/api/v1/markers/{hot}/history?limit=1000",
        "integrity": f"/api/v1/integrity?work_session_id={session}",
    }
    while not stop.is_set():
        if shape == "bulks":
            items = [dict(QUAD, work_session_id=scratch, label="bulk") for _ in range(1000)]
            status, payload, retry = client.send("POST", "/api/v1/markers/bulk", {"markers": items})
        else:
            status, payload, retry = client.send("GET", paths[shape])
        with tally.get_lock():
            tally[0 if status in (200, 201) else 1 if status == 429 else 2] += 1
            tally[3] += len(payload) if status in (200, 201) else 0
        if status == 429:
            stop.wait(min(float(retry or 1), 2))


def a_holder(shape, port, ws_port, place, bearer, stop, tally):
    """Long polls, catch-ups and unread answers: connections held, opened again when done."""
    threads = []
    count = place["polls"] if shape == "long_polls" else 8 if shape == "catch_ups" else place["unread"]

    def long_poll():
        client = Client(port, bearer, timeout=60)
        topic = f"work_session:{place['session']}"
        while not stop.is_set():
            status, payload, retry = client.send("GET", f"/api/v1/changes?topic={topic}&since={place['head']}&wait=25")
            with tally.get_lock():
                tally[0 if status == 200 else 1 if status == 429 else 2] += 1
            if status != 200:
                stop.wait(min(float(retry or 1), 2))

    def catch_up():
        while not stop.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", ws_port), timeout=5)
                key = base64.b64encode(os.urandom(16)).decode()
                sock.sendall((f"GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                              f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                              f"Authorization: Bearer {bearer}\r\n\r\n").encode())
                op = json.dumps({"op": "subscribe", "topic": f"work_session:{place['session']}", "since": 0}).encode()
                mask = os.urandom(4)
                sock.sendall(bytes([0x81, 0x80 | 126]) + len(op).to_bytes(2, "big") + mask
                             + bytes(b ^ mask[i % 4] for i, b in enumerate(op)))
                sock.settimeout(1)
                received = 0
                while not stop.is_set():
                    chunk = sock.recv(1 << 20)
                    if not chunk:
                        break
                    received += len(chunk)
            except OSError:
                pass  # a second without bytes: the catch-up is done
            finally:
                sock.close()
            with tally.get_lock():
                tally[0] += 1

    def unread():
        held = []
        path = f"/api/v1/markers?work_session_id={place['session']}&limit=10000"
        while not stop.is_set():
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                sock.connect(("127.0.0.1", port))
                sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {bearer}\r\n\r\n".encode())
                held.append(sock)
                with tally.get_lock():
                    tally[0] += 1
            except OSError:
                sock.close()
                with tally.get_lock():
                    tally[2] += 1
            stop.wait(0.2)
        for sock in held:
            sock.close()

    target = {"long_polls": long_poll, "catch_ups": catch_up, "unread": unread}[shape]
    for _ in range(count if shape != "unread" else 1):
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()


# Tenant B: a steady mix from this process.

def b_mix(port, place, rate, seconds):
    """B's requests at `rate` a second for `seconds`, from four threads: latencies (ms) by op."""
    latencies, errors, lock = [], [0], threading.Lock()
    bearer = token("globex", "read write", "steady")
    started = time.monotonic()
    interval = 4 / rate

    def run(index):
        client = Client(port, bearer)
        due = started + index * interval / 4
        step = index
        while due < started + seconds:
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            op = step % 4
            step += 1
            begun = time.monotonic()
            if op == 0:
                status, _, _ = client.send("GET", f"/api/v1/spaces/{place['space']}")
            elif op == 1:
                status, _, _ = client.send("GET", f"/api/v1/markers/{random.choice(place['markers'])}")
            elif op == 2:
                status, _, _ = client.send("GET", f"/api/v1/markers?work_session_id={place['session']}&limit=50")
            else:
                status, _, _ = client.send("POST", "/api/v1/markers", dict(QUAD, work_session_id=place["session"]))
            took = (time.monotonic() - begun) * 1000
            with lock:
                if status in (200, 201):
                    latencies.append(took)
                else:
                    errors[0] += 1
            due += interval

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors[0]


def phase(name, server, port, ws_port, places, args):
    stop = multiprocessing.Event()
    tally = multiprocessing.Array("l", 4)
    workers = []
    # What the process held before A's load: the heap keeps what earlier runs freed.
    rss_before = resident_kib(server.pid) / 1024
    if name != "quiet":
        groups = 1 if name in ("long_polls", "unread", "catch_ups") else args.a_clients
        for index in range(groups):
            worker = multiprocessing.Process(target=a_worker, args=(name, port, ws_port, places["a"],
                                                                    f"noisy-{name}-{index % 4}", stop, tally), daemon=True)
            worker.start()
            workers.append(worker)
        time.sleep(args.warmup)  # A's load reaches its steady state before B is measured
    memory = PeakMemory(server.pid)
    cpu_before = cpu_seconds(server.pid)
    latencies, errors = b_mix(port, places["b"], args.b_rate, args.seconds)
    cpu = cpu_seconds(server.pid) - cpu_before
    peak = memory.stop()
    stop.set()
    for worker in workers:
        worker.join(timeout=30)
        if worker.is_alive():
            worker.kill()
    result = {
        "shape": name, "b_requests": len(latencies), "b_errors": errors,
        "b_p50_ms": percentile(latencies, 50) if latencies else None,
        "b_p99_ms": percentile(latencies, 99) if latencies else None,
        "server_rss_mib_peak": peak / 1024, "server_rss_mib_before": rss_before,
        "server_rss_mib_growth": peak / 1024 - rss_before, "server_cpu_ms_per_b_request": 1000 * cpu / max(1, len(latencies)),
        "a_answered": tally[0], "a_refused": tally[1], "a_failed": tally[2], "a_answer_bytes": tally[3],
    }
    print(f"{name:>11}: B p50 {result['b_p50_ms']:.1f} ms p99 {result['b_p99_ms']:.1f} ms ({len(latencies)} ok, "
          f"{errors} failed); RSS {result['server_rss_mib_peak']:.0f} MiB; CPU/B request "
          f"{result['server_cpu_ms_per_b_request']:.2f} ms; A {tally[0]} answered, {tally[1]} refused, "
          f"{tally[2]} failed, {tally[3] / 2**20:.0f} MiB answered", file=sys.stderr)
    return result


def main():
    args = command_line(database_url=REQUIRED, binary=REQUIRED, markers=(15000, "markers in A's big session"),
                        history=(1000, "updates of A's hot marker (its history)"),
                        seconds=(20.0, "B's measurement per shape"),
                        warmup=(3.0, "seconds of A's load before B is measured"),
                        b_rate=(40.0, "B's requests a second"),
                        a_clients=(32, "A's concurrent clients for request shapes"), polls=(400, "A's long polls held"),
                        unread=(150, "A's unread answers, at most"), shapes=",".join(SHAPES), output=REQUIRED)

    setup, port, _ = start_server(args.binary, args.database_url, limited=False)
    try:
        space, session, ids = tenant_place(port, "acme", args.markers)
        writer = Client(port, token("acme", "read write audit", "setup"))
        hot = ids[0]
        for index in range(args.history):
            writer.json("PATCH", f"/api/v1/markers/{hot}", {"label": f"edit {index}"})
        # The moment A's `as_of` replays to: after every write of the set-up (entities'
        # times have whole seconds; the log's, microseconds).
        moment = datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        _, scratch, _ = tenant_place(port, "acme", 0)
        b_space, b_session, b_markers = tenant_place(port, "globex", 50)
        places = {
            "a": {"session": session, "hot": hot, "moment": moment, "scratch": scratch, "polls": args.polls,
                  "unread": args.unread, "head": 0},
            "b": {"space": b_space, "session": b_session, "markers": b_markers},
        }
        # The long polls wait at the topic's end (each answered by the next event there).
        last = writer.json("GET", f"/api/v1/changes?topic=work_session:{session}&since=0&limit=1000")
        while last.get("has_more"):
            last = writer.json("GET", f"/api/v1/changes?topic=work_session:{session}&since={last['next_since']}&limit=1000")
        places["a"]["head"] = last["next_since"]
    finally:
        setup.terminate()
        setup.wait(timeout=30)
    server, port, ws_port = start_server(args.binary, args.database_url)
    try:
        runs = [phase("quiet", server, port, ws_port, places, args)]
        for shape in [s for s in args.shapes.split(",") if s]:
            runs.append(phase(shape, server, port, ws_port, places, args))
        runs.append(phase("quiet", server, port, ws_port, places, args))
    finally:
        server.terminate()
        server.wait(timeout=30)
    quiet = [r for r in runs if r["shape"] == "quiet"]
    quiet_p99 = min(r["b_p99_ms"] for r in quiet)
    quiet_rss = quiet[0]["server_rss_mib_peak"]
    for run in runs:
        run["target_ms"] = 2 * quiet_p99 + 10
        run["p99_met"] = run["b_p99_ms"] <= run["target_ms"]
        run["rss_over_quiet_mib"] = run["server_rss_mib_peak"] - quiet_rss
    result = {"machine": machine(), "markers": args.markers, "history": args.history, "seconds": args.seconds,
              "b_rate": args.b_rate, "a_clients": args.a_clients, "polls": args.polls, "unread": args.unread,
              "quiet_p99_ms": quiet_p99, "quiet_rss_mib": quiet_rss, "runs": runs,
              "response_memory_mib": 256}
    save_results(result, args.output)
    print(json.dumps({"quiet_p99_ms": quiet_p99, "met": all(r["p99_met"] for r in runs)}))


if __name__ == "__main__":
    sys.exit(main())
