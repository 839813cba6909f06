#!/usr/bin/env python3
"""Bytes on the wire with and without HTTP compression (issue 37): a 500-marker list, a
catch-up of the changes feed over a whole work session's topic, and a bulk upload of
1,000 markers, each sent once as it is and once gzip-coded, in the same run; the
answer's or request's body bytes are counted as they cross the socket (http.client does
not decode), and the ratio printed. Markers carry labels, colours, meta and scattered
corners, so the JSON is not unrealistically repetitive. Also the median time of the
list request both ways (the server's cost of compressing).

Writes JSON and prints a table. Started by deploy/local/bench (`bytes`). The WebSocket
(permessage-deflate) part of issue 37 is not built yet.
"""
import argparse, gzip, http.client, json, random, statistics, time

from sync import serve
from write_path import fresh_database, machine, request


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--admin-url", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--events", type=int, default=10000, help="marker events on the caught-up topic (two per marker)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--output")
    args = parser.parse_args()
    url = fresh_database(args.admin_url, "roboscope_bench_bytes")
    server, port = serve(args.binary, url, extra=("--rate-limit", "0", "--tenant-rate-limit", "0"))
    try:
        space = request(port, "POST", "/api/v1/spaces", {"key": "bytes", "name": "bytes"})[1]["id"]
        session = request(port, "POST", "/api/v1/work-sessions", {"space_id": space})[1]["id"]
        # Each marker makes two events on the topic (the marker and its details).
        total = max(500, args.events // 2)
        for start in range(0, total, 1000):
            status, _ = request(port, "POST", "/api/v1/markers/bulk", {"markers": markers(session, min(1000, total - start), start)})
            assert status == 201, status

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
            ("bulk upload, 1,000 markers (request)", len(upload), len(upload_packed), None)]
    result = {"machine": machine(), "rows": [{"what": w, "identity": p, "gzip": g, "ratio": g / p, "target": t} for w, p, g, t in rows],
              "list_ms": {"identity": plain_ms, "gzip": packed_ms, "ratio": packed_ms / plain_ms}}
    print(f"{'':42}{'identity':>12}{'gzip':>12}{'ratio':>8}{'target':>8}")
    for what, plain, packed, target in rows:
        print(f"{what:42}{plain:>12,}{packed:>12,}{packed / plain:>8.3f}{('≤ %.2f' % target) if target else '':>8}")
    print(f"500-marker list, median of {args.rounds} on loopback: {plain_ms:.1f} ms identity, {packed_ms:.1f} ms gzip "
          f"(ratio {packed_ms / plain_ms:.2f}: the server's cost of compressing, with no network to save time on)")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
