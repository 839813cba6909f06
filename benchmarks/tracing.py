#!/usr/bin/env python3
"""What tracing costs (issue 50), in one run on one machine: two `serve` instances side by
side on databases of their own, one exporting every span (sampling 1.0) over OTLP/HTTP
to a receiver in this process that reads and drops them, one without tracing; in
alternating pairs of short runs (this shared machine drifts over tens of seconds):

- the write path: markers created over HTTP by 16 clients (target: traced >= 0.9 of
  untraced, the median of the pairs);
- fan-out: 100 WebSocket subscribers of one session, four writers flat out, messages
  delivered a second (gateway-load; target >= 0.9);
- the spans the traced server lost (`roboscope_trace_spans_lost_total`), with an export
  queue and batches large enough for this rate: they must be none, else the traced side
  did less work than it should.

Prints a table and writes JSON; started by `deploy/local/bench tracing`.
"""
import os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Tracing"))
from gateway import load  # noqa: E402
from write_path import free_port, fresh_database, machine, metric, post_markers, save_results, sessions_in, start_server  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402
from otlp_receiver import OTLPReceiver  # noqa: E402


class NullReceiver(OTLPReceiver):
    """An OTLP/HTTP endpoint that reads each export and answers 200, counting spans' bytes."""

    def __init__(self):
        self.exports, self.bytes = 0, 0
        super().__init__(self.answer)

    def answer(self, _path, body):
        self.exports += 1
        self.bytes += len(body)
        return 200, b""


def main():
    args = command_line(admin_url=REQUIRED, binary=REQUIRED, load=(REQUIRED, "the gateway-load binary"), seconds=4,
                        repeat=10, clients=16, subscribers=100, output=REQUIRED)

    receiver = NullReceiver()
    servers = {}
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_TRACES_SAMPLER": "always_on",
               "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BSP_MAX_QUEUE_SIZE": "200000",
               "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "20000"}
    try:
        for mode in ("off", "on"):
            url = fresh_database(args.admin_url, f"roboscope_bench_tracing_{mode}")
            saved = dict(os.environ)
            if mode == "on":
                os.environ.update(tracing)
            try:
                servers[mode] = start_server(args.binary, "--database-url", url, "--db-pool-size", "32",
                                             "--ws-port", str(free_port()))
            finally:
                os.environ.clear()
                os.environ.update(saved)
        sessions = {mode: [s[3]] + sessions_in(s[1], s[2], 63) for mode, s in servers.items()}
        fanout_session = {mode: sessions_in(s[1], s[2], 1)[0] for mode, s in servers.items()}
        writes = {mode: [] for mode in servers}
        fanout = {mode: [] for mode in servers}
        for repeat in range(args.repeat):
            for mode in (("off", "on") if repeat % 2 == 0 else ("on", "off")):
                process, port, _, _ = servers[mode]
                writes[mode].append(post_markers(port, args.clients, args.seconds, sessions[mode])["requests_per_second"])
                ws_port = int(process.args[process.args.index("--ws-port") + 1])
                fanout[mode].append(load(args.load, mode="gateway", ws_port=ws_port, http_port=port,
                                         session=fanout_session[mode], server_pid=process.pid,
                                         connections=args.subscribers, threads=2, seconds=args.seconds, rate=0,
                                         writers=4)["messages_per_second"])
        lost = metric(servers["on"][1], "roboscope_trace_spans_lost_total")
    finally:
        for process, *_ in servers.values():
            process.terminate()
            process.wait(timeout=30)
        receiver.stop()

    def ratios(runs):
        return [on / off for on, off in zip(runs["on"], runs["off"]) if off]
    result = {
        "machine": machine(), "seconds_per_run": args.seconds, "repeat": args.repeat, "clients": args.clients,
        "subscribers": args.subscribers,
        "write_path": {"per_second": {mode: statistics.median(runs) for mode, runs in writes.items()},
                       "runs": writes, "pair_ratios": ratios(writes), "on_over_off": statistics.median(ratios(writes))},
        "fanout": {"messages_per_second": {mode: statistics.median(runs) for mode, runs in fanout.items()},
                   "runs": fanout, "pair_ratios": ratios(fanout), "on_over_off": statistics.median(ratios(fanout))},
        "lost_spans": lost, "exports": receiver.exports, "exported_bytes": receiver.bytes,
    }
    save_results(result, args.output)
    w, f = result["write_path"], result["fanout"]
    print(f"write path, {args.clients} clients: traced {w['per_second']['on']:.0f}/s, untraced "
          f"{w['per_second']['off']:.0f}/s; median of the pairs' ratios {w['on_over_off']:.3f} "
          f"({', '.join(f'{r:.2f}' for r in w['pair_ratios'])}; target >= 0.9)")
    print(f"fan-out to {args.subscribers} subscribers: traced {f['messages_per_second']['on']:.0f} messages/s, "
          f"untraced {f['messages_per_second']['off']:.0f}/s; median of the pairs' ratios {f['on_over_off']:.3f} "
          f"({', '.join(f'{r:.2f}' for r in f['pair_ratios'])}; target >= 0.9)")
    print(f"spans lost: {lost:.0f}; {receiver.exports} exports, {receiver.bytes / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
