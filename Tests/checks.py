"""What the Python end-to-end tests (Tests/Console, Tests/Tracing) share: named checks
that are all reported before the test fails, free ports, psql, and waits for a condition
that fail by name at their deadline."""
import socket, subprocess, time

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
