#!/usr/bin/env python3
"""Bytes on the wire with and without compression (issue 37): a 500-marker list, a
catch-up of the changes feed over a whole work session's topic, and a bulk upload of
1,000 markers, each sent once as it is and once gzip-coded, in the same run; the
answer's or request's body bytes are counted as they cross the socket (http.client does
not decode), and the ratio printed. The same topic is caught up over the WebSocket
(`since: 0`) three ways: no extension, permessage-deflate as the kit offers it (the
catch-up compressed as one stream), and with `server_no_context_takeover` (each event on
its own, as broadcasts are); every byte read after the upgrade counts. Markers carry
labels, colours, meta and scattered corners, so the JSON is not unrealistically
repetitive. Also the median time of the list request both ways (the server's cost of
compressing).

Writes JSON and prints a table. Started by deploy/local/bench (`bytes`).
"""
import base64, gzip, http.client, json, os, random, socket, statistics, struct, time, zlib

from sync import serve
from write_path import free_port, fresh_database, machine, request, save_results
from command_line import command_line, REQUIRED


def raw(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=body, headers=headers or {})
    reply = conn.getresponse()
    payload = reply.read()
    conn.close()
    return reply.status, dict(reply.getheaders()), payload


def markers(session, count, seed):
    rng = random.Random(seed)
    items = []
    for i in range(count):
        x, z = rng.uniform(-50, 50), rng.uniform(-50, 50)
        w, d = rng.uniform(0.2, 2), rng.uniform(0.2, 2)
        items.append({"work_session_id": session, "label": f"{rng.choice(['valve', 'weld', 'crack', 'pipe', 'bolt'])} {i}",
                      "color": rng.choice(["#ff0000", "#00ff00", "#0000ff", "#ffaa00"]),
                      "meta": {"inspector": rng.choice(["lena", "omar", "kai"]), "severity": rng.randint(1, 5)},
                      "p1": [round(x, 3), 0, round(z, 3)], "p2": [round(x + w, 3), 0, round(z, 3)],
                      "p3": [round(x + w, 3), 0, round(z + d, 3)], "p4": [round(x, 3), 0, round(z + d, 3)]})
    return items


def session_with_markers(port, key, count):
    """A new space `key` with one work session holding `count` markers (bulk, 1,000 a
    request); each marker makes two events on the session's topic (it and its details)."""
    space = request(port, "POST", "/api/v1/spaces", {"key": key, "name": key})[1]["id"]
    session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"]
    for start in range(0, count, 1000):
        status, _ = request(port, "POST", "/api/v1/markers/bulk", {"markers": markers(session, min(1000, count - start), start)})
        assert status == 201, status
    return session


