"""What the Python end-to-end tests (Tests/Console, Tests/Tracing) share: named checks
that are all reported before the test fails, free ports, psql, waits for a condition
that fail by name at their deadline, and the real server on ports of its own."""
import json, os, subprocess, sys, tempfile, time, urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Free ports as the benchmarks take them: below the ephemeral range, never twice a run
# (the kernel's own choice can hand two callers one port).
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
from write_path import free_port  # noqa: E402, F401

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def psql(url, sql):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qtAc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


def wait_for(condition, what, seconds=30):
    """Polls `condition` until it holds (its value is returned, and `what` reported ok);
    a deadline passed fails the check by name and returns None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            print(f"ok   {what}", flush=True)
            return value
        time.sleep(0.05)
    check(False, f"{what} (not within {seconds} s)")
    return None


class Server:
    """`roboscope serve` on free ports (HTTP and WebSocket), its output in `log`, once it
    answers `/readyz`; `extra`: more flags, `environment`: more variables."""

    def __init__(self, binary, database_url, *extra, environment=None):
        self.port, self.ws_port = free_port(), free_port()
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [binary, "serve", "--database-url", database_url, "--host", "127.0.0.1", "--http-port", str(self.port),
             "--ws-port", str(self.ws_port), "--schema-dir", os.path.join(REPO, "schema"), *extra],
            stdout=self.log, stderr=self.log, env=dict(os.environ, **(environment or {})))
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"{self.base}/readyz", timeout=1).status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start: " + open(self.log.name).read())

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def call(self, method, path, body=None, user="ana", token=None, headers=None):
        """A request under /api/v1 as `user` (from an iPad of theirs), with `token` when
        given; the JSON answer (a non-2xx raises)."""
        request = urllib.request.Request(f"{self.base}/api/v1{path}", method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json", "X-User-Id": user,
                                                  "User-Agent": f"Roboscope-iPad/{user}",
                                                  **({"Authorization": f"Bearer {token}"} if token else {}),
                                                  **(headers or {})})
        with urllib.request.urlopen(request, timeout=30) as reply:
            text = reply.read()
            return json.loads(text) if text else None

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
