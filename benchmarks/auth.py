#!/usr/bin/env python3
"""Authorization's price: the same three loads against two servers on one database, one
with authentication off and one with it on (ES256 tokens from a JWK Set, a tenant, a
scope), in alternating runs of the same round (the order swapped every round): the write path (POST /markers, 32
clients, wrk), a list of 500 markers (8 clients, wrk) and fan-out to N WebSocket
subscribers of one work session (gateway-load, writers flat out). Reports each figure
off and on, and on/off per round (issue 33's target: at least 0.95), the median of the
rounds' ratios. Next to each throughput, the loaded server's own CPU per request (or per
message delivered) from /proc: on this shared machine a round's throughput swings by a
third with what else runs, the CPU a request costs the server much less.

ES256 without a Python crypto package: openssl makes the key and signs; the DER
signature is turned into JOSE's r||s here. Started by deploy/local/bench; prints and
writes JSON.
"""
import base64, json, os, statistics, subprocess, sys, tempfile, time, urllib.request, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from deflate_fanout import cpu_seconds  # noqa: E402
from gateway import load  # noqa: E402
from write_path import free_port, machine, run_wrk, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class ES256:
    """A P-256 key made by openssl, its JWK Set, and tokens it signs."""

    def __init__(self, folder):
        self.key = os.path.join(folder, "es256.pem")
        subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.key], check=True)
        public = subprocess.run(["openssl", "ec", "-in", self.key, "-pubout", "-outform", "DER"], check=True,
                                capture_output=True).stdout
        point = public[-65:]  # 0x04 || x || y
        self.jwks = os.path.join(folder, "jwks.json")
        with open(self.jwks, "w") as f:
            json.dump({"keys": [{"kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256", "use": "sig",
                                 "x": b64url(point[1:33]), "y": b64url(point[33:])}]}, f)

    def token(self, claims):
        signing_input = (b64url(json.dumps({"alg": "ES256", "kid": "bench", "typ": "JWT"}).encode()) + "."
                         + b64url(json.dumps(claims).encode()))
        der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signing_input.encode(), check=True,
                             capture_output=True).stdout
        return signing_input + "." + b64url(self.raw_signature(der))

    @staticmethod
    def raw_signature(der):
        """SEQUENCE { INTEGER r, INTEGER s } -> r || s, 32 bytes each."""
        def integer(at):
            assert der[at] == 0x02
            length = der[at + 1]
            value = der[at + 2:at + 2 + length]
            return value.lstrip(b"\x00").rjust(32, b"\x00"), at + 2 + length
        start = 2 if der[1] < 0x80 else 3
        r, after = integer(start)
        s, _ = integer(after)
        return r + s


def call(port, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers=headers,
                                     data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read() or b"null")


def start(binary, database_url, *extra):
    """`serve` on free ports; (process, http port, ws port) once ready."""
    port, ws_port = free_port(), free_port()
    server = subprocess.Popen([binary, "serve", "--database-url", database_url, "--host", "127.0.0.1",
                               "--http-port", str(port), "--ws-port", str(ws_port), "--log-level", "error", *extra])
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return server, port, ws_port
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def fixtures(port, token, markers):
    """A space, a session to write into, and a session holding `markers` markers."""
    space = call(port, "POST", "/api/v1/spaces", {"key": f"bench-{uuid.uuid4()}", "name": "bench"}, token)
    writes = call(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]}, token)["id"]
    listed = call(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]}, token)["id"]
    quad = {"p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}
    for start_at in range(0, markers, 1000):
        batch = [dict(quad, work_session_id=listed, label=f"m{i}") for i in range(start_at, min(markers, start_at + 1000))]
        call(port, "POST", "/api/v1/markers/bulk", {"markers": batch}, token)
    fanout = call(port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]}, token)["id"]
    return writes, listed, fanout


