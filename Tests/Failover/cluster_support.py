"""What the failover tests share (Tests/Failover): the cluster's commands, an HTTP
client, keyed writers that retry until 2xx, WebSocket subscribers that resume with
`since`, the changes feed of a topic, and the checks every failover must pass."""
import asyncio, base64, http.client, json, os, random, socket, struct, subprocess, sys, threading, time, uuid
from urllib.parse import urlparse

# A marker's corners, for the tests' writes.
MARKER = {"p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(REPO, "deploy", "local", "cluster")


def json_lines(path):
    """The JSON lines a child has written to `path` so far. A last line without its
    newline is still being written: it is read on a later call, never half."""
    with open(path) as handle:
        text = handle.read()
    complete = text[:text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def cluster(*command, attempts=1):
    # One machine is every client here: the per-client rate limit would refuse the load.
    environment = {**os.environ, "ROBOSCOPE_RATE_LIMIT": "0", "ROBOSCOPE_TENANT_RATE_LIMIT": "0"}
    for attempt in range(1, attempts + 1):
        run = subprocess.run([CLUSTER, *command], capture_output=True, text=True, env=environment)
        if run.returncode == 0:
            return dict(line.split("=", 1) for line in run.stdout.strip().splitlines() if "=" in line)
        # Its last words (each process's last lines, then what it waited for) are all CI
        # shows of a failed start: printed last, with nothing after them but our verdict.
        sys.stderr.write(run.stderr[-6000:])
        print(f"failover test: `cluster {' '.join(command)}` failed with exit {run.returncode} (attempt {attempt} of {attempts})",
              file=sys.stderr, flush=True)
        if attempt < attempts:
            subprocess.run([CLUSTER, "down"], capture_output=True, env=environment)
    sys.exit(1)


class API:
    def __init__(self, url):
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        # 503s without Retry-After, the service's or HAProxy's: a failover must have none.
        self.bare_503s = 0
        self.lock = threading.Lock()

    def call(self, method, path, body=None, headers=None, timeout=10):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            payload = json.dumps(body).encode() if body is not None else None
            all_headers = {"Content-Type": "application/json", "Connection": "close", **(headers or {})}
            connection.request(method, path, body=payload, headers=all_headers)
            reply = connection.getresponse()
            data = reply.read()
            if reply.status == 503 and reply.getheader("Retry-After") is None:
                with self.lock:
                    self.bare_503s += 1
            try:
                return reply.status, (json.loads(data) if data else None)
            except ValueError:
                # HAProxy's own 502/503 pages while no instance answers.
                return reply.status, None
        finally:
            connection.close()


class Writers:
    """`count` threads creating markers, each write retried with its key until 2xx."""

    def __init__(self, api, sessions, count):
        self.api, self.sessions, self.count = api, sessions, count
        self.acknowledged = []  # (key, marker id, session, attempt started, answered)
        self.retries = 0
        self.failures = []  # monotonic times of attempts that failed
        self.broken = []  # what a writer met that it must not (it stops)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(count)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def run(self, number):
        rng = random.Random(number)
        sequence = 0
        while not self.stopping.is_set():
            sequence += 1
            session = self.sessions[rng.randrange(len(self.sessions))]
            key = str(uuid.uuid4())
            body = {"work_session_id": session, "label": f"w{number}-{sequence}",
                    **MARKER}
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    status, reply = self.api.call("POST", "/api/v1/markers", body, {"Idempotency-Key": key})
                except (OSError, http.client.HTTPException):
                    status, reply = None, None
                if status in (200, 201):
                    with self.lock:
                        self.acknowledged.append((key, reply["id"], session, started, time.monotonic()))
                    break
                if status is not None and status not in (409, 503, 502, 504):
                    with self.lock:
                        self.broken.append(f"writer {number}: unexpected {status} {reply}")
                    return
                with self.lock:
                    self.retries += 1
                    self.failures.append(time.monotonic())
                time.sleep(0.05)
            else:
                with self.lock:
                    self.broken.append(f"writer {number}: key {key} not answered 2xx within 120 s")
                return


class Subscriber:
    """One WebSocket following one work session's topic, resuming with `since`."""

    def __init__(self, ws_url, topic):
        parsed = urlparse(ws_url)
        self.host, self.port, self.path, self.topic = parsed.hostname, parsed.port, parsed.path, topic
        self.events = []  # (position, topic_seq, type, client_mutation_id)
        self.reconnects = 0
        self.subscribed = False  # the gateway has answered a first subscribe

    async def run(self, stopping):
        while not stopping.is_set():
            try:
                await self.follow(stopping)
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                self.reconnects += 1
                await asyncio.sleep(0.2)

    async def follow(self, stopping):
        reader, writer = await asyncio.open_connection(self.host, self.port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write((f"GET {self.path} HTTP/1.1\r\nHost: {self.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionError(head.split(b"\r\n")[0].decode())
        since = self.events[-1][0] if self.events else 0
        op = json.dumps({"op": "subscribe", "topic": self.topic, "since": since}).encode()
        mask = os.urandom(4)
        writer.write(bytes([0x81, 0x80 | 126]) + struct.pack(">H", len(op)) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(op)))
        try:
            while not stopping.is_set():
                try:
                    first, second = await asyncio.wait_for(reader.readexactly(2), 0.5)
                except TimeoutError:
                    continue
                length = second & 0x7F
                if length == 126:
                    length = struct.unpack(">H", await reader.readexactly(2))[0]
                elif length == 127:
                    length = struct.unpack(">Q", await reader.readexactly(8))[0]
                payload = await reader.readexactly(length)
                opcode = first & 0x0F
                if opcode == 9:  # ping: answer
                    pong_mask = os.urandom(4)
                    writer.write(bytes([0x8A, 0x80 | len(payload)]) + pong_mask + bytes(b ^ pong_mask[i % 4] for i, b in enumerate(payload)))
                elif opcode == 8:
                    raise ConnectionError("closed by the gateway")
                elif opcode == 1:
                    message = json.loads(payload)
                    if message.get("op") == "subscribed":
                        self.subscribed = True
                    elif message.get("op") == "event":
                        self.events.append((message["position"], message["topic_seq"], message["type"], message.get("client_mutation_id")))
                    elif message.get("op") == "error":
                        raise ConnectionError(f"error: {message}")
        finally:
            writer.close()


def subscribers_thread(subscribers, stopping_flag):
    async def main():
        stopping = asyncio.Event()

        async def watch():
            while not stopping_flag.is_set():
                await asyncio.sleep(0.1)
            stopping.set()
        await asyncio.gather(watch(), *(s.run(stopping) for s in subscribers))
    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    return thread


def feed(api, topic):
    """Every event of `topic` as the changes feed lists it: (position, topic_seq, type, key)."""
    events, since = [], 0
    while True:
        status, page = api.call("GET", f"/api/v1/changes?topic={topic}&since={since}&limit=1000", timeout=60)
        assert status == 200, (status, page)
        events += [(e["position"], e["topic_seq"], e["type"], e.get("client_mutation_id")) for e in page["data"]]
        since = page["next_since"]
        if not page["has_more"]:
            return events


def load_arguments(parser, writers, sessions, subscribers):
    """The flags of a scenario's `Load`: how many writers, work sessions and subscribers."""
    parser.add_argument("--writers", type=int, default=writers)
    parser.add_argument("--sessions", type=int, default=sessions)
    parser.add_argument("--subscribers", type=int, default=subscribers)


class Load:
    """`sessions` new work sessions and `subscribers` WebSocket subscribers over them,
    through the cluster's load balancers, each resuming with `since` when dropped; every
    one subscribed once this returns. `check` stops them once writing is done."""

    def __init__(self, env, name, sessions, subscribers):
        self.api = API(env["API_URL"])
        self.sessions = new_sessions(self.api, sessions, name)
        self.subscribers = [Subscriber(env["WS_URL"], f"work_session:{self.sessions[n % sessions]}")
                            for n in range(subscribers)]
        self.stop_subscribers = threading.Event()
        self.listening = subscribers_thread(self.subscribers, self.stop_subscribers)
        eventually("every subscriber subscribed", 30, lambda: all(s.subscribed for s in self.subscribers))

    def writers(self, count, api=None):
        """`count` keyed writers on these sessions, started (through `api`, else the balancer)."""
        writers = Writers(api or self.api, self.sessions, count)
        writers.start()
        return writers

    def check(self, acknowledged):
        return writes_and_deliveries(self.api, acknowledged, self.subscribers, self.stop_subscribers, self.listening)

    def finish(self, writers, database_url):
        """Stops `writers` and checks every promise: what a writer met, 503s without
        Retry-After, every write and delivery (`check`), `roboscope verify`. The problems
        found, and the outcome for the figures."""
        writers.stop()
        problems = list(writers.broken)
        if self.api.bare_503s:
            problems.append(f"{self.api.bare_503s} answers 503 had no Retry-After")
        outcome = self.check(writers.acknowledged)
        return problems + outcome.problems + verify(database_url), outcome


class Outcome:
    """What `writes_and_deliveries` found: the broken promises, writes lost and doubled."""
    def __init__(self, problems, lost, doubled):
        self.problems, self.lost, self.doubled = problems, lost, doubled


def writes_and_deliveries(api, acknowledged, subscribers, stop_subscribers, listening):
    """Once writing has stopped: every subscriber catches up to what the feed lists for its
    topic (the same events, `topic_seq` 1..n, no gap, no repeat), then stops; every
    acknowledged write is in the log exactly once, and no key made two markers."""
    problems = []
    expected = {topic: feed(api, topic) for topic in {s.topic for s in subscribers}}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(len(s.events) < len(expected[s.topic]) for s in subscribers):
        time.sleep(0.2)
    stop_subscribers.set()
    listening.join(timeout=10)
    for number, subscriber in enumerate(subscribers):
        want = expected[subscriber.topic]
        if subscriber.events != want:
            seqs = [seq for _, seq, _, _ in subscriber.events]
            problems.append(f"subscriber {number} on {subscriber.topic}: {len(subscriber.events)} events against the feed's "
                            f"{len(want)}; topic_seq runs {seqs[:3]}...{seqs[-3:]}")
        if [seq for _, seq, _, _ in want] != list(range(1, len(want) + 1)):
            problems.append(f"the feed of {subscriber.topic} has a gap or a repeat in topic_seq")
    keys_in_log = {}
    for events in expected.values():
        for _, _, kind, key in events:
            if key and kind == "marker.created":
                keys_in_log[key] = keys_in_log.get(key, 0) + 1
    for key, marker, _session, _, _ in acknowledged:
        count = keys_in_log.get(key, 0)
        if count != 1:
            problems.append(f"write {key} (marker {marker}) is in the log {count} times")
    ids = [marker for _, marker, _, _, _ in acknowledged]
    if len(set(ids)) != len(ids):
        problems.append("two acknowledged writes answered the same marker id")
    lost = sum(1 for key, *_ in acknowledged if keys_in_log.get(key, 0) == 0)
    doubled = sum(1 for count in keys_in_log.values() if count > 1)
    return Outcome(problems, lost, doubled)


def node_port(env, node):
    """The Postgres port of node `pg1`, `pg2` or `pg3` (from the cluster's multi-host URL)."""
    hosts = urlparse(env["DATABASE_URL_MULTIHOST"]).netloc.split("@")[-1].split(",")
    return hosts[int(node[2:]) - 1].rsplit(":", 1)[1]


def psql(port, sql):
    """One statement on one node (its port), as the cluster's superuser: the first column."""
    return subprocess.run(["psql", "-h", "127.0.0.1", "-p", port, "-U", "roboscope", "-d", "roboscope", "-tAc", sql],
                          capture_output=True, text=True, check=True).stdout.strip()


def binary():
    return os.environ.get("ROBOSCOPE_BINARY", os.path.join(REPO, ".build/debug/roboscope"))


def verify(database_url):
    """`roboscope verify` and `verify --chain`: the problems they report."""
    problems = []
    for check in (["verify"], ["verify", "--chain"]):
        run = subprocess.run([binary(), *check, "--database-url", database_url], capture_output=True, text=True)
        if run.returncode != 0:
            problems.append(f"roboscope {' '.join(check)} failed: {run.stdout[-500:]} {run.stderr[-500:]}")
    return problems


def new_sessions(api, count, name):
    """A space and `count` work sessions in it: their ids."""
    status, space = api.call("POST", "/api/v1/spaces", {"key": f"{name}-{uuid.uuid4()}", "name": name})
    assert status == 201, (status, space)
    sessions = []
    for _ in range(count):
        status, session = api.call("POST", "/api/v1/work-sessions", {"space_id": space["id"]})
        assert status == 201, (status, session)
        sessions.append(session["id"])
    return sessions


def haproxy(command):
    """One command on HAProxy's admin socket (the cluster's `HAPROXY_SOCKET`)."""
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(cluster("env")["HAPROXY_SOCKET"])
        connection.sendall((command + "\n").encode())
        out = b""
        while chunk := connection.recv(65536):
            out += chunk
    return out.decode()


def current_sessions(backend, server):
    """Connections HAProxy has open to one server now."""
    for line in haproxy("show stat").splitlines():
        fields = line.split(",")
        if len(fields) > 4 and fields[0] == backend and fields[1] == server:
            return int(fields[4] or 0)
    return 0


def server_states(backend):
    """{server: 'UP' | 'DOWN' | 'MAINT' ...} of one HAProxy backend, as its checks see them."""
    states = {}
    for line in haproxy("show stat").splitlines():
        fields = line.split(",")
        if len(fields) > 17 and fields[0] == backend and fields[1] not in ("FRONTEND", "BACKEND"):
            states[fields[1]] = fields[17]
    return states


def eventually(what, seconds, condition, step=0.1):
    """Waits for `condition()` to hold and returns how long it took; fails naming `what`."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if condition():
            return time.monotonic() - started
        time.sleep(step)
    raise AssertionError(f"{what}: not within {seconds} s")


def first_write_after(writers, moment, limit=120):
    """Seconds from `moment` to the first 2xx of a write that `writers` started after it."""
    while time.monotonic() - moment < limit:
        with writers.lock:
            after = [answered for *_, started, answered in writers.acknowledged if started > moment]
        if after:
            return min(after) - moment
        time.sleep(0.05)
    return None


def free_port():
    """A free loopback port below the kernel's ephemeral range and the cluster's ports."""
    for _ in range(200):
        port = random.randint(20000, 26000)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def ready(api):
    try:
        return api.call("GET", "/readyz", timeout=2)[0] == 200
    except (OSError, http.client.HTTPException):
        return False


def record_pid(pid):
    """A process the test started, for the test command to kill should the test crash."""
    path = os.environ.get("ROBOSCOPE_TEST_PIDS")
    if path:
        with open(path, "a") as pids:
            pids.write(f"{pid}\n")


def report(name, problems):
    """Prints the problems and exits 1, or says every promise was kept."""
    if problems:
        for problem in problems[:20]:
            print("FAILED:", problem)
        sys.exit(1)
    print(f"{name}: every promise kept")


class BlockingWebSocket:
    """A WebSocket on a plain socket, for a test that holds one connection: sends ops,
    reads messages, answers pings."""

    def __init__(self, ws_url):
        parsed = urlparse(ws_url)
        self.socket = socket.create_connection((parsed.hostname, parsed.port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.socket.sendall((f"GET {parsed.path} HTTP/1.1\r\nHost: {parsed.hostname}\r\nUpgrade: websocket\r\n"
                             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.socket.recv(1)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            head += chunk
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.split(b"\r\n")[0].decode())

    def _frame(self, opcode, payload):
        mask = os.urandom(4)
        length = len(payload)
        size = bytes([0x80 | length]) if length < 126 else bytes([0x80 | 126]) + struct.pack(">H", length)
        self.socket.sendall(bytes([0x80 | opcode]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, message):
        self._frame(1, json.dumps(message).encode())

    def _exactly(self, count):
        data = b""
        while len(data) < count:
            chunk = self.socket.recv(count - len(data))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            data += chunk
        return data

    def receive(self):
        """The next text message (pings answered on the way), or None after a quiet second."""
        self.socket.settimeout(1)
        try:
            first, second = self._exactly(2)
        except TimeoutError:
            return None
        self.socket.settimeout(10)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._exactly(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._exactly(8))[0]
        payload = self._exactly(length)
        opcode = first & 0x0F
        if opcode == 9:
            self._frame(10, payload)
            return None
        if opcode == 8:
            raise ConnectionError("closed by the gateway")
        return json.loads(payload) if opcode == 1 else None

    def close(self):
        self.socket.close()
