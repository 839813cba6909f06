#!/usr/bin/env python3
"""Kill -9 of one API and one gateway instance behind HAProxy, under RoboscopeKit clients
(issue 36), on deploy/local/cluster.

Eight `roboscope-client watch` processes follow four work sessions through HAProxy's
WebSocket port; four `roboscope-client apply` processes create markers through its HTTP
port, a line every 100 ms (a debug build of `apply` spends about 20 ms of CPU a line;
faster, four of them would hold both cores). A few seconds in, `api1` and `gateway1`
get SIGKILL. Then:

- HAProxy marks both down (its checks) and sends nothing more to them;
- every `apply` settles every line 2xx and exits 0: writes cut with their instance were
  retried by the kit with their key, and no marker was made twice;
- every `watch` printed every event of its topic exactly once, `topic_seq` 1..n in
  order, the same list the changes feed gives: the kit reconnected to the other gateway
  and resumed with `since`;
- `cluster up` restarts both instances and HAProxy sends to them again.

With ROBOSCOPE_KIT_TLS=1 the kit speaks https and wss to TLS terminators (socat with
OpenSSL) in front of HAProxy, trusting a certificate authority made for the run through
SSL_CERT_FILE: the kit's own TLS under the same kills (Tests/Failover/frozen_disk_loop.sh
runs it on a stalling disk; not in the test command).
"""
import atexit, json, os, signal, socket, subprocess, sys, tempfile, threading, time, urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import (MARKER, API, CLUSTER, REPO, cluster, current_sessions, eventually, feed, free_port, json_lines, new_sessions,
                             record_pid, report, server_states)

KIT = os.environ.get("ROBOSCOPE_CLIENT_BINARY", os.path.join(REPO, ".build/debug/roboscope-client"))


# Every kit process this test started, killed when it ends however it ends: a failed
# wait must not leave `apply` processes retrying against the next test's cluster.
CHILDREN = []


def start(arguments, **options):
    process = subprocess.Popen(arguments, **options)
    CHILDREN.append(process)
    record_pid(process.pid)
    return process


@atexit.register
def kill_children():
    for process in CHILDREN:
        if process.poll() is None:
            process.kill()


def thread_stacks(pid, path):
    """Every thread's stack of a stalled process into `path` (when gdb is installed), and
    the frames of ours and of Foundation's, for the report."""
    try:
        run = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    with open(path, "w") as out:
        out.write(run.stdout)
    frames = [line.strip()[:160] for line in run.stdout.splitlines()
              if line.startswith("Thread ") or any(word in line for word in ("Roboscope", "Foundation", "dispatch_sync", "wait"))]
    return "stacks (" + path + "): " + " | ".join(frames[:60]) + "\n"


def unanswered(work, number, env):
    """What a stalled `apply` waits for: its attempts that never ended (its
    `--log-requests` log), with what the cluster's logs say of their keys."""
    attempts = json_lines(os.path.join(work, f"apply-{number}.log"))
    open_attempts = {}
    for attempt in attempts:
        pending = open_attempts.setdefault((attempt["method"], attempt["path"], attempt.get("key")), [])
        if attempt["event"] == "sent":
            pending.append(attempt)
        elif pending:
            pending.pop()
    waiting = [attempt for pending in open_attempts.values() for attempt in pending]
    said = []
    logs = os.path.join(os.path.dirname(env["HAPROXY_SOCKET"]), "logs")
    for attempt in waiting[:3]:
        for name in sorted(os.listdir(logs)):
            with open(os.path.join(logs, name), errors="replace") as log:
                said += [f"{name}: {line.strip()[:300]}" for line in log if attempt.get("key") and attempt["key"] in line]
    return (f"attempts never ended: {waiting[:3]}; the last of its log: {attempts[-4:]}; "
            f"the cluster's logs of those keys: {said[:10]}")


