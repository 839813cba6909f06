#!/usr/bin/env python3
"""The CPU each delivered message costs (issue 51): what decides how many gateways a
fleet needs. The gateway runs as a process of its own (`serve --role gateway`, the API
in another), so its CPU (user + system from /proc, from the first write to the last
delivery, measured by gateway-load) is the cost of tailing the log and delivering; it
is set next to a minimal broadcaster written for this benchmark
(benchmarks/minimal_broadcast.c: epoll, each message framed once, one writev of the
shared bytes per subscriber per wake-up, no authorization, topics or bounds), which
gets the same subscribers, write rate and frames per write, in the same run, rounds
alternating which goes first.

Reported per size: messages per CPU second of each, their ratio (target >= 0.8), the
gateway's microseconds per message, and the p99 delivery latency of both. Started by
deploy/local/bench (`cpu-per-message`); prints a table and writes JSON.
"""
import os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gateway import load  # noqa: E402
from write_path import free_port, machine, ready, request, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


class Roboscope:
    """The API and the gateway as two processes on one database."""

    def __init__(self, binary, database_url):
        self.api_port, self.gateway_probe, self.ws_port = free_port(), free_port(), free_port()
        common = [binary, "serve", "--database-url", database_url, "--host", "127.0.0.1", "--log-level", "error"]
        self.api = subprocess.Popen(common + ["--role", "api", "--http-port", str(self.api_port),
                                              "--ws-port", str(free_port())])
        ready(self.api_port)
        self.gateway = subprocess.Popen(common + ["--role", "gateway", "--no-migrate", "--http-port",
                                                  str(self.gateway_probe), "--ws-port", str(self.ws_port),
                                                  "--ws-max-connections-per-client", "50000"])
        ready(self.gateway_probe)
        _, space = request(self.api_port, "POST", "/api/v1/spaces", {"key": f"cpu-{time.time_ns()}", "name": "cpu"})
        self.space = space["id"]

    def session(self):
        return request(self.api_port, "POST", "/api/v1/work-sessions", {"space_id": self.space})[1]["id"]

    def run(self, tool, subscribers, rate, seconds):
        return load(tool, mode="gateway", ws_port=self.ws_port, http_port=self.api_port, session=self.session(),
                    server_pid=self.gateway.pid, connections=subscribers, threads=2, rate=rate, seconds=seconds)

    def stop(self):
        for process in (self.gateway, self.api):
            process.terminate()
            process.wait(timeout=30)


class Minimal:
    def __init__(self, binary, frames):
        self.port = free_port()
        self.process = subprocess.Popen([binary, str(self.port), str(frames)], stderr=subprocess.DEVNULL)
        ready(self.port, path=None)

    def run(self, tool, subscribers, rate, seconds):
        return load(tool, mode="reference", ws_port=self.port, ws_path="/ws", http_port=self.port,
                    session="00000000-0000-4000-8000-000000000000", server_pid=self.process.pid,
                    connections=subscribers, threads=2, rate=rate, seconds=seconds)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def figures(result):
    cpu = result.get("server_cpu_seconds", 0)
    messages = result.get("messages_received", 0)
    return {"messages": messages, "cpu_seconds": cpu,
            "messages_per_cpu_second": messages / cpu if cpu > 0 else 0,
            "microseconds_per_message": cpu * 1e6 / messages if messages else 0,
            "p99_ms": result.get("latency_ms_p99", 0), "writes": result.get("writes", 0),
            "connections": result.get("connections_opened", 0), "closed": result.get("closed_during_run", 0)}


def main():
    args = command_line(binary=REQUIRED, database_url=(REQUIRED, "a fresh database"), load=(REQUIRED, "gateway-load"),
                        broadcast=(REQUIRED, "the minimal broadcaster, built"),
                        sizes=("1000:100,10000:10", "subscribers:writes per second, ..."), seconds=10.0, repeat=3,
                        output=REQUIRED)

    roboscope = Roboscope(args.binary, args.database_url)
    results = []
    try:
        for size in args.sizes.split(","):
            subscribers, rate = (int(part) for part in size.split(":"))
            rounds = {"roboscope": [], "minimal": []}
            frames = None
            for round_number in range(args.repeat):
                order = ["roboscope", "minimal"] if round_number % 2 == 0 else ["minimal", "roboscope"]
                for name in order:
                    if name == "minimal" and frames is None:
                        continue
                    if name == "roboscope":
                        run = figures(roboscope.run(args.load, subscribers, rate, args.seconds))
                        # The messages a write makes at each subscriber (a marker: its events),
                        # which the minimal broadcaster then sends as that many frames.
                        if frames is None and run["writes"] and run["connections"]:
                            frames = max(1, round(run["messages"] / (run["writes"] * run["connections"])))
                    else:
                        minimal = Minimal(args.broadcast, frames)
                        try:
                            run = figures(minimal.run(args.load, subscribers, rate, args.seconds))
                        finally:
                            minimal.stop()
                    rounds[name].append(run)
                    print(f"cpu-per-message: {subscribers} subscribers, {rate} writes/s, {name}: "
                          f"{run['messages']} messages, {run['cpu_seconds']:.2f} CPU s, "
                          f"{run['microseconds_per_message']:.2f} µs each, p99 {run['p99_ms']:.1f} ms", flush=True)
            if not rounds["minimal"]:
                # The first round measured only the gateway (to learn the frames): one more.
                minimal = Minimal(args.broadcast, frames or 1)
                try:
                    rounds["minimal"].append(figures(minimal.run(args.load, subscribers, rate, args.seconds)))
                finally:
                    minimal.stop()

            def median(name, key, rounds=rounds):
                return statistics.median(run[key] for run in rounds[name])
            ours, floor = median("roboscope", "messages_per_cpu_second"), median("minimal", "messages_per_cpu_second")
            results.append({
                "subscribers": subscribers, "writes_per_second": rate, "frames_per_write": frames,
                "roboscope_messages_per_cpu_second": ours, "minimal_messages_per_cpu_second": floor,
                "ratio": ours / floor if floor else 0,
                "roboscope_microseconds_per_message": median("roboscope", "microseconds_per_message"),
                "minimal_microseconds_per_message": median("minimal", "microseconds_per_message"),
                "roboscope_p99_ms": median("roboscope", "p99_ms"), "minimal_p99_ms": median("minimal", "p99_ms"),
                "rounds": rounds})
    finally:
        roboscope.stop()

    print(f"{'subscribers':>11} {'writes/s':>8} {'ours msg/CPU-s':>15} {'minimal':>10} {'ratio':>6} "
          f"{'ours µs/msg':>11} {'p99 ours':>9} {'p99 min':>8}")
    for r in results:
        print(f"{r['subscribers']:>11} {r['writes_per_second']:>8} {r['roboscope_messages_per_cpu_second']:>15,.0f} "
              f"{r['minimal_messages_per_cpu_second']:>10,.0f} {r['ratio']:>6.2f} "
              f"{r['roboscope_microseconds_per_message']:>11.2f} {r['roboscope_p99_ms']:>9.1f} "
              f"{r['minimal_p99_ms']:>8.1f}")
    save_results({"machine": machine(), "seconds": args.seconds, "repeat": args.repeat, "sizes": results},
                 args.output)


if __name__ == "__main__":
    main()