def both_ways(port, path):
    """(identity bytes, gzip bytes) of one answer, checked to be the same JSON."""
    _, plain_headers, plain = raw(port, "GET", path, headers={"Accept-Encoding": "identity"})
    _, packed_headers, packed = raw(port, "GET", path, headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in plain_headers
    if packed_headers.get("Content-Encoding") == "gzip":
        assert json.loads(gzip.decompress(packed)) == json.loads(plain)
    else:
        # Below the threshold (1 KiB), an answer goes as it is.
        assert len(packed) < 1024 and packed == plain, packed_headers
    return len(plain), len(packed), json.loads(plain)


def median_ms(port, path, encoding, rounds):
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        raw(port, "GET", path, headers={"Accept-Encoding": encoding})
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def websocket_catch_up(port, topic, events, offer, host="127.0.0.1"):
    """Subscribes to `topic` with since 0 and reads `events` events: (bytes on the wire after
    the upgrade, the events). `offer` is a Sec-WebSocket-Extensions value or None."""
    sock = socket.create_connection((host, port), timeout=600)
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if offer:
        head += f"Sec-WebSocket-Extensions: {offer}\r\n"
    sock.sendall((head + "\r\n").encode())
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += sock.recv(65536)
    end = buffer.index(b"\r\n\r\n")
    answer, buffer = buffer[:end].decode().lower(), buffer[end + 4:]
    assert answer.startswith("http/1.1 101"), answer
    agreed = "permessage-deflate" in answer
    assert agreed == bool(offer), answer
    keeps_context = "server_no_context_takeover" not in answer
    op = json.dumps({"op": "subscribe", "topic": topic, "since": 0}).encode()
    mask = os.urandom(4)
    sock.sendall(bytes([0x81, 0x80 | 126]) + struct.pack(">H", len(op)) + mask
                 + bytes(b ^ mask[i % 4] for i, b in enumerate(op)))
    wire = len(buffer)
    inflater = zlib.decompressobj(-15)
    seen = []

    def need(count):
        nonlocal buffer, wire
        while len(buffer) < count:
            chunk = sock.recv(1 << 20)
            assert chunk, "the gateway closed the connection"
            wire += len(chunk)
            buffer += chunk

    while len(seen) < events:
        need(2)
        first, length = buffer[0], buffer[1] & 0x7F
        offset = 2
        if length == 126:
            need(4)
            length, offset = struct.unpack(">H", buffer[2:4])[0], 4
        elif length == 127:
            need(10)
            length, offset = struct.unpack(">Q", buffer[2:10])[0], 10
        need(offset + length)
        payload, buffer = buffer[offset:offset + length], buffer[offset + length:]
        assert first & 0x80, "the gateway does not fragment"
        if first & 0x40:
            payload = inflater.decompress(payload + b"\x00\x00\xff\xff")
            if not keeps_context:
                inflater = zlib.decompressobj(-15)
        if first & 0x0F == 1:
            message = json.loads(payload)
            if message.get("op") == "event":
                seen.append(message)
            assert message.get("op") != "error", message
    sock.close()
    return wire, seen


def main():
    args = command_line(admin_url=REQUIRED, binary=REQUIRED,
                        events=(10000, "marker events on the caught-up topic (two per marker)"), rounds=20, output=None)
    url = fresh_database(args.admin_url, "roboscope_bench_bytes")
    ws_port = free_port()
    server, port = serve(args.binary, url, extra=("--rate-limit", "0", "--tenant-rate-limit", "0", "--role", "all",
                                                  "--ws-port", str(ws_port), "--ws-max-catch-up", "100000"))
    try:
        session = session_with_markers(port, "bytes", max(500, args.events // 2))

        list_path = f"/api/v1/markers?work_session_id={session}&limit=500"
        list_plain, list_packed, _ = both_ways(port, list_path)

        feed_plain = feed_packed = events = 0
        since = 0
        while True:
            plain, packed, page = both_ways(port, f"/api/v1/changes?topic=work_session:{session}&since={since}&limit=1000")
            feed_plain, feed_packed, events = feed_plain + plain, feed_packed + packed, events + len(page["data"])
            since = page["next_since"]
            if not page["has_more"]:
                break

        topic = f"work_session:{session}"
        ws_plain, plain_events = websocket_catch_up(ws_port, topic, events, None)
        ws_stream, stream_events = websocket_catch_up(ws_port, topic, events, "permessage-deflate; client_max_window_bits")
        ws_each, each_events = websocket_catch_up(
            ws_port, topic, events, "permessage-deflate; server_no_context_takeover; client_max_window_bits")
        assert plain_events == stream_events == each_events

        upload = json.dumps({"markers": markers(session, 1000, 99)}).encode()
        upload_packed = gzip.compress(upload)
        status, _, _ = raw(port, "POST", "/api/v1/markers/bulk", body=upload_packed,
                           headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert status == 201, status

        plain_ms = median_ms(port, list_path, "identity", args.rounds)
        packed_ms = median_ms(port, list_path, "gzip", args.rounds)
    finally:
        server.terminate()
        server.wait()
    rows = [("500-marker list", list_plain, list_packed, 0.25),
            (f"changes-feed catch-up, {events} events", feed_plain, feed_packed, 0.25),
            (f"WebSocket catch-up, {events} events (as one stream)", ws_plain, ws_stream, 0.25),
            ("  the same, each event on its own", ws_plain, ws_each, None),
            ("bulk upload, 1,000 markers (request)", len(upload), len(upload_packed), None)]
    result = {"machine": machine(), "rows": [{"what": w, "identity": p, "gzip": g, "ratio": g / p, "target": t} for w, p, g, t in rows],
              "list_ms": {"identity": plain_ms, "gzip": packed_ms, "ratio": packed_ms / plain_ms}}
    print(f"{'':52}{'identity':>12}{'gzip':>12}{'ratio':>8}{'target':>8}   (WebSocket rows: none / deflate)")
    for what, plain, packed, target in rows:
        print(f"{what:52}{plain:>12,}{packed:>12,}{packed / plain:>8.3f}{('≤ %.2f' % target) if target else '':>8}")
    print(f"500-marker list, median of {args.rounds} on loopback: {plain_ms:.1f} ms identity, {packed_ms:.1f} ms gzip "
          f"(ratio {packed_ms / plain_ms:.2f}: the server's cost of compressing, with no network to save time on)")
    save_results(result, args.output)


if __name__ == "__main__":
    main()
