#!/usr/bin/env python3
"""How fast a revocation takes effect (issue 46: "from POST /admin/revocations to the last
matching socket closed, over two gateway processes and two API processes: p99 under 2 s").

Four processes on one database and Redis: two `--role api`, two `--role gateway`. Each
round opens `--sockets` WebSocket connections of one fresh subject, spread over both
gateways (plus as many of another subject of the same tenant, which must stay open),
then revokes that subject's tokens through one API process (alternating) and measures:

- the time from sending the POST to each matching socket's 4001 `revoked` close frame
  (per socket, and per round the last of them);
- the time until the *other* API process answers the revoked token 401 `token_revoked`.

Reported: p50, p99 and max of those times across rounds, and whether any bystander
socket was closed. Prints a table and writes JSON.
"""
import base64, hashlib, hmac, json, os, selectors, socket, struct, subprocess, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import free_port, machine, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

SECRET = "revocation-benchmark-secret-0123456789abcdef"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(tenant, subject, scope="read", issued_ago=60):
    now = time.time()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps({"sub": subject, "tenant": tenant, "scope": scope, "iat": now - issued_ago, "exp": now + 3600}).encode())
    signature = hmac.new(SECRET.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def serve(binary, database_url, redis_url, role):
    port, ws_port = free_port(), free_port()
    process = subprocess.Popen([binary, "serve", "--role", role, "--host", "127.0.0.1", "--http-port", str(port),
                                "--ws-port", str(ws_port), "--database-url", database_url, "--redis-url", redis_url,
                                "--auth-jwt-secret", SECRET, "--auth-allow-any-audience", "--auth-allow-any-issuer",
                                "--rate-limit", "0", "--tenant-rate-limit", "0", "--ws-max-connections-per-client", "100000",
                                "--log-level", "error"])
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1).status == 200:
                return process, port, ws_port
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{role} did not start")


def call(port, method, path, bearer, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {bearer}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def open_socket(ws_port, bearer):
    """A WebSocket upgraded with `bearer`, left open and unread."""
    sock = socket.create_connection(("127.0.0.1", ws_port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {bearer}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("closed during the upgrade")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(head.split(b"\r\n")[0].decode())
    sock.setblocking(False)
    return sock


def close_code(data):
    """The code of a close frame at the start of `data` (server frames are unmasked), else None."""
    if len(data) >= 4 and data[0] & 0x0F == 0x8:
        return struct.unpack("!H", data[2:4])[0]
    return None


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else None


def main():
    args = command_line(binary=REQUIRED, database_url=os.environ.get("DATABASE_URL"),
                        redis_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:56379/0"), rounds=20,
                        sockets=(100, "matching sockets per round, over both gateways"), output=REQUIRED)

    processes = []
    try:
        apis, gateways = [], []
        for role, into in (("api", apis), ("api", apis), ("gateway", gateways), ("gateway", gateways)):
            process, port, ws_port = serve(args.binary, args.database_url, args.redis_url, role)
            processes.append(process)
            into.append((port, ws_port))
        admin = token("bench", "bench-admin", scope="admin")
        socket_times, round_times, rest_times = [], [], []
        bystanders_closed = 0
        for round_number in range(args.rounds):
            subject = f"device-{round_number}"
            revoked = token("bench", subject)
            bystander = token("bench", f"bystander-{round_number}")
            matching = [open_socket(gateways[i % 2][1], revoked) for i in range(args.sockets)]
            others = [open_socket(gateways[i % 2][1], bystander) for i in range(args.sockets // 10 or 1)]
            # Upgrades are answered before the gateway counts them live: let them settle.
            time.sleep(0.2)
            via, other_api = apis[round_number % 2][0], apis[(round_number + 1) % 2][0]
            selector = selectors.DefaultSelector()
            for sock in matching:
                selector.register(sock, selectors.EVENT_READ)
            started = time.monotonic()
            status, _ = call(via, "POST", "/admin/revocations", admin, {"subject": subject, "reason": "benchmark"})
            if status != 201:
                raise RuntimeError(f"revocation answered {status}")
            pending = set(matching)
            rest_seen = None
            deadline = started + 10
            while (pending or rest_seen is None) and time.monotonic() < deadline:
                for key, _ in selector.select(timeout=0.005):
                    data = key.fileobj.recv(64)
                    if close_code(data) == 4001 or not data:
                        socket_times.append(time.monotonic() - started)
                        pending.discard(key.fileobj)
                        selector.unregister(key.fileobj)
                if rest_seen is None and call(other_api, "GET", "/spaces", revoked)[0] == 401:
                    rest_seen = time.monotonic() - started
            if pending:
                raise RuntimeError(f"round {round_number}: {len(pending)} sockets still open after 10 s")
            round_times.append(max(socket_times[-len(matching):]))
            rest_times.append(rest_seen if rest_seen is not None else 10)
            for sock in others:
                try:
                    if sock.recv(64) == b"":
                        bystanders_closed += 1
                except BlockingIOError:
                    pass
            for sock in matching + others:
                sock.close()
            selector.close()
        result = {
            "machine": machine(), "rounds": args.rounds, "sockets_per_round": args.sockets, "gateways": 2, "api_processes": 2,
            "socket_close_ms": {p: round(percentile(socket_times, q) * 1000, 1) for p, q in (("p50", 50), ("p99", 99), ("max", 100))},
            "last_socket_per_round_ms": {p: round(percentile(round_times, q) * 1000, 1)
                                         for p, q in (("p50", 50), ("p99", 99), ("max", 100))},
            "other_api_401_ms": {p: round(percentile(rest_times, q) * 1000, 1) for p, q in (("p50", 50), ("p99", 99), ("max", 100))},
            "bystanders_closed": bystanders_closed, "target_ms": 2000,
        }
        print(f"revocation: {args.rounds} rounds x {args.sockets} sockets over 2 gateways, 2 API processes")
        for name in ("socket_close_ms", "last_socket_per_round_ms", "other_api_401_ms"):
            figures = result[name]
            print(f"  {name:26} p50 {figures['p50']:8.1f}  p99 {figures['p99']:8.1f}  max {figures['max']:8.1f}  (target p99 < 2000)")
        print(f"  bystander sockets closed: {bystanders_closed}")
        save_results(result, args.output)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
