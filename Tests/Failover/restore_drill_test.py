#!/usr/bin/env python3
"""A restore drill on deploy/local/cluster (issue 48): `cluster backup`, more writes, a
moment T, more writes after it, then `cluster restore-to T`. Promises:

- every work session's markers, and the space and sessions themselves, are what `as_of T`
  answered before the restore: what was written by T is back, nothing after it;
- `roboscope verify` and `verify --chain` pass on the restored cluster;
- the restored cluster takes writes again, through the same load balancer.

Prints the restore's figures and exits non-zero on any broken promise.
"""
import datetime, os, sys, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import API, MARKER, cluster, eventually, new_sessions, report, verify


def write_markers(api, sessions, count, label):
    ids = []
    for number in range(count):
        session = sessions[number % len(sessions)]
        status, marker = api.call("POST", "/api/v1/markers", {"work_session_id": session, "label": f"{label}-{number}",
                                                              **MARKER}, {"Idempotency-Key": str(uuid.uuid4())})
        assert status == 201, (status, marker)
        ids.append(marker["id"])
    return ids


def state(api, space, sessions, as_of=None):
    """The space, its work sessions and their markers, now or as_of a moment."""
    suffix = f"&as_of={as_of}" if as_of else ""
    query = f"?as_of={as_of}" if as_of else ""
    reads = {"space": f"/api/v1/spaces/{space}{query}"}
    for session in sessions:
        reads[f"session {session}"] = f"/api/v1/work-sessions/{session}{query}"
        reads[f"markers of {session}"] = f"/api/v1/markers?work_session_id={session}&limit=1000{suffix}"
    answers = {}
    for name, path in reads.items():
        status, body = api.call("GET", path, timeout=30)
        assert status == 200, (name, status, body)
        answers[name] = sorted(body, key=lambda m: m["id"]) if isinstance(body, list) else body
    return answers


def main():
    env = cluster("up", attempts=2)
    api = API(env["API_URL"])
    sessions = new_sessions(api, 2, "restore")
    status, session = api.call("GET", f"/api/v1/work-sessions/{sessions[0]}")
    space = session["space_id"]
    write_markers(api, sessions, 20, "before-backup")
    cluster("backup")
    kept = write_markers(api, sessions, 20, "after-backup")
    status, changed = api.call("PATCH", f"/api/v1/markers/{kept[0]}", {"label": "changed before T"})
    assert status == 200, (status, changed)
    # T falls between two commits, a clear second from each (the server's clock is this machine's).
    time.sleep(1.1)
    moment = datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    time.sleep(1.1)
    expected = state(api, space, sessions, as_of=moment)
    write_markers(api, sessions, 20, "after-T")
    status, _ = api.call("PATCH", f"/api/v1/markers/{kept[1]}", {"label": "changed after T"})
    assert status == 200
    status, _ = api.call("PATCH", f"/api/v1/work-sessions/{sessions[1]}", {"status": "active"})
    assert status == 200

    started = time.monotonic()
    cluster("restore-to", moment)
    restored_in = time.monotonic() - started
    problems = []
    eventually("the restored cluster answers", 60, lambda: api.call("GET", f"/api/v1/spaces/{space}")[0] == 200)
    restored = state(api, space, sessions)
    for name, want in expected.items():
        if restored[name] != want:
            problems.append(f"{name} after the restore differs from as_of {moment}: {restored[name]!s:.300} "
                            f"against {want!s:.300}")
    problems += verify(env["DATABASE_URL"])
    try:
        write_markers(api, sessions, 5, "after-restore")
    except AssertionError as error:
        problems.append(f"a write after the restore failed: {error}")
    markers = sum(len(v) for k, v in expected.items() if k.startswith("markers"))
    print(f"restore drill: restored to {moment} in {restored_in:.1f} s; {markers} markers as of then, "
          f"the same after the restore: {not any('differs' in p for p in problems)}")
    report("restore drill", problems)


if __name__ == "__main__":
    main()
