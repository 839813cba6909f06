#!/usr/bin/env python3
"""Time to catch up over a slow link (issue 37): a work session's topic of `--events`
events caught up by a client on the far side of a link shaped to 2 Mbit/s and 100 ms
round trip, over the WebSocket (`since: 0`, no extension and permessage-deflate as the
kit offers it) and over the changes feed (identity and gzip), runs alternating, in the
same run.

The link: a veth pair into a network namespace this script makes, each side's egress
limited by the kernel's token bucket (`tc qdisc ... tbf rate 2mbit`). The delay would be
`tc netem`, but this machine's kernel has no sch_netem ("Specified qdisc kind is
unknown"), so it is a relay inside the namespace that holds every chunk half the round
trip in each direction before passing it on. The server runs in the machine's
namespace; the client is a forked process that joins the new one (setns) and talks to
the relay, so only its traffic crosses the shaped link.

Needs root, `ip` and `tc` (iproute2): without them it writes that it was skipped.
Started by deploy/local/bench (`shaped`); prints a table and writes JSON.
"""
import asyncio, ctypes, gzip, http.client, json, multiprocessing, os, shutil, socket, statistics, subprocess, threading, time

from bytes_on_the_wire import session_with_markers, websocket_catch_up
from sync import serve
from write_path import free_port, fresh_database, machine, save_results
from command_line import command_line, REQUIRED

SERVER_ADDRESS, CLIENT_ADDRESS = "10.201.0.1", "10.201.0.2"


def sh(*command):
    subprocess.run(command, check=True, capture_output=True)


def shaped_link(name, rate):
    """A namespace `name` joined to this one by a veth pair, each side's egress rate-limited."""
    host, far = f"{name}h", f"{name}n"
    sh("ip", "netns", "add", name)
    sh("ip", "link", "add", host, "type", "veth", "peer", "name", far)
    sh("ip", "link", "set", far, "netns", name)
    sh("ip", "addr", "add", f"{SERVER_ADDRESS}/30", "dev", host)
    sh("ip", "link", "set", host, "up")
    sh("ip", "netns", "exec", name, "ip", "addr", "add", f"{CLIENT_ADDRESS}/30", "dev", far)
    sh("ip", "netns", "exec", name, "ip", "link", "set", far, "up")
    sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
    for prefix, device in (((), host), (("ip", "netns", "exec", name), far)):
        sh(*prefix, "tc", "qdisc", "add", "dev", device, "root", "tbf", "rate", rate, "burst", "32kbit", "latency", "400ms")


def delaying_relay(target, delay):
    """Listens on a free loopback port (in the caller's namespace) and relays each connection
    to `target`, every chunk held `delay` seconds in each direction; returns the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    # Listening before the port is handed back: the relay's thread may not have reached
    # start_server when the caller connects, and a bound socket that is not yet listening
    # refuses (what failed CI once).
    listener.listen(64)
    port = listener.getsockname()[1]

    async def pipe(reader, writer):
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        async def deliver():
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0, due - loop.time()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await sender

    async def relay(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection(*target)
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer), return_exceptions=True)

    async def run():
        server = await asyncio.start_server(relay, sock=listener)
        await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(run()), daemon=True).start()
    return port


def remove_link(name):
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def enter_namespace(name):
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/var/run/netns/{name}") as handle:
        if libc.setns(handle.fileno(), 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "setns")


def changes_feed(port, topic, encoding):
    """Every page of the topic's changes feed on one connection: (bytes, events)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    since, wire, events = 0, 0, 0
    while True:
        connection.request("GET", f"/api/v1/changes?topic={topic}&since={since}&limit=1000",
                           headers={"Accept-Encoding": encoding})
        reply = connection.getresponse()
        body = reply.read()
        wire += len(body)
        if reply.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        page = json.loads(body)
        events += len(page["data"])
        since = page["next_since"]
        if not page["has_more"]:
            break
    connection.close()
    return wire, events


