#!/usr/bin/env python3
"""Hostile clients next to well-behaved ones (issue 34): N well-behaved WebSocket
subscribers of one work session while writes come at R a second (gateway-load), once
quiet and once with 20 hostile connections, in alternating runs of the same server:

- 5 churn subscriptions: bursts of `subscribe since:0` / `unsubscribe` pairs on a topic
  of about 10,000 events;
- 5 spam presence: bursts of `presence` ops for made-up sessions and users;
- 5 flood long polls: 100 polls each of the changes feed on the big topic, opened again
  as soon as one is answered (a refused one waits its `Retry-After`);
- 5 read slowly: `subscribe since:0` on the big topic through a 4 KiB receive buffer,
  and never read.

Reported, quiet against hostile: every event delivered to the well-behaved subscribers,
their p99 delivery latency (target: within 1.5x of quiet), and the server's peak
resident memory during the run (target: within 64 MiB of quiet); with the gateway's
counts of what it refused and read. The hostile clients are paced (a burst every half
second) and run in a process of their own at the lowest CPU priority: on this machine
they share two cores with the server and the load generator, where in the field they
run on machines of their own, so what they cost the server is measured, not what their
own CPU takes from it. Started by deploy/local/bench (`hostile`); prints a table and writes JSON.
"""
import asyncio, base64, json, multiprocessing, os, re, socket, struct, sys, threading, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bytes_on_the_wire import session_with_markers  # noqa: E402
from gateway import load  # noqa: E402
from write_path import exchange, free_port, machine, metric, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402

UPGRADE = ("GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")


def frame(message):
    """A masked text frame of `message` (JSON), as a client sends it."""
    payload = json.dumps(message).encode()
    mask = os.urandom(4)
    length = len(payload)
    head = bytes([0x81, 0x80 | length]) if length < 126 else bytes([0x81, 0x80 | 126]) + struct.pack(">H", length)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def resident_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class PeakMemory:
    """The highest VmRSS of a process while it is watched (sampled every 100 ms)."""

    def __init__(self, pid):
        self.pid, self.peak, self.done = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self):
        while not self.done.is_set():
            self.peak = max(self.peak, resident_kib(self.pid))
            self.done.wait(0.1)

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.peak