def main():
    args = command_line(database_url=REQUIRED, binary=REQUIRED, load=(REQUIRED, "the gateway-load binary"), markers=500,
                        subscribers=1000, seconds=6, repeat=10, output=os.path.join(HERE, "results", "auth.json"))

    subprocess.run([args.binary, "migrate", "--database-url", args.database_url], check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as folder:
        key = ES256(folder)
        token = key.token({"sub": "bench", "tenant": "bench", "scope": "admin", "exp": int(time.time()) + 6 * 3600})
        # One subject of one tenant makes every request and opens every subscription here:
        # the limits per subject and per tenant (REST and WebSocket; the hostile benchmark
        # measures those) are lifted on both servers, as the per-client request limit is
        # (ROBOSCOPE_RATE_LIMIT=0), so that this measures what authentication costs, not
        # what the limits refuse.
        unlimited = ("--tenant-rate-limit", "0", "--ws-op-rate", "100000", "--ws-subject-op-rate", "100000",
                     "--ws-tenant-op-rate", "100000")
        servers = {"off": start(args.binary, args.database_url, *unlimited),
                   "on": start(args.binary, args.database_url, "--auth-jwks-file", key.jwks, "--auth-allow-any-audience",
                                "--auth-allow-any-issuer", *unlimited)}
        tokens = {"off": None, "on": token}
        try:
            sessions = {mode: fixtures(servers[mode][1], tokens[mode], args.markers) for mode in servers}
            rounds = []
            for round_number in range(args.repeat):
                figures = {}
                # Every run adds rows to the same tables: the order alternates between
                # rounds, so that neither side always runs on the bigger tables.
                for mode in (("off", "on") if round_number % 2 == 0 else ("on", "off")):
                    server, port, ws_port = servers[mode]
                    writes, listed, fanout = sessions[mode]
                    environment = dict(os.environ, BENCH_SESSION_IDS=writes, BENCH_IDEMPOTENCY_KEYS="1")
                    if tokens[mode]:
                        environment["BENCH_AUTHORIZATION"] = f"Bearer {tokens[mode]}"
                    cpu = [cpu_seconds(server.pid)]
                    write = run_wrk(f"http://127.0.0.1:{port}/api/v1/markers", 32, args.seconds, script="post_marker.lua",
                                    env=environment)
                    cpu.append(cpu_seconds(server.pid))
                    listing = run_wrk(f"http://127.0.0.1:{port}/api/v1/markers?work_session_id={listed}", 8, args.seconds,
                                      script="get_with_token.lua", env=environment)
                    cpu.append(cpu_seconds(server.pid))
                    options = dict(mode="gateway", ws_port=ws_port, http_port=port, session=fanout, server_pid=server.pid,
                                   connections=args.subscribers, threads=2, seconds=args.seconds, rate=0, writers=4)
                    if tokens[mode]:
                        options["token"] = tokens[mode]
                    fan = load(args.load, **options)
                    cpu.append(cpu_seconds(server.pid))
                    per = lambda index, count, cpu=cpu: (cpu[index + 1] - cpu[index]) * 1e6 / max(1, count)
                    assert fan["subscribed"] == args.subscribers, f"{mode}: {fan['subscribed']} of {args.subscribers} subscribed"
                    figures[mode] = {"write_rps": write["requests_per_second"], "write_non_2xx": write["non_2xx"],
                                     "list_rps": listing["requests_per_second"], "list_non_2xx": listing["non_2xx"],
                                     "fanout_messages_per_second": fan["messages_per_second"],
                                     "fanout_matched": fan.get("deliveries_matched"), "fanout_expected": fan.get("deliveries_expected"),
                                     "write_cpu_us": per(0, write["requests_per_second"] * args.seconds),
                                     "list_cpu_us": per(1, listing["requests_per_second"] * args.seconds),
                                     "fanout_cpu_us": per(2, fan["messages_received"])}
                # Throughput on/off; CPU off/on, so that for both, below 1 is what authorization costs.
                figures["ratio"] = {name: figures["on"][name] / figures["off"][name]
                                    for name in ("write_rps", "list_rps", "fanout_messages_per_second") if figures["off"][name]}
                figures["ratio"].update({name: figures["off"][name] / figures["on"][name]
                                         for name in ("write_cpu_us", "list_cpu_us", "fanout_cpu_us") if figures["on"][name]})
                rounds.append(figures)
        finally:
            for server, _, _ in servers.values():
                server.terminate()
                server.wait(timeout=30)

    median = lambda mode, name: statistics.median(r[mode][name] for r in rounds)
    result = {"machine": machine(), "markers": args.markers, "subscribers": args.subscribers,
              "seconds_per_run": args.seconds, "repeat": args.repeat, "rounds": rounds,
              "median": {mode: {name: median(mode, name) for name in rounds[0][mode]}
                         for mode in ("off", "on", "ratio")}}
    save_results(result, args.output)
    m = result["median"]
    print(f"authentication off vs on (ES256, tenant, scope), {args.repeat} rounds of {args.seconds} s, medians:")
    print(f"  write path, 32 clients: {m['off']['write_rps']:.0f} vs {m['on']['write_rps']:.0f} requests/s, "
          f"on/off {m['ratio']['write_rps']:.3f}")
    print(f"  list of {args.markers} markers, 8 clients: {m['off']['list_rps']:.0f} vs {m['on']['list_rps']:.0f} requests/s, "
          f"on/off {m['ratio']['list_rps']:.3f}")
    print(f"  fan-out to {args.subscribers} subscribers: {m['off']['fanout_messages_per_second']:.0f} vs "
          f"{m['on']['fanout_messages_per_second']:.0f} messages/s, on/off {m['ratio']['fanout_messages_per_second']:.3f}")
    print("  server CPU per request (per message for fan-out), off vs on, off/on: "
          + ", ".join(f"{label} {m['off'][name]:.0f} vs {m['on'][name]:.0f} µs ({m['ratio'][name]:.3f})"
                      for label, name in (("write", "write_cpu_us"), ("list", "list_cpu_us"), ("fan-out", "fanout_cpu_us"))))
    print(f"  non-2xx: {sum(r[mode]['write_non_2xx'] + r[mode]['list_non_2xx'] for r in rounds for mode in ('off', 'on'))}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
