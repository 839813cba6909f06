#!/usr/bin/env python3
"""Gateway benchmark: N WebSocket subscribers on one work session while a writer posts
markers over HTTP; and the shapes collaboration has (`--shapes`: C connections over S
work sessions at R writes/s, each connection following one session, the writes going
round them), every delivery counted. Reports delivery latency from the HTTP response to receipt at every
subscriber (p50, p99), messages delivered per second, 10,000 held connections and the
server's resident memory per idle connection. In the same run, the same load against
a broadcast server built on hummingbird-websocket (benchmarks/reference-broadcast),
and the ratio of messages per second.

Started by deploy/local/bench; prints a table and writes JSON.
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from write_path import free_port, ready, save_results, sessions_in, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def load(tool, pin=None, **options):
    """One gateway-load run, `options` as its flags; `pin`: the cores it may run on (taskset)."""
    arguments = (["taskset", "-c", str(pin)] if pin is not None else []) + [tool]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        arguments += [flag] if value is True else [flag, str(value)]
    out = subprocess.run(arguments, check=True, capture_output=True, text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


def start_reference(binary):
    port = free_port()
    server = subprocess.Popen([binary, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ready(port, path=None, seconds=30)
    return server, port


def sweep_point(args, count, port, ws_port, session, server, reference, reference_port):
    """One subscriber count: delivery latency at the asked write rate and messages per
    second flat out, for the gateway and for the reference server, `repeat` times each."""
    common = dict(connections=count, threads=2, seconds=args.seconds)
    gateway = dict(mode="gateway", ws_port=ws_port, http_port=port, session=session, server_pid=server.pid)
    ours = dict(mode="reference", ws_port=reference_port, ws_path="/ws", http_port=reference_port,
                session=session, server_pid=reference.pid) if reference else None
    # Flat out: four writers as fast as responses come back.
    flat = dict(common, seconds=min(args.seconds, 10), rate=0, writers=4)
    runs = {name: [] for name in ("gateway_latency", "reference_latency", "gateway_throughput", "reference_throughput")}
    for _ in range(args.repeat):
        runs["gateway_latency"].append(load(args.load, rate=args.rate, **gateway, **common))
        runs["gateway_throughput"].append(load(args.load, **gateway, **flat))
        if ours:
            runs["reference_latency"].append(load(args.load, rate=args.rate, **ours, **common))
            runs["reference_throughput"].append(load(args.load, **ours, **flat))
    runs = {name: attempts for name, attempts in runs.items() if attempts}
    point = {"subscribers": count, "runs": runs}
    # Each scenario's reported run: the median by its key figure.
    for name, attempts in runs.items():
        key = "latency_ms_p99" if name.endswith("latency") else "messages_per_second"
        point[name] = sorted(attempts, key=lambda r: r[key])[len(attempts) // 2]
    if ours:
        point["throughput_ratio"] = point["gateway_throughput"]["messages_per_second"] / max(
            1, point["reference_throughput"]["messages_per_second"])
    return point


def shape(args, text, port, ws_port, space, first_session, server):
    """One shape "CxS@R": `repeat` runs of C connections over S work sessions at R writes/s."""
    connections, rest = text.split("x")
    count, rate = rest.split("@")
    connections, count, rate = int(connections), int(count), float(rate)
    sessions = [first_session] + sessions_in(port, space, count - 1)
    # A writer waits for each response: enough of them that the rate is not capped by one's latency.
    writers = max(1, int(rate // 40))
    runs = [load(args.load, mode="gateway", ws_port=ws_port, http_port=port, session=",".join(sessions),
                 connections=connections, threads=2, seconds=args.seconds, rate=rate, writers=writers,
                 server_pid=server.pid) for _ in range(args.repeat)]
    return {"shape": text, "connections": connections, "sessions": count, "rate": rate, "writers": writers, "runs": runs}


def hold(args, port, ws_port, session, server):
    return load(args.load, mode="gateway", ws_port=ws_port, http_port=port, session=session,
                connections=args.held, threads=2, seconds=min(10, args.seconds), hold=True, server_pid=server.pid)


def row(name, r):
    """One run as a line of the printed table."""
    return (f"{name:<22} {r['connections_opened']:>6} {r.get('writes_per_second', 0):>9.1f} "
            f"{r.get('messages_per_second', 0):>12.0f} {r.get('latency_ms_p50', 0):>8.1f} "
            f"{r.get('latency_ms_p99', 0):>8.1f} {r.get('deliveries_matched', 0):>9}/{r.get('deliveries_expected', 0)}")


def held_text(held):
    return (f"held: {held['connections_opened']} of {held['connections_requested']} connections opened in "
            f"{held['open_seconds']:.1f} s, all subscribed after {held.get('subscribe_seconds', 0):.1f} s, "
            f"{held['closed_while_held']} closed while held, "
            f"{held['server_rss_bytes_per_connection'] / 1024:.1f} KiB resident per idle connection")


def held_only(args):
    """Re-measures the held connections on a fresh server and replaces them in the results."""
    with open(args.out) as file:
        results = json.load(file)
    server, port, _, session = start_server(
        args.binary, "--ws-port", str(ws_port := free_port()), "--ws-max-connections-per-client", "50000")
    try:
        results["held"] = hold(args, port, ws_port, session, server)
    finally:
        server.terminate()
        server.wait()
    save_results(results, args.out, indent=2, sort_keys=True)
    print_shapes_and_held(results)


def print_shapes_and_held(results):
    """The runs of each shape of load, then what holding the connections showed."""
    for point in results.get("shapes", []):
        print(f"{point['connections']} connections over {point['sessions']} work sessions at {point['rate']:.0f} writes/s "
              f"({point['writers']} writers):")
        for r in point["runs"]:
            print(row("  run", r) + f"  max {r['latency_ms_max']:.1f} ms, closed {r['closed_during_run']}")
    print(held_text(results["held"]))


def main():
    args = command_line(binary=REQUIRED, load=(REQUIRED, "the gateway-load binary"),
                        reference=(None, "the reference-broadcast binary"),
                        no_reference=(False, "measure the gateway alone (the report says so)"),
                        subscribers=("10,100,1000,10000", "subscriber counts of the fan-out sweep"), rate=100.0,
                        seconds=20.0, held=10000, repeat=(3, "runs of each latency and throughput scenario"),
                        out=os.path.join(HERE, "results", "gateway.json"),
                        shapes=("1000x1@100,10000x1@10,10000x1000@500",
                                "connections x work sessions @ writes/s, comma-separated; empty for none"),
                        shapes_only=(False, "measure only the shapes, into the existing results"),
                        held_only=(False, "measure only the held connections, into the existing results"))
    if args.held_only:
        return held_only(args)
    if not args.reference and not args.no_reference:
        raise SystemExit("gateway: --reference or --no-reference is required")

    counts = [int(c) for c in args.subscribers.split(",")] if args.subscribers else []
    if args.shapes_only:
        with open(args.out) as file:
            results = json.load(file)
    else:
        results = {"machine": {"cores": os.cpu_count()}, "rate": args.rate, "seconds": args.seconds, "repeat": args.repeat,
                   "fanout": []}
    server, port, space, session = start_server(
        args.binary, "--ws-port", str(ws_port := free_port()), "--ws-max-connections-per-client", "50000")
    reference, reference_port = start_reference(args.reference) if args.reference and not args.shapes_only else (None, None)
    try:
        if not args.shapes_only:
            # Held connections first, while the process has never held more: its resident
            # memory before and after is then the connections' own.
            results["held"] = hold(args, port, ws_port, session, server)
            for count in counts:
                results["fanout"].append(sweep_point(args, count, port, ws_port, session, server, reference, reference_port))
        results["shapes"] = [shape(args, text, port, ws_port, space, session, server)
                             for text in args.shapes.split(",") if text]
    finally:
        for process in (server, reference):
            if process:
                process.terminate()
                process.wait()

    save_results(results, args.out, indent=2, sort_keys=True)

    print(f"median of {args.repeat} runs (by p99 for latency, by messages/s for throughput); {args.rate:g} writes/s asked")
    print(f"{'scenario':<22} {'conns':>6} {'writes/s':>9} {'messages/s':>12} {'p50 ms':>8} {'p99 ms':>8} delivered")
    for point in results["fanout"]:
        for name in ("gateway_latency", "reference_latency", "gateway_throughput", "reference_throughput"):
            if name not in point:
                print(f"{name:<22} not run")
                continue
            print(row(name, point[name]))
            spread = [r["latency_ms_p99"] if name.endswith("latency") else r["messages_per_second"] for r in point["runs"][name]]
            print(f"{'':<22} all runs: {', '.join(f'{v:.1f}' for v in spread)}")
        if "throughput_ratio" in point:
            print(f"{point['subscribers']} subscribers: messages/s, gateway vs hummingbird-websocket: {point['throughput_ratio']:.2f}x")
    print_shapes_and_held(results)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