class Hostile:
    """The 20 hostile connections: the slow readers here (plain sockets that do nothing
    once subscribed), the rest on an asyncio loop in a forked process at nice 19."""

    def __init__(self, http_port, ws_port, topic, head):
        self.http_port, self.ws_port, self.topic, self.head = http_port, ws_port, topic, head
        context = multiprocessing.get_context("fork")
        self.stopping, self.started, self.results = context.Event(), context.Event(), context.SimpleQueue()
        self.counts = {"churn_bursts": 0, "presence_bursts": 0, "polls_answered": 0, "polls_refused": 0}
        self.slow = []
        self.process = context.Process(target=self.serve, daemon=True)

    def serve(self):
        os.nice(19)
        asyncio.run(self.run())
        self.results.put(self.counts)

    def start(self):
        for _ in range(5):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", self.ws_port))
            sock.sendall(UPGRADE.format(key=base64.b64encode(os.urandom(16)).decode()).encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(1)
            assert answer.startswith(b"HTTP/1.1 101"), answer
            sock.sendall(frame({"op": "subscribe", "topic": self.topic, "since": 0}))
            self.slow.append(sock)
        self.process.start()
        assert self.started.wait(60), "the hostile clients did not start"

    def stop(self):
        self.stopping.set()
        counts = self.results.get()
        self.process.join(60)
        for sock in self.slow:
            sock.close()
        return counts

    async def websocket(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.ws_port)
        writer.write(UPGRADE.format(key=base64.b64encode(os.urandom(16)).decode()).encode())
        await writer.drain()
        answer = await reader.readuntil(b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 101"), answer
        return reader, writer

    async def drain(self, reader):
        """Reads and drops whatever the server sends (these clients are hostile, not slow)."""
        while await reader.read(65536):
            pass

    async def bursts(self, build, counter):
        reader, writer = await self.websocket()
        draining = asyncio.create_task(self.drain(reader))
        while not self.stopping.is_set():
            writer.write(b"".join(frame(message) for message in build()))
            await writer.drain()
            self.counts[counter] += 1
            await asyncio.sleep(0.5)
        draining.cancel()
        writer.close()

    def churn(self):
        return [message for _ in range(20) for message in (
            {"op": "subscribe", "topic": self.topic, "since": 0}, {"op": "unsubscribe", "topic": self.topic})]

    def presence(self):
        return [{"op": "presence", "work_session_id": str(uuid.uuid4()), "user_id": f"spam-{uuid.uuid4()}"} for _ in range(40)]

    async def poll(self):
        """One long poll after another on one connection, for as long as the run lasts."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.http_port)
        request = (f"GET /api/v1/changes?topic={self.topic}&since={self.head}&wait=30 HTTP/1.1\r\n"
                   f"Host: 127.0.0.1\r\n\r\n").encode()
        try:
            while not self.stopping.is_set():
                writer.write(request)
                await writer.drain()
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                length = int(re.search(r"(?im)^content-length: *(\d+)", head).group(1))
                await reader.readexactly(length)
                if head.startswith("HTTP/1.1 200"):
                    self.counts["polls_answered"] += 1
                else:
                    self.counts["polls_refused"] += 1
                    retry = re.search(r"(?im)^retry-after: *(\d+)", head)
                    await asyncio.sleep(int(retry.group(1)) if retry else 1)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run(self):
        tasks = [asyncio.create_task(self.bursts(self.churn, "churn_bursts")) for _ in range(5)]
        tasks += [asyncio.create_task(self.bursts(self.presence, "presence_bursts")) for _ in range(5)]
        tasks += [asyncio.create_task(self.poll()) for _ in range(5 * 100)]
        while min(self.counts["churn_bursts"], self.counts["presence_bursts"]) < 5:
            await asyncio.sleep(0.05)
        self.started.set()
        while not self.stopping.is_set():
            await asyncio.sleep(0.1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def newest(port, topic):
    """The topic's newest position, from its changes feed: where a long poll waits."""
    since = 0
    while True:
        page = json.loads(exchange(port, "GET", f"/api/v1/changes?topic={topic}&since={since}&limit=1000")[1])
        since = page["next_since"]
        if not page["has_more"]:
            return since


def gateway_counts(port):
    return {name: metric(port, series) for name, series in (
        ("rate_limited", "roboscope_ws_rate_limited_total"),
        ("withdrawn_grants", 'roboscope_ws_subscribe_answers_total{outcome="withdrawn"}'),
        ("catch_up_pages", "roboscope_ws_catch_up_pages_total"),
        ("catch_up_events", "roboscope_ws_catch_up_events_total"),
        ("slow_consumers_closed", "roboscope_ws_slow_consumers_total"),
        ("polls_waiting", "roboscope_changes_waiting"))}


def main():
    args = command_line(binary=REQUIRED, load=(REQUIRED, "the gateway-load binary"), subscribers=1000, rate=100.0,
                        seconds=20.0, markers=(4999, "markers on the hostile clients' topic (two events each)"),
                        repeat=2, output=None)

    ws_port = free_port()
    server, port, _, session = start_server(args.binary, "--ws-port", str(ws_port), "--ws-max-connections-per-client", "50000",
                                            "--rate-limit", "0", "--tenant-rate-limit", "0")
    runs = {"quiet": [], "hostile": []}
    try:
        big = session_with_markers(port, f"hostile-{uuid.uuid4()}", args.markers)
        topic = f"work_session:{big}"
        head = newest(port, topic)
        for _ in range(args.repeat):
            for name in ("quiet", "hostile"):
                # Counted from before the hostile clients connect: the slow readers' pages are
                # read as they subscribe.
                before = gateway_counts(port)
                hostile = Hostile(port, ws_port, topic, head) if name == "hostile" else None
                if hostile:
                    hostile.start()
                memory = PeakMemory(server.pid)
                run = load(args.load, mode="gateway", ws_port=ws_port, http_port=port, session=session,
                           connections=args.subscribers, threads=2, seconds=args.seconds, rate=args.rate, writers=1,
                           server_pid=server.pid)
                run["server_rss_kib_peak"] = memory.stop()
                after = gateway_counts(port)
                run["gateway"] = {key: after[key] - before[key] for key in after if key != "polls_waiting"}
                run["gateway"]["polls_waiting"] = after["polls_waiting"]
                if hostile:
                    run["hostile"] = hostile.stop()
                runs[name].append(run)
    finally:
        server.terminate()
        server.wait()

    def median(name, key):
        values = sorted(r[key] for r in runs[name])
        return values[len(values) // 2]

    p99 = {name: median(name, "latency_ms_p99") for name in runs}
    peak = {name: median(name, "server_rss_kib_peak") for name in runs}
    delivered = {name: all(r["deliveries_matched"] == r["deliveries_expected"] for r in runs[name]) for name in runs}
    result = {"machine": machine(), "subscribers": args.subscribers, "rate": args.rate, "seconds": args.seconds,
              "topic_events": 1 + 2 * args.markers, "runs": runs, "p99_ratio": p99["hostile"] / max(1e-9, p99["quiet"]),
              "rss_peak_difference_mib": (peak["hostile"] - peak["quiet"]) / 1024, "all_delivered": delivered}
    print(f"{args.subscribers} subscribers of one session, {args.rate:.0f} writes/s for {args.seconds:.0f} s, "
          f"quiet and with 20 hostile connections (median of {args.repeat}):")
    for name in ("quiet", "hostile"):
        for r in runs[name]:
            g = r["gateway"]
            print(f"  {name:<8} p50 {r['latency_ms_p50']:.1f} ms  p99 {r['latency_ms_p99']:.1f} ms  delivered "
                  f"{r['deliveries_matched']}/{r['deliveries_expected']}  peak RSS {r['server_rss_kib_peak'] / 1024:.0f} MiB  "
                  f"refused ops {g['rate_limited']:.0f}, withdrawn grants {g['withdrawn_grants']:.0f}, catch-up pages "
                  f"{g['catch_up_pages']:.0f} ({g['catch_up_events']:.0f} events), slow readers closed "
                  f"{g['slow_consumers_closed']:.0f}, polls waiting {g['polls_waiting']:.0f}"
                  + (f"; hostile: {r['hostile']}" if "hostile" in r else ""))
    print(f"  p99 hostile / quiet: {result['p99_ratio']:.2f} (target ≤ 1.5)")
    print(f"  peak RSS hostile - quiet: {result['rss_peak_difference_mib']:.1f} MiB (target ≤ 64)")
    print(f"  every event delivered: quiet {delivered['quiet']}, hostile {delivered['hostile']}")
    save_results(result, args.output)


if __name__ == "__main__":
    main()
