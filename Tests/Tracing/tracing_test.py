#!/usr/bin/env python3
"""One write followed end to end (issue 50), against a real OTLP/HTTP receiver: a small
receiver of protobuf exports written for this test with the `opentelemetry-proto`
definitions, and the real server binary exporting to it (swift-otel, the standard
`OTEL_*` variables).

A subscriber listens on the gateway; RoboscopeKit (`roboscope-client apply --verbose`)
creates a marker and prints the trace it sent. Checks, in that one trace: the server's
request span (named by its route, child of the kit's span), the append span under it, the
database jobs under the request, the delivery span (child of the append span, the
subscriber count on it), and the `traceparent` the subscriber received (the append
span's). Then the receiver answers 500 and stops: writes are not slowed, and the dropped
spans do not grow any queue without bound.

    tracing_test.py --binary .build/debug/roboscope --client .build/debug/roboscope-client --admin-url postgres://…
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, threading, time, urllib.request, uuid
import websocket
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Server, check, failures, psql, wait_for  # noqa: E402
import waterfall  # noqa: E402
from otlp_receiver import OTLPReceiver  # noqa: E402


class Receiver(OTLPReceiver):
    """OTLP/HTTP traces: POST /v1/traces with an ExportTraceServiceRequest (protobuf).
    Keeps every span; `status` is what it answers (500 to play a failing collector)."""

    def __init__(self):
        self.spans, self.status, self.lock = [], 200, threading.Lock()
        super().__init__(self.answer)

    def answer(self, path, body):
        if self.status == 200 and path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            with self.lock:
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        self.spans.extend(scope.spans)
        return self.status, ExportTraceServiceResponse().SerializeToString()

    def of_trace(self, trace_id):
        with self.lock:
            return [span for span in self.spans if span.trace_id.hex() == trace_id]


def attributes(span):
    values = {}
    for attribute in span.attributes:
        value = attribute.value
        values[attribute.key] = value.string_value or value.int_value
    return values


def marker_body(session):
    return {"work_session_id": session, "p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]}


def next_event(socket_, stream_type, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        socket_.settimeout(max(0.1, deadline - time.monotonic()))
        message = json.loads(socket_.recv())
        if message.get("op") == "event" and message.get("stream_type") == stream_type:
            return message
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--admin-url", required=True)
    parser.add_argument("--picture", help="where to draw the write's trace (PNG); default: a temporary file")
    args = parser.parse_args()

    database = "rbtest_tracing"
    psql(args.admin_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    psql(args.admin_url, f"CREATE DATABASE {database}")
    database_url = args.admin_url.rsplit("/", 1)[0] + "/" + database
    receiver = Receiver()
    server = Server(args.binary, database_url, "--log-level", "info", "--log-format", "json", environment={
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_BSP_MAX_QUEUE_SIZE": "16", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16",
        "OTEL_TRACES_SAMPLER": "always_on"})
    try:
        space = server.call("POST", "/spaces", {"key": f"trace-{uuid.uuid4()}", "name": "traced"})
        session = server.call("POST", "/work-sessions", {"space_id": space["id"]})["id"]
        subscriber = websocket.create_connection(f"ws://127.0.0.1:{server.ws_port}/api/v1/ws", header=["X-User-Id: ana"])
        subscriber.send(json.dumps({"op": "subscribe", "topic": f"work_session:{session}"}))
        wait_for(lambda: json.loads(subscriber.recv()).get("op") == "subscribed", "the subscriber is subscribed")

        # The kit's write, with the trace it prints (--verbose).
        state = tempfile.mkdtemp()
        mutation = json.dumps({"method": "POST", "path": "/markers", "body": marker_body(session)})
        applied = subprocess.run([args.client, "apply", "--url", server.base, "--user", "ana", "--state", state,
                                  "--verbose"], input=mutation + "\n", capture_output=True, text=True, timeout=60)
        check(applied.returncode == 0, f"the kit applied the write ({applied.stdout.strip()} {applied.stderr.strip()})")
        line = next((line for line in applied.stderr.splitlines() if line.startswith("POST /api/v1/markers")), "")
        traceparent = line.split("traceparent ", 1)[-1].split()[0] if "traceparent " in line else ""
        parts = traceparent.split("-")
        check(len(parts) == 4, f"the kit printed the traceparent it sent: {line!r}")
        trace_id, kit_span = (parts[1], parts[2]) if len(parts) == 4 else ("", "")

        event = next_event(subscriber, "marker")
        check(event is not None, "the subscriber received the marker")
        received = (event or {}).get("traceparent", "")
        check(received.split("-")[1:2] == [trace_id], f"the subscriber's traceparent is of the kit's trace: {received}")

        names = lambda: {span.name for span in receiver.of_trace(trace_id)}
        wait_for(lambda: {"POST /api/v1/markers", "roboscope.append", "roboscope.db", "roboscope.deliver"} <= names(),
                 "the receiver has the request, append, database and delivery spans of the trace")
        spans = receiver.of_trace(trace_id)
        by_id = {span.span_id.hex(): span for span in spans}
        request = next((s for s in spans if s.name == "POST /api/v1/markers"), None)
        append = next((s for s in spans if s.name == "roboscope.append"), None)
        deliver = next((s for s in spans if s.name == "roboscope.deliver"), None)
        jobs = [s for s in spans if s.name == "roboscope.db"]
        print(f"     the trace {trace_id}: " + ", ".join(sorted(f"{s.name}" for s in spans)))
        if request and append and deliver:
            check(request.parent_span_id.hex() == kit_span, "the request span is the kit's span's child")
            check(attributes(request).get("http.route") == "/api/v1/markers", "the request span names its route")
            check(attributes(request).get("roboscope.tenant") == "default", "the request span names the tenant")
            check(attributes(request).get("http.response.status_code") == 201, "the request span has its status")
            check(append.parent_span_id.hex() == request.span_id.hex(), "the append span is the request's child")
            check(attributes(append).get("roboscope.tenant") == "default", "the append span names the tenant")
            check(attributes(append).get("roboscope.position", 0) > 0, "the append span names its position")

            def under(span, ancestor):
                while span is not None and span.parent_span_id:
                    if span.parent_span_id == ancestor.span_id:
                        return True
                    span = by_id.get(span.parent_span_id.hex())
                return False
            check(jobs and all(under(job, request) for job in jobs), f"{len(jobs)} database jobs, under the request")
            operations = [attributes(job).get("db.operation", "") for job in jobs]
            check(any("SELECT eventlog.append" in operation for operation in operations)
                  and all(operations) and all(job.attributes and attributes(job).get("roboscope.statements", 0) > 0
                                              for job in jobs),
                  f"each database job names its operations: {operations}")
            check(deliver.parent_span_id.hex() == append.span_id.hex(), "the delivery span is the append's child")
            check(attributes(deliver).get("roboscope.subscribers") == 1, "the delivery span counts its subscriber")
            check(received.split("-")[2:3] == [append.span_id.hex()], "the subscriber's traceparent is the append span's")
        # The trace as a backend's timeline draws it (docs/operations.md shows this picture).
        picture = args.picture or os.path.join(tempfile.mkdtemp(), "trace.png")
        rows = waterfall.draw(spans, attributes, f"trace {trace_id}: one marker written by RoboscopeKit, delivered "
                              "to a subscriber", picture)
        check(len(rows) == len(spans) and os.path.getsize(picture) > 0,
              f"the trace is drawn, every span on a row under its parent ({picture})")
        # A heartbeat is a Redis job: its span is the request's child, named by its command.
        heartbeat_trace = uuid.uuid4().hex
        server.call("POST", f"/presence/{session}", {"user_id": "ana"},
                    headers={"traceparent": f"00-{heartbeat_trace}-{'1' * 16}-01"})
        wait_for(lambda: any(s.name == "roboscope.redis" for s in receiver.of_trace(heartbeat_trace)),
                 "the heartbeat's trace has its Redis job")
        heartbeat = receiver.of_trace(heartbeat_trace)
        put = next((s for s in heartbeat if s.name.startswith("POST ")), None)
        redis_jobs = [s for s in heartbeat if s.name == "roboscope.redis"]
        check(put is not None and all(job.parent_span_id == put.span_id for job in redis_jobs)
              and all(attributes(job).get("db.system") == "redis" for job in redis_jobs),
              f"{len(redis_jobs)} Redis jobs under the heartbeat's request ({put.name if put else None})")

        lines = []
        for text in open(server.log.name).read().splitlines():
            try:
                lines.append(json.loads(text))
            except ValueError:
                pass
        traced = [line for line in lines if line.get("trace_id") == trace_id]
        check(traced and all(line.get("span_id") for line in traced),
              f"log lines within the trace name it and their span ({len(traced)} lines)")

        # A collector that fails, then one that is gone: writes are not held back.
        def write_times(count):
            times = []
            for _ in range(count):
                started = time.monotonic()
                server.call("POST", "/markers", marker_body(session))
                times.append(time.monotonic() - started)
            return statistics.median(times)
        healthy = write_times(40)
        receiver.status = 500
        failing = write_times(40)
        receiver.stop()
        gone = write_times(40)
        print(f"     median write: collector answering {healthy * 1000:.1f} ms, answering 500 {failing * 1000:.1f} ms, "
              f"gone {gone * 1000:.1f} ms")
        check(max(failing, gone) < max(5 * healthy, healthy + 0.05),
              "a failing or absent collector does not slow writes")

        def lost(reason):
            text = urllib.request.urlopen(f"{server.base}/metrics", timeout=10).read().decode()
            for line in text.splitlines():
                if line.startswith("roboscope_trace_spans_lost_total") and f'reason="{reason}"' in line:
                    return float(line.rsplit(" ", 1)[1])
            return None
        wait_for(lambda: (lost("export_failed") or 0) > 0, "spans the collector did not take are counted as lost")
        # More spans than the queue holds (OTEL_BSP_MAX_QUEUE_SIZE 16) end between two
        # exports (every 100 ms): the rest are refused, counted, never waited for.
        burst = [threading.Thread(target=write_times, args=(20,)) for _ in range(8)]
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join()
        wait_for(lambda: (lost("queue_full") or 0) > 0, "spans past the export queue are counted as lost")
        check(server.process.poll() is None, "the server is still running")
        subscriber.close()
    finally:
        server.stop()
    if failures:
        print(f"{len(failures)} failed: " + "; ".join(failures))
        sys.exit(1)
    print("tracing: all passed")


if __name__ == "__main__":
    main()
