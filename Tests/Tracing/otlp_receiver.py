"""An OTLP/HTTP endpoint on 127.0.0.1 for the tracing test and the tracing benchmark:
each export's path and body go to `answer`, which returns the status and the body to
reply with (the test keeps the spans, the benchmark counts bytes)."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class OTLPReceiver:
    def __init__(self, answer):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, reply = answer(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_):
                pass

        # Port 0: the kernel picks a free one.
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
