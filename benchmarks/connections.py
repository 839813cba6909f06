#!/usr/bin/env python3
"""100,000 WebSocket connections held on this box (issue 51). A process here may open at
most 20,000 files (a hard limit that cannot be raised), so the gateway runs as several
processes sharing one port (`serve --role gateway --reuse-port`, the kernel spreading
the connections over them) and the load as several gateway-load processes, each from a
loopback address of its own (127.0.0.2, 127.0.0.3, ...: each address has ~28,000
ephemeral ports toward the port). Every connection subscribes to one of 1,000 work
sessions. The API (which takes the writes) is a process of its own.

Reported: the gateways' resident memory at 0 and at each step of the ramp, as KiB per
connection; their CPU while the connections sit idle (pings and timers), as a share of
one core; a write to a 100-subscriber session delivered to all, with its p99, while the
rest are held; and that every connection is still open at the end. Started by
deploy/local/bench (`connections`); prints lines and writes JSON.
"""
import json, math, os, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from deflate_fanout import cpu_seconds  # noqa: E402
from gateway import load  # noqa: E402
from hostile import resident_kib  # noqa: E402
from write_path import free_port, machine, metric, ready, request, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def main():
    args = command_line(binary=REQUIRED, database_url=(REQUIRED, "a fresh database"), load=(REQUIRED, "gateway-load"),
                        connections=100_000, steps=(8, "load processes; RSS is read after each"),
                        per_gateway=(15_000, "connections per gateway process, planned"), sessions=1000,
                        idle_seconds=(30.0, "one ping interval: every connection pinged once"), probe_subscribers=100,
                        probe_rate=10.0, probe_seconds=10.0, output=REQUIRED)

    gateways_wanted = max(1, math.ceil(args.connections / args.per_gateway))
    common = [args.binary, "serve", "--database-url", args.database_url, "--host", "127.0.0.1", "--log-level",
              "error"]
    processes = []
    holders = []
    result = {"machine": machine(), "connections_requested": args.connections, "gateways": gateways_wanted,
              "load_processes": args.steps, "sessions": args.sessions}
    try:
        api_port = free_port()
        api = subprocess.Popen(common + ["--role", "api", "--http-port", str(api_port), "--ws-port", str(free_port())])
        processes.append(api)
        ready(api_port)
        _, space = request(api_port, "POST", "/api/v1/spaces", {"key": f"held-{time.time_ns()}", "name": "held"})
        sessions = [request(api_port, "POST", "/api/v1/work-sessions", {"space_id": space["id"]})[1]["id"]
                    for _ in range(args.sessions + 1)]
        probe_session, sessions = sessions[0], sessions[1:]

        ws_port = free_port()
        gateways = []
        for _ in range(gateways_wanted):
            probe = free_port()
            gateway = subprocess.Popen(common + [
                "--role", "gateway", "--no-migrate", "--reuse-port", "--http-port", str(probe), "--ws-port",
                str(ws_port), "--ws-threads", "1", "--ws-max-connections-per-client", str(args.connections * 2)])
            processes.append(gateway)
            ready(probe)
            gateways.append((gateway, probe))
        pids = [gateway.pid for gateway, _ in gateways]

        def held():
            return sum(metric(probe, "roboscope_ws_connections") for _, probe in gateways)

        def rss():
            return sum(resident_kib(pid) for pid in pids)

        def idle_share():
            before = sum(cpu_seconds(pid) for pid in pids)
            time.sleep(args.idle_seconds)
            return (sum(cpu_seconds(pid) for pid in pids) - before) / args.idle_seconds

        # What the gateways cost with nobody connected (their loops, tailers, workers).
        result["idle_core_share_empty"] = idle_share()
        rss_empty = rss()
        steps = [{"connections": 0, "rss_kib": rss_empty}]
        print(f"connections: {gateways_wanted} gateways on port {ws_port}, {rss_empty / 1024:.0f} MiB resident",
              flush=True)
        per_step = math.ceil(args.connections / args.steps)
        opened = 0
        for step in range(args.steps):
            count = min(per_step, args.connections - opened)
            started = time.monotonic()
            holder = subprocess.Popen(
                [args.load, "--mode", "gateway", "--hold", "--ws-port", str(ws_port), "--http-port", str(api_port),
                 "--connections", str(count), "--threads", "2", "--session", ",".join(sessions),
                 "--seconds", "3600", "--source-address", f"127.0.0.{step + 2}"],
                stdout=subprocess.PIPE, text=True)
            holders.append(holder)
            line = holder.stdout.readline()
            if not line.startswith('{"held"'):
                raise SystemExit(f"load process {step} ended before holding: {line!r}")
            opened += json.loads(line)["held"]
            seconds = time.monotonic() - started
            now = rss()
            steps.append({"connections": opened, "rss_kib": now, "open_seconds": seconds, "gateway_count": held()})
            print(f"connections: {opened:,} held ({held():,.0f} by the gateways' count) in {seconds:.1f} s, "
                  f"{now / 1024:.0f} MiB resident, {(now - rss_empty) / max(1, opened):.2f} KiB per connection",
                  flush=True)
        result["steps"] = steps

        # Idle: pings and timers only.
        idle = idle_share()
        result["idle_core_share"] = idle
        print(f"connections: idle with {opened:,}: {idle * 100:.1f}% of a core (all gateways; "
              f"{result['idle_core_share_empty'] * 100:.1f}% with none)", flush=True)

        # A write to a session of 100 subscribers, while the rest are held.
        probe = load(args.load, mode="gateway", ws_port=ws_port, http_port=api_port, session=probe_session,
                     connections=args.probe_subscribers, threads=1, rate=args.probe_rate,
                     seconds=args.probe_seconds, source_address=f"127.0.0.{args.steps + 2}")
        result["probe"] = {key: probe.get(key) for key in (
            "connections_opened", "writes", "deliveries_expected", "deliveries_matched", "latency_ms_p50",
            "latency_ms_p99", "latency_ms_max")}
        print(f"connections: a write to {probe.get('connections_opened')} subscribers: "
              f"{probe.get('deliveries_matched')}/{probe.get('deliveries_expected')} delivered, "
              f"p99 {probe.get('latency_ms_p99', 0):.1f} ms", flush=True)

        # Every connection still open at the end.
        closed = 0
        for holder in holders:
            holder.send_signal(signal.SIGUSR1)
            report = json.loads(holder.stdout.read().strip().splitlines()[-1])
            closed += report.get("closed_while_held", 0)
            holder.wait(timeout=120)
        result["connections_held"] = opened
        result["closed_while_held"] = closed
        result["gateways_alive"] = sum(1 for gateway, _ in gateways if gateway.poll() is None)
        end = steps[-1]
        result["kib_per_connection"] = (end["rss_kib"] - rss_empty) / max(1, opened)
        print(f"connections: {opened:,} held, {closed} closed while held, {result['gateways_alive']}/"
              f"{len(gateways)} gateways alive; {result['kib_per_connection']:.2f} KiB per connection", flush=True)
    finally:
        for holder in holders:
            if holder.poll() is None:
                holder.kill()
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    save_results(result, args.output)


if __name__ == "__main__":
    main()