def client(name, port, ws_port, topic, events, repeat, rtt_ms, results):
    """In the namespace: each way `repeat` times, alternating; seconds and bytes of each."""
    enter_namespace(name)
    port = delaying_relay((SERVER_ADDRESS, port), rtt_ms / 2000)
    ws_port = delaying_relay((SERVER_ADDRESS, ws_port), rtt_ms / 2000)
    ways = {
        "websocket, no extension": lambda: websocket_catch_up(ws_port, topic, events, None)[0],
        "websocket, permessage-deflate": lambda: websocket_catch_up(
            ws_port, topic, events, "permessage-deflate; client_max_window_bits")[0],
        "changes feed, identity": lambda: changes_feed(port, topic, "identity")[0],
        "changes feed, gzip": lambda: changes_feed(port, topic, "gzip")[0],
    }
    measured = {way: {"seconds": [], "bytes": 0} for way in ways}
    for _ in range(repeat):
        for way, run in ways.items():
            started = time.perf_counter()
            measured[way]["bytes"] = run()
            measured[way]["seconds"].append(time.perf_counter() - started)
    results.put(measured)


def main():
    args = command_line(admin_url=REQUIRED, binary=REQUIRED,
                        events=(10000, "marker events on the topic (two per marker)"), rate="2mbit", rtt_ms=100,
                        repeat=2, output=None)
    missing = [tool for tool in ("ip", "tc") if not shutil.which(tool)]
    if os.geteuid() != 0 or missing:
        reason = "needs root" if os.geteuid() != 0 else f"needs {', '.join(missing)} (iproute2)"
        print(f"shaped catch-up: skipped ({reason})")
        save_results({"machine": machine(), "skipped": reason}, args.output)
        return

    url = fresh_database(args.admin_url, "roboscope_bench_shaped")
    ws_port = free_port()
    server, port = serve(args.binary, url, extra=("--rate-limit", "0", "--tenant-rate-limit", "0", "--role", "all", "--host", "0.0.0.0",
                                                  "--ws-port", str(ws_port), "--ws-max-catch-up", "1000000"))
    name = f"rbshape{os.getpid() % 100000}"
    try:
        total = max(1, args.events // 2)
        session = session_with_markers(port, "shaped", total)
        events = 1 + 2 * total
        shaped_link(name, args.rate)
        results = multiprocessing.get_context("fork").SimpleQueue()
        worker = multiprocessing.get_context("fork").Process(
            target=client, args=(name, port, ws_port, f"work_session:{session}", events, args.repeat, args.rtt_ms, results))
        worker.start()
        worker.join(timeout=3600)
        assert worker.exitcode == 0, f"the client in the namespace failed ({worker.exitcode})"
        measured = results.get()
    finally:
        remove_link(name)
        server.terminate()
        server.wait()

    for way in measured.values():
        way["median_seconds"] = statistics.median(way["seconds"])
    pairs = [("websocket, no extension", "websocket, permessage-deflate"), ("changes feed, identity", "changes feed, gzip")]
    result = {"machine": machine(), "events": events, "rate": args.rate, "rtt_ms": args.rtt_ms, "repeat": args.repeat,
              "ways": measured, "ratios": {after: measured[after]["median_seconds"] / measured[before]["median_seconds"]
                                           for before, after in pairs}}
    print(f"catch-up of {events:,} events over {args.rate}, {args.rtt_ms} ms round trip (median of {args.repeat}):")
    for before, after in pairs:
        for way in (before, after):
            m = measured[way]
            print(f"  {way:<32}{m['median_seconds']:>8.1f} s {m['bytes']:>12,} bytes  (runs: "
                  f"{', '.join('%.1f' % s for s in m['seconds'])})")
        print(f"  {'compressed / as it is':<32}{result['ratios'][after]:>8.2f}")
    save_results(result, args.output)


if __name__ == "__main__":
    main()
