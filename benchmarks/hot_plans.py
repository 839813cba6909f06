#!/usr/bin/env python3
"""The hot reads on a growing log: for each size (10^4 and 10^6 events by default), a
fresh database gets a generated log (investigations.py's generator, which numbers
each topic as the append does), then each statement a gateway or a
syncing client runs all the time is executed with EXPLAIN (ANALYZE, BUFFERS) several
times in one session: its median execution time, planning time, the plan's node types
and buffers touched. A statement whose cost grows with the log shows it here.

Every size is measured in each of several rounds, the sizes alternating within a round
(the machine's speed drifts by half over minutes: a size measured minutes after another
compares the minutes, not the sizes). Each statement's growth is the ratio of its times
on the largest and the smallest log in the same round; the report gives the median of
those ratios and their spread, and the buffers touched, which no drift changes.

The live tail runs inside `eventlog.deliveries`, a plpgsql function, whose statement
plans are cached per session: after five calls plpgsql may switch to a generic plan,
so the tail is called 12 times and the first and the last calls are reported apart.
Every other statement is called 11 times and the median of the last 6 reported: most
take well under a millisecond, where one call in a few lands behind other work on
this shared machine.

Started by deploy/local/bench (with --sizes 10000 in quick mode); prints a table and
writes JSON.
"""
import json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from investigations import generated_log  # noqa: E402
from write_path import machine, psql, save_results  # noqa: E402
from command_line import command_line, REQUIRED  # noqa: E402


SESSION = "md5('session' || 3)::uuid"
# A topic as DeliveryReader.membership names it: the id as a range of one value, ordered
# by (id, position), so that only the topic's index serves the order.
IN_SESSION = f"work_session_id >= {SESSION} AND work_session_id <= {SESSION}"
SPACE = "'00000000-0000-4000-8000-000000000001'::uuid"


# What `DeliveryReader.topic` sets, local to each topic page's transaction: the ordered
# walk of the topic's index whatever the statistics say. The service runs these statements
# prepared, on their generic plans (the same walk: TopicPlanTests); here each is planned
# for its values, so the planning time reported is what the service no longer pays per
# call, and the execution time is what it does pay.
TOPIC_PAGE_SETTINGS = "SET enable_bitmapscan = off; SET enable_sort = off;"


# What `DeliveryReader.topicStatement` selects: every column of eventlog.delivery_rows,
# the details only for the events of the page's last transaction (the page finds the
# others in its own rows: PageDetails).
PAGE_COLUMNS = """position, transaction_id, stream_type, stream_id, stream_version, type, data, actor, client_mutation_id,
                  recorded_at, work_session_id, space_id, work_session_seq, space_seq"""


def cursor_bound(until):
    return f"AND (transaction_id, position) <= ('{until[0]}'::xid8, {until[1]})" if until else ""


def page_end(after, limit, until=None):
    """`DeliveryReader.lastTransactionStatement`: the transaction of the page's last row."""
    limit_end = f"""SELECT position FROM eventlog.events WHERE {IN_SESSION} AND position > {after}
                    ORDER BY work_session_id, position OFFSET {limit} - 1 LIMIT 1"""
    end = f"({limit_end})"
    if until:
        end = f"""LEAST(({limit_end}), (SELECT position FROM eventlog.events WHERE {IN_SESSION} {cursor_bound(until)}
                  ORDER BY work_session_id DESC, position DESC LIMIT 1))"""
    return f"SELECT transaction_id FROM eventlog.events WHERE position = {end} AND position > {after}"


def topic_page(url, after, limit, until=None):
    """The page's statement as the service sends it, and the positions of the marker
    events PageDetails would look up after it (an array literal): those whose details
    the page holds none of up to the end of their transaction, outside the last one."""
    last = psql(url, page_end(after, limit, until))
    last = f"'{last}'::xid8" if last else "NULL"
    page = f"""SELECT {PAGE_COLUMNS}, CASE WHEN transaction_id = {last} THEN details::text END
               FROM eventlog.delivery_rows WHERE {IN_SESSION}
               AND position > {after} {cursor_bound(until)} ORDER BY work_session_id, position LIMIT {limit}"""
    positions = psql(url, f"""WITH page AS (SELECT * FROM eventlog.events WHERE {IN_SESSION} AND position > {after}
                                            {cursor_bound(until)} ORDER BY work_session_id, position LIMIT {limit})
        SELECT coalesce(string_agg(m.position::text, ',' ORDER BY m.position), '')
        FROM page m
        WHERE m.stream_type = 'marker' AND m.type <> 'marker.deleted' AND m.transaction_id IS DISTINCT FROM {last}
          AND NOT EXISTS (SELECT 1 FROM page d WHERE d.stream_type = 'marker_details'
                          AND d.stream_id = m.stream_id AND d.transaction_id <= m.transaction_id)""")
    return page, "{" + positions + "}"


