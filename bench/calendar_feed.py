"""Benchmark: scheduling posts from a CSV file (dry run, commit) and serving the calendar feed.

A fresh database with one workspace (America/New_York) and one log channel; the frozen "now"
is 2026-06-01 12:00 UTC. Through the Flask test client and the API, as a script would:

1. the dry run of a ``--lines``-line file (posts spread over the next 90 days, at most 5,000);
2. its commit as drafts, and the commit of another file of ``--approved`` lines as approved
   posts (each approve queues its row at once, through the reconciler);
3. the calendar feed of that workspace (every post, a daily recurring rule's occurrences),
   the median of ``REPEATS`` fetches, and its size.

    .venv/bin/python bench/calendar_feed.py                       # SQLite
    .venv/bin/python bench/calendar_feed.py --pg postgresql://postgres@127.0.0.1:5432/postgres

Figures are printed and written under "## Calendar feed and CSV posts" in docs/benchmarks.md.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import drop_pg, machine, make_app, migrate, pg_database, write_section  # noqa: E402

REPEATS = 3
BASE_URL = "https://tickwork.example"


def _file(lines: int, offset: int) -> bytes:
    rows = ["body,targets,date,time"]
    for n in range(lines):
        day = 2 + (n + offset) % 88
        month, mday = (6, day) if day <= 30 else ((7, day - 30) if day <= 61 else (8, day - 61))
        rows.append(f"Post {offset + n} of the bench,main,2026-{month:02d}-{mday:02d},"
                    f"{8 + n % 10:02d}:{(n * 7) % 60:02d}")
    return ("\n".join(rows) + "\n").encode()


def _timed(call):
    start = time.perf_counter()
    answer = call()
    return answer, time.perf_counter() - start


def run(url: str, lines: int, approved: int) -> dict:
    from tests.conftest import make_world

    app = make_app(url, TICKWORK_BASE_URL=BASE_URL, TICKWORK_API_RATE_LIMIT="100000 per minute")
    world = make_world(app)
    client = app.test_client()
    auth = {**world.auth("marketer"), "Content-Type": "text/csv"}
    figures = {}
    report, figures["dry run"] = _timed(lambda: client.post("/api/v1/posts.csv?dry_run=1", data=_file(lines, 0),
                                                            headers=auth))
    assert report.status_code == 200 and report.json["accepted"] == lines, report.json
    done, figures["commit as drafts"] = _timed(lambda: client.post(
        f"/api/v1/posts/imports/{report.json['import_id']}/commit", headers=world.auth("marketer"),
        json={"status": "draft"}))
    assert done.json["created"] == lines, done.json
    second = client.post("/api/v1/posts.csv?dry_run=1", data=_file(approved, lines), headers=auth).json
    done, figures["commit as approved"] = _timed(lambda: client.post(
        f"/api/v1/posts/imports/{second['import_id']}/commit", headers=world.auth("marketer"),
        json={"status": "approved"}))
    assert done.json["created"] == approved and done.json["queued_rows"] == approved, done.json
    client.post("/api/v1/recurring", headers=world.auth("marketer"), json={
        "action_type": "send_email", "channel": "main", "target_key": "list@example.test", "payload": {},
        "rrule": "FREQ=DAILY", "starts_local": "2026-06-01T09:00"})
    with app.test_request_context():
        from models.accounts.feeds import issue_feed_token
        from models.core.database import write_session
        from models.core.runtime import runtime

        with write_session() as session:
            raw = issue_feed_token(session, world.workspace_id, world.users["marketer"], now=runtime().now())
    times, size = [], 0
    for _ in range(REPEATS):
        answer, spent = _timed(lambda: client.get(f"/calendar/feed/{raw}.ics"))
        assert answer.status_code == 200
        times.append(spent)
        size = len(answer.data)
    figures["feed"] = statistics.median(times)
    figures["feed events"] = answer.data.count(b"BEGIN:VEVENT")
    figures["feed bytes"] = size
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", help="a PostgreSQL admin URL; SQLite when absent")
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--approved", type=int, default=1000)
    args = parser.parse_args()
    if args.pg:
        name = "tickwork_bench_feed"
        url = pg_database(args.pg, name)
        try:
            migrate(url)
            figures = run(url, args.lines, args.approved)
        finally:
            drop_pg(args.pg, name)
        backend = "PostgreSQL"
    else:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'bench.db'}"
            migrate(url)
            figures = run(url, args.lines, args.approved)
        backend = "SQLite"
    lines = [f"| {backend} | {args.lines:,}-line dry run | {figures['dry run']:.2f} s |",
             f"| {backend} | its commit as drafts | {figures['commit as drafts']:.2f} s |",
             f"| {backend} | {args.approved:,} lines committed as approved (rows queued) | "
             f"{figures['commit as approved']:.2f} s |",
             f"| {backend} | the feed: {figures['feed events']:,} events, {figures['feed bytes'] / 1024:,.0f} KiB "
             f"(median of {REPEATS}) | {figures['feed']:.2f} s |"]
    print("\n".join(lines))
    write_section(f"Calendar feed and CSV posts ({backend})", f"""
Measured by `bench/calendar_feed.py` on {machine()}, through the Flask test client; wall
times, on a machine other work was sharing. Each committed line goes through the posts' own
operations (create, then approve: the reconciler queues its rows), one line per savepoint.

| database | what | time |
|---|---|---|
""" + "\n".join(lines))


if __name__ == "__main__":
    main()
