#!/usr/bin/env python3
"""Soak: does the server's memory plateau under steady, churning load?

For `--minutes` (30 by default): 4 writers at 50 requests/s in all create, patch, list
and delete markers over HTTP, and 200 WebSocket clients subscribe to a work session,
stay a few seconds, and go, a third of them without a close frame (the socket simply
closes), then come back. Every `--sample-seconds` the server's resident memory,
descriptors and threads are recorded; after the load stops, a minute more.

The figure: how much RSS grew over the last two thirds of the load (the median of the
samples in the minute at the one-third mark against the median of the last minute),
next to the target of less than 2 MiB. Started by deploy/local/bench (`soak`); writes
JSON with the whole curve, which benchmarks/report.py plots.
"""
import asyncio, base64, json, os, random, statistics, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import free_port, machine, request, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def process_figures(pid):
    """Resident KiB, open descriptors and threads of `pid`."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


def writer(port, session, rate, stop, tally):
    """Creates, patches, lists and deletes markers in `session`, `rate` requests/s."""
    interval, due = 1 / rate, time.monotonic()
    marker = None
    step = 0
    while not stop.is_set():
        due += interval
        try:
            if step % 4 == 0:
                status, body = request(port, "POST", "/api/v1/markers",
                                       {"work_session_id": session, "label": f"soak {step}", "p1": [0, 0, 1],
                                        "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]})
                marker = body.get("id") if status == 201 else None
            elif step % 4 == 1 and marker:
                status, _ = request(port, "PATCH", f"/api/v1/markers/{marker}", {"label": f"soak {step}"})
            elif step % 4 == 2:
                status, _ = request(port, "GET", f"/api/v1/markers?work_session_id={session}")
            elif marker:
                status, _ = request(port, "DELETE", f"/api/v1/markers/{marker}")
                marker = None
            else:
                status = 200
            tally["requests"] += 1
            if status >= 400:
                tally["failures"] += 1
        except OSError:
            tally["failures"] += 1
        step += 1
        time.sleep(max(0, due - time.monotonic()))


async def websocket_client(ws_port, session, stop, tally, rng):
    """Connects, subscribes, stays 1-5 s, leaves (a third without a close frame), again."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", ws_port)
            key = base64.b64encode(os.urandom(16)).decode()
            writer.write((f"GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
            await reader.readuntil(b"\r\n\r\n")
            writer.write(frame(0x1, json.dumps({"op": "subscribe", "topic": f"work_session:{session}"}).encode()))
            tally["connections"] += 1
            deadline = time.monotonic() + rng.uniform(1, 5)
            while time.monotonic() < deadline and not stop.is_set():
                try:
                    data = await asyncio.wait_for(reader.read(65536), timeout=max(0.05, deadline - time.monotonic()))
                    if not data:
                        break
                except TimeoutError:
                    break
            if rng.random() < 1 / 3:
                tally["vanished"] += 1  # no close frame: the socket just goes
            else:
                writer.write(frame(0x8, (1000).to_bytes(2, "big")))
                await writer.drain()
            writer.close()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            tally["failures"] += 1
            await asyncio.sleep(0.5)


def frame(opcode, payload):
    """A masked client frame (payloads here are short)."""
    mask = os.urandom(4)
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def websockets(ws_port, sessions, clients, stop, tally):
    async def main():
        rng = random.Random(7)
        await asyncio.gather(*(websocket_client(ws_port, sessions[i % len(sessions)], stop, tally, rng)
                               for i in range(clients)))
    asyncio.run(main())


def median_between(samples, start, end):
    values = [s["rss_kib"] for s in samples if start <= s["t"] <= end]
    return statistics.median(values) if values else None


def main():
    args = command_line(database_url=REQUIRED, redis_url=REQUIRED, binary=REQUIRED, minutes=30.0, sample_seconds=10.0,
                        rate=(50.0, "HTTP requests/s over the 4 writers"), clients=200,
                        after_seconds=(60.0, "how long to sample once the load stops"),
                        output=os.path.join(HERE, "results", "soak.json"))

    import subprocess
    subprocess.run([args.binary, "migrate", "--database-url", args.database_url], check=True, capture_output=True)
    ws_port = free_port()
    server, port, space, first = start_server(args.binary, "--database-url", args.database_url, "--redis-url", args.redis_url,
                                              "--ws-port", str(ws_port))
    sessions = [first] + [request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"] for _ in range(3)]
    stop = threading.Event()
    tally = {"requests": 0, "failures": 0, "connections": 0, "vanished": 0}
    ws_tally = {"connections": 0, "vanished": 0, "failures": 0}
    samples = []
    started = time.monotonic()

    def sample(phase):
        rss, fds, threads = process_figures(server.pid)
        samples.append({"t": round(time.monotonic() - started, 1), "phase": phase, "rss_kib": rss, "fds": fds,
                        "threads": threads, "requests": tally["requests"], "ws_connections": ws_tally["connections"]})

    try:
        sample("before")
        workers = [threading.Thread(target=writer, args=(port, sessions[i], args.rate / 4, stop, tally), daemon=True)
                   for i in range(4)]
        workers.append(threading.Thread(target=websockets, args=(ws_port, sessions, args.clients, stop, ws_tally), daemon=True))
        for worker in workers:
            worker.start()
        load_end = started + args.minutes * 60
        while time.monotonic() < load_end:
            time.sleep(args.sample_seconds)
            sample("load")
            if len(samples) % 30 == 0:
                print(f"{samples[-1]['t']:.0f} s: RSS {samples[-1]['rss_kib'] / 1024:.1f} MiB, "
                      f"{tally['requests']} requests, {ws_tally['connections']} WebSocket connections", flush=True)
        stop.set()
        for worker in workers:
            worker.join(timeout=30)
        stopped = time.monotonic() - started
        while time.monotonic() - started < stopped + args.after_seconds:
            time.sleep(args.sample_seconds)
            sample("after")
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)

    load_seconds = args.minutes * 60
    third = load_seconds / 3
    # A minute around the one-third mark and the last minute (less in a short smoke run).
    window = min(60, load_seconds / 6)
    at_third = median_between(samples, third - window / 2, third + window / 2) or samples[0]["rss_kib"]
    at_end = median_between(samples, load_seconds - window, load_seconds + args.sample_seconds) or samples[-1]["rss_kib"]
    load = [s for s in samples if s["phase"] == "load"]
    result = {"machine": machine(), "minutes": args.minutes, "rate": args.rate, "clients": args.clients,
              "sample_seconds": args.sample_seconds, "samples": samples,
              "requests": tally["requests"], "request_failures": tally["failures"],
              "ws_connections": ws_tally["connections"], "ws_vanished": ws_tally["vanished"], "ws_failures": ws_tally["failures"],
              "rss_mib_before": samples[0]["rss_kib"] / 1024, "rss_mib_at_third": at_third / 1024,
              "rss_mib_at_end": at_end / 1024, "rss_mib_after": samples[-1]["rss_kib"] / 1024,
              "growth_last_two_thirds_mib": (at_end - at_third) / 1024,
              "fds": {"before": samples[0]["fds"], "max": max(s["fds"] for s in load), "after": samples[-1]["fds"]},
              "threads": {"before": samples[0]["threads"], "max": max(s["threads"] for s in load), "after": samples[-1]["threads"]}}
    save_results(result, args.output)
    print(f"soak of {args.minutes:g} min: {tally['requests']} requests ({tally['failures']} failed), "
          f"{ws_tally['connections']} WebSocket connections ({ws_tally['vanished']} vanished without a close frame)")
    print(f"RSS: {result['rss_mib_before']:.1f} MiB before, {result['rss_mib_at_third']:.1f} at a third, "
          f"{result['rss_mib_at_end']:.1f} at the end, {result['rss_mib_after']:.1f} a minute after; "
          f"growth over the last two thirds {result['growth_last_two_thirds_mib']:+.2f} MiB (target < 2)")
    print(f"descriptors {result['fds']}, threads {result['threads']}")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
