#!/usr/bin/env python3
"""permessage-deflate on the gateway (issue 37): fan-out to N subscribers of one work
session with writers flat out, next to the same load with no extension, in the same run
(runs alternate; the median of each by messages per second); and the server's resident
memory per idle connection held with and without the extension, each on a fresh server
process (so that no memory freed by one run is reused by the next).

Two ways of reading deflate, because the N subscribers share the machine's two cores
with the server:
- `deflate` offers what the kit offers and every connection inflates every message it
  receives: N inflations per event, on the server's cores, which a fleet of devices
  would do on their own CPUs.
- `deflate_shared` offers `server_no_context_takeover` as well, so that each message
  inflates on its own; the load generator inflates each distinct message once per
  thread and recognises the copies by their bytes (gateway-load `--deflate-shared`).
  For live events the gateway does the same in both: it compresses each event once,
  without context, and queues the same bytes to every subscriber (docs/websocket.md).
  This is the target's figure: what the gateway delivers, apart from the load
  generator's inflation.
The server's own CPU per message delivered (from /proc) is reported for each.

Targets: messages per second with deflate at least 0.8 of without; under 16 KiB per
idle connection that negotiated deflate. Started by deploy/local/bench (`deflate`);
prints a table and writes JSON.
"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gateway import load  # noqa: E402
from write_path import free_port, machine, save_results, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


def server(binary):
    ws_port = free_port()
    process, port, _, session = start_server(binary, "--ws-port", str(ws_port), "--ws-max-connections-per-client", "50000",
                                             "--rate-limit", "0", "--tenant-rate-limit", "0")
    return process, port, ws_port, session


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far (/proc/<pid>/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(process):
    process.terminate()
    process.wait()


def main():
    args = command_line(binary=REQUIRED, load=(REQUIRED, "the gateway-load binary"), subscribers=1000, held=2000,
                        seconds=10.0, repeat=3, output=None)

    modes = ("none", "deflate_shared", "deflate")
    runs = {name: [] for name in modes}
    process, port, ws_port, session = server(args.binary)
    try:
        for _ in range(args.repeat):
            for name in modes:
                extra = {name: True} if name != "none" else {}
                before = cpu_seconds(process.pid)
                run = load(args.load, mode="gateway", ws_port=ws_port, http_port=port, session=session,
                           connections=args.subscribers, threads=2, seconds=args.seconds, rate=0, writers=4,
                           server_pid=process.pid, **extra)
                # The server's own cost, apart from the load generator's (which inflates on
                # the same two cores): CPU per message it delivered.
                run["server_cpu_us_per_message"] = (cpu_seconds(process.pid) - before) * 1e6 / max(1, run["messages_received"])
                runs[name].append(run)
    finally:
        stop(process)
    median = {name: sorted(attempts, key=lambda r: r["messages_per_second"])[len(attempts) // 2] for name, attempts in runs.items()}
    # Flat out, a run ends with deliveries still queued: what arrived in time is counted
    # (`delivered` in the table), as in the gateway benchmark's throughput runs.

    held = {}
    for name in ("none", "deflate"):
        process, port, ws_port, session = server(args.binary)
        try:
            extra = {"deflate": True} if name == "deflate" else {}
            held[name] = load(args.load, mode="gateway", ws_port=ws_port, http_port=port, session=session,
                              connections=args.held, threads=2, seconds=min(10, args.seconds), hold=True,
                              server_pid=process.pid, **extra)
        finally:
            stop(process)

    ratio = median["deflate_shared"]["messages_per_second"] / max(1, median["none"]["messages_per_second"])
    ratio_every_copy = median["deflate"]["messages_per_second"] / max(1, median["none"]["messages_per_second"])
    cpu = {name: sorted(r["server_cpu_us_per_message"] for r in attempts)[len(attempts) // 2] for name, attempts in runs.items()}
    result = {"machine": machine(), "subscribers": args.subscribers, "runs": runs, "median": median, "throughput_ratio": ratio,
              "throughput_ratio_inflating_every_copy": ratio_every_copy,
              "server_cpu_us_per_message": cpu, "held": held}
    print(f"fan-out to {args.subscribers} subscribers of one session, 4 writers flat out, median of {args.repeat}:")
    for name in modes:
        r = median[name]
        print(f"  {name:<14} {r['messages_per_second']:>10.0f} messages/s  p50 {r['latency_ms_p50']:.1f} ms  "
              f"p99 {r['latency_ms_p99']:.1f} ms  delivered {r['deliveries_matched']}/{r['deliveries_expected']}"
              f"  (runs: {', '.join('%.0f' % a['messages_per_second'] for a in runs[name])})")
    print(f"  messages/s with deflate / without, each distinct message inflated once: {ratio:.2f} (target ≥ 0.80)")
    print(f"  messages/s with deflate / without, every copy inflated on these cores: {ratio_every_copy:.2f}")
    print(f"  server CPU per message delivered (median): {cpu['none']:.2f} µs without, "
          f"{cpu['deflate_shared']:.2f} µs deflate_shared (ratio {cpu['deflate_shared'] / max(1e-9, cpu['none']):.2f}), "
          f"{cpu['deflate']:.2f} µs deflate (ratio {cpu['deflate'] / max(1e-9, cpu['none']):.2f})")
    for name in ("none", "deflate"):
        h = held[name]
        print(f"held {name:<8} {h['connections_opened']} of {h['connections_requested']} connections: "
              f"{h['server_rss_bytes_per_connection'] / 1024:.1f} KiB resident per idle connection"
              + (" (target < 16 KiB)" if name == "deflate" else ""))
    save_results(result, args.output)


if __name__ == "__main__":
    main()