def listening(port):
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def tls_terminators(work, api_url, ws_url):
    """An authority and a certificate for localhost, made with `openssl`, and a socat
    terminator in front of each URL: the URLs the kit should use and its environment."""
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], cwd=work, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Roboscope failover test authority")
    with open(os.path.join(work, "localhost.ext"), "w") as extensions:
        extensions.write("subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "localhost.key", "-out", "localhost.csr", "-subj", "/CN=localhost")
    openssl("x509", "-req", "-in", "localhost.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "localhost.ext", "-out", "localhost.pem")
    urls = []
    for url, scheme in ((api_url, "https"), (ws_url, "wss")):
        parsed = urllib.parse.urlsplit(url)
        port = free_port()
        start(["socat", f"OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,verify=0,"
               f"cert={work}/localhost.pem,key={work}/localhost.key", f"TCP:{parsed.hostname}:{parsed.port}"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        eventually(f"the {scheme} terminator listening", 10, lambda port=port: listening(port))
        urls.append(urllib.parse.urlunsplit((scheme, f"localhost:{port}", parsed.path, parsed.query, "")))
    return urls[0], urls[1], {**os.environ, "SSL_CERT_FILE": os.path.join(work, "ca.pem")}


def main():
    env = cluster("up", attempts=2)
    api = API(env["API_URL"])
    problems = []
    sessions = new_sessions(api, 4, "instances")
    work = tempfile.mkdtemp(prefix="roboscope-instances-")
    kit_api, kit_ws, kit_env = env["API_URL"], env["WS_URL"], None
    if os.environ.get("ROBOSCOPE_KIT_TLS") == "1":
        kit_api, kit_ws, kit_env = tls_terminators(work, env["API_URL"], env["WS_URL"])

    watchers = []
    for number in range(8):
        topic = f"work_session:{sessions[number % 4]}"
        out = os.path.join(work, f"watch-{number}.jsonl")
        process = start([KIT, "watch", "--url", kit_api, "--ws-url", kit_ws, "--topic", topic, "--since", "0"],
                        stdout=open(out, "w"), stderr=subprocess.DEVNULL, env=kit_env)
        watchers.append((topic, out, process))

    appliers = []
    for number in range(4):
        out = os.path.join(work, f"apply-{number}.jsonl")
        process = start([KIT, "apply", "--url", kit_api, "--state", os.path.join(work, f"state-{number}"), "--log-requests"],
                        stdin=subprocess.PIPE, stdout=open(out, "w"), stderr=open(os.path.join(work, f"apply-{number}.log"), "w"),
                        text=True, env=kit_env)
        appliers.append((number, out, process, []))
    feeding = threading.Event()
    feeding.set()

    def feed_lines(number, process, labels):
        while feeding.is_set():
            label = f"kit{number}-{len(labels) + 1}"
            body = {"work_session_id": sessions[number], "label": label, **MARKER}
            process.stdin.write(json.dumps({"method": "POST", "path": "/markers", "body": body}) + "\n")
            process.stdin.flush()
            labels.append(label)
            time.sleep(0.1)
        process.stdin.close()
    feeders = [threading.Thread(target=feed_lines, args=(n, p, labels), daemon=True) for n, _, p, labels in appliers]
    for feeder in feeders:
        feeder.start()

    # Under way: every watcher has printed and every apply has settled lines.
    eventually("the kit clients under way", 60, lambda: all(json_lines(out) for _, out, _ in watchers)
               and all(len(json_lines(out)) >= 10 for _, out, _, _ in appliers))
    # The kill must cut some of the watchers: HAProxy spreads them over both gateways.
    on_gateway1 = current_sessions("websocket", "gateway1")
    if on_gateway1 == 0:
        problems.append("no watcher was connected to gateway1 when it was killed")
    subprocess.run([CLUSTER, "kill-api"], check=True, capture_output=True)
    subprocess.run([CLUSTER, "kill-gateway"], check=True, capture_output=True)
    marked_down = eventually("HAProxy marking api1 and gateway1 down", 20,
                             lambda: server_states("api").get("api1") == "DOWN"
                             and server_states("websocket").get("gateway1") == "DOWN")
    # Writing goes on through the survivors for a while before the lines stop.
    settled = sum(len(json_lines(out)) for _, out, _, _ in appliers)
    eventually("writes settled through the surviving instances", 60,
               lambda: sum(len(json_lines(out)) for _, out, _, _ in appliers) >= settled + 100, step=0.5)
    feeding.clear()
    for feeder in feeders:
        feeder.join(timeout=10)
    for number, out, process, labels in appliers:
        try:
            code = process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            stacks = thread_stacks(process.pid, os.path.join(work, f"apply-{number}.stacks"))
            process.kill()
            problems.append(f"{stacks}apply {number} did not settle its {len(labels)} lines within 120 s "
                            f"({len(json_lines(out))} settled); {unanswered(work, number, env)}")
            continue
        if code != 0:
            problems.append(f"apply {number} exited {code}")
        settled = json_lines(out)
        numbers = sorted(line["line"] for line in settled)
        if numbers != list(range(1, len(labels) + 1)):
            problems.append(f"apply {number}: {len(settled)} lines settled of {len(labels)}, numbers {numbers[:3]}...")
        failed = [line for line in settled if line["status"] not in (200, 201)]
        if failed:
            problems.append(f"apply {number}: {len(failed)} lines settled non-2xx, e.g. {failed[0]}")

    # Every label exactly once in its session's log; every watcher has the feed's list.
    expected = {topic: feed(api, topic) for topic in {topic for topic, _, _ in watchers}}
    for number, _, _, labels in appliers:
        status, markers = api.call("GET", f"/api/v1/markers?work_session_id={sessions[number]}", timeout=30)
        assert status == 200, (status, markers)
        counts = {}
        for marker in markers:
            counts[marker["label"]] = counts.get(marker["label"], 0) + 1
        missing = [label for label in labels if counts.get(label, 0) == 0]
        doubled = [label for label, count in counts.items() if count > 1]
        if missing or doubled:
            problems.append(f"session of apply {number}: {len(missing)} markers missing, {len(doubled)} made twice")

    def caught_up():
        return all(len(json_lines(out)) >= len(expected[topic]) for topic, out, _ in watchers)
    try:
        eventually("every watcher at the head of its topic", 60, caught_up, step=0.2)
    except AssertionError as error:
        problems.append(str(error))
    for topic, out, process in watchers:
        process.send_signal(signal.SIGTERM)
        try:
            if process.wait(timeout=10) != 0:
                problems.append(f"watch of {topic} exited {process.returncode} on SIGTERM")
        except subprocess.TimeoutExpired:
            process.kill()
            problems.append(f"watch of {topic} ignored SIGTERM")
        got = [(event["position"], event["topic_seq"]) for event in json_lines(out) if event.get("op") == "event"]
        want = [(position, seq) for position, seq, _, _ in expected[topic]]
        if got != want:
            problems.append(f"a watcher of {topic} printed {len(got)} events against the feed's {len(want)}")

    # Both instances back, and HAProxy sending to them again.
    cluster("up")
    try:
        eventually("api1 and gateway1 up again in HAProxy", 30,
                   lambda: server_states("api").get("api1") == "UP" and server_states("websocket").get("gateway1") == "UP")
    except AssertionError as error:
        problems.append(str(error))
    writes = sum(len(labels) for *_, labels in appliers)
    print(f"instances failover{' (kit over TLS)' if kit_env else ''}: api1 and gateway1 killed, HAProxy marked both down {marked_down:.1f} s later; "
          f"{writes} writes by 4 kit clients all settled 2xx, none made twice; 8 kit watchers ({on_gateway1} on gateway1 "
          f"when it died) got each of {sum(len(e) for e in expected.values())} events of 4 topics once, in order")
    report("instances failover", problems)


if __name__ == "__main__":
    main()