# `DeliveryReader.detailsLookUpStatement`: the view's details of the marker events a
# page cannot tell.
DETAILS_LOOK_UP = "SELECT position, details::text FROM eventlog.delivery_rows WHERE position = ANY('{POSITIONS}'::text::bigint[])"


def statements(head_xid, head_position, catch_up_after, catch_up_page, feed_page):
    """(name, SQL, calls, settings) of each hot statement, with the values a client would send."""
    tail_from = head_position - 50
    return [
        ("live tail: 50 new events (eventlog.deliveries)",
         f"SELECT * FROM eventlog.deliveries('{head_xid}'::xid8, {tail_from}, 500)", 12),
        ("follow head (eventlog.follow_head)", "SELECT * FROM eventlog.follow_head()", 11),
        ("newest position", "SELECT coalesce(max(position), 0) FROM eventlog.events", 11),
        ("catch-up: where the page ends, and its last transaction",
         page_end(catch_up_after, 1000, (head_xid, head_position)), 11, TOPIC_PAGE_SETTINGS),
        ("catch-up: a session's last 1,000 events up to the cursor", catch_up_page[0], 11, TOPIC_PAGE_SETTINGS),
        ("catch-up: the look-up of details that page cannot tell",
         DETAILS_LOOK_UP.replace("{POSITIONS}", catch_up_page[1]), 11, TOPIC_PAGE_SETTINGS),
        ("changes feed: where the page ends, and its last transaction",
         page_end(head_position // 2, 100), 11, TOPIC_PAGE_SETTINGS),
        ("changes feed: a session's next 100 events after the middle of the log", feed_page[0], 11, TOPIC_PAGE_SETTINGS),
        ("changes feed: the look-up of details that page cannot tell",
         DETAILS_LOOK_UP.replace("{POSITIONS}", feed_page[1]), 11, TOPIC_PAGE_SETTINGS),
        ("snapshot head: a session's newest event",
         f"""SELECT position, work_session_seq FROM eventlog.events WHERE {IN_SESSION}
             ORDER BY work_session_id DESC, position DESC LIMIT 1""", 11),
        ("space topic head",
         f"""SELECT position, space_seq FROM eventlog.events WHERE space_id >= {SPACE} AND space_id <= {SPACE}
             AND space_seq IS NOT NULL ORDER BY space_id DESC, position DESC LIMIT 1""", 11),
        ("as_of: a marker at a position (its last event at or before)",
         f"""SELECT e.position, e.type, e.data::text FROM eventlog.events e
             WHERE e.stream_type = 'marker' AND e.stream_id = md5('marker' || 7)::uuid
               AND e.position <= {head_position // 2}
             ORDER BY e.stream_version DESC LIMIT 1""", 11),
    ]


def explain(url, sql, calls, settings=""):
    """EXPLAIN ANALYZE `sql` `calls` times in one session (after `settings`); a dict per call."""
    script = settings + "\n" + "\n".join(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql};" for _ in range(calls))
    out = subprocess.run(["psql", url, "-qAt", "-v", "ON_ERROR_STOP=1"], input=script, text=True,
                         capture_output=True, check=True).stdout
    runs, text = [], ""
    for line in out.splitlines():
        text += line
        try:
            plan = json.loads(text)[0]
        except json.JSONDecodeError:
            continue
        text = ""
        nodes, stack = [], [plan["Plan"]]
        while stack:
            node = stack.pop()
            nodes.append(node["Node Type"] + (f" on {node['Index Name']}" if "Index Name" in node else ""))
            stack.extend(node.get("Plans", []))
        runs.append({"execution_ms": plan["Execution Time"], "planning_ms": plan["Planning Time"],
                     "buffers": plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0),
                     "nodes": nodes})
    return runs


def head_and_cursor(url):
    """What `statements` takes for the log at `url`: its newest event's transaction and
    position, and the position a client 1,000 events behind on the session sends as `since`."""
    head_xid, head_position = psql(url, "SELECT transaction_id, position FROM eventlog.events ORDER BY position DESC LIMIT 1").split("|")
    catch_up_after = int(psql(url, f"""SELECT coalesce((SELECT position FROM eventlog.events WHERE work_session_id = {SESSION}
                                               ORDER BY position DESC OFFSET 1000 LIMIT 1), 0)"""))
    head_position = int(head_position)
    until = (head_xid, head_position)
    return (head_xid, head_position, catch_up_after,
            topic_page(url, catch_up_after, 1000, until), topic_page(url, head_position // 2, 100))


def measure(url, setup):
    """Each hot statement on the log at `url` (`setup`: `head_and_cursor`'s answer),
    one session per statement: the median of the calls after plpgsql's plan cache settled."""
    results = []
    for label, sql, calls, *settings in statements(*setup):
        runs = explain(url, sql, calls, *settings)
        later = runs[5:] if len(runs) > 5 else runs
        results.append({
            "statement": label, "calls": calls,
            "first_ms": runs[0]["execution_ms"],
            "median_ms": statistics.median(r["execution_ms"] for r in later),
            "planning_ms": statistics.median(r["planning_ms"] for r in later),
            "buffers": later[-1]["buffers"],
            "plan": later[-1]["nodes"],
        })
    return results


def main():
    args = command_line(admin_url=(REQUIRED, "a database URL of the server; benches make their own databases"),
                        binary=REQUIRED, sizes="10000,1000000",
                        rounds=(7, "rounds, each measuring every size, alternating"),
                        output=os.path.join(HERE, "results", "hot_plans.json"))

    logs = []
    try:
        for size in [int(text) for text in args.sizes.split(",")]:
            name = f"roboscope_bench_plans_{size}"
            url = generated_log(args.admin_url, args.binary, name, size)
            logs.append((name, url))
            psql(url, "VACUUM ANALYZE eventlog.events")
        setups = [head_and_cursor(url) for _, url in logs]
        events = [int(psql(url, "SELECT count(*) FROM eventlog.events")) for _, url in logs]
        rounds = []
        for number in range(args.rounds):
            order = list(range(len(logs))) if number % 2 == 0 else list(reversed(range(len(logs))))
            measured = {index: measure(logs[index][1], setups[index]) for index in order}
            rounds.append([measured[index] for index in range(len(logs))])
    finally:
        for name, _ in logs:
            psql(args.admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    points = []
    for index, count in enumerate(events):
        statements_here = []
        for position in range(len(rounds[0][index])):
            times = [each[index][position]["median_ms"] for each in rounds]
            statements_here.append(dict(rounds[-1][index][position], median_ms=statistics.median(times),
                                        min_ms=min(times), max_ms=max(times), rounds_ms=times))
        points.append({"events": count, "statements": statements_here})
    growth = []
    if len(events) > 1:
        for position, row in enumerate(points[0]["statements"]):
            ratios = [each[-1][position]["median_ms"] / max(each[0][position]["median_ms"], 0.001) for each in rounds]
            growth.append({"statement": row["statement"], "median": statistics.median(ratios), "min": min(ratios),
                           "max": max(ratios), "buffers": points[-1]["statements"][position]["buffers"] / max(1, row["buffers"])})

    print(f"{args.rounds} rounds, sizes alternating; median [min-max] of each round's median")
    print(f"{'statement':<70} " + " ".join(f"{p['events']:>22,} ev" for p in points) + "   largest/smallest, same round")
    for index, row in enumerate(points[0]["statements"]):
        figures = " ".join(f"{p['statements'][index]['median_ms']:>8.3f} [{p['statements'][index]['min_ms']:.3f}-{p['statements'][index]['max_ms']:.3f}]"
                           for p in points)
        ratio = f"   {growth[index]['median']:.2f} [{growth[index]['min']:.2f}-{growth[index]['max']:.2f}]" if growth else ""
        print(f"{row['statement']:<70} {figures}{ratio}")
    save_results({"machine": machine(), "rounds": args.rounds, "points": points, "growth": growth}, args.output, indent=1)


if __name__ == "__main__":
    main()
