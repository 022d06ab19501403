"""Cost that does not grow with the work: a backlog of a million rows due at once beside 10,000.

    nice -n 10 .venv/bin/python bench/backlog.py [--pg URL] [--db sqlite|postgresql|both]
                                                 [--rows 1000000] [--small 10000] [--provider log|webhook]
                                                 [--window SECONDS]
    .venv/bin/python bench/backlog.py --quick           # 2,000 beside 200; prints only, keeps nothing
    .venv/bin/python bench/backlog.py write             # render docs/benchmarks.md "## Backlog"

On each database, one after the other in one run: ``--small`` rows due at once, then ``--rows``
(a campaign to a million contacts, or a day of downtime), each on a fresh database of its own.
For each: the dashboard's queue and health pages with the rows due (Flask test client, signed
in as ops, median of 5), then a real `tickwork consumer` (4 threads, its periodic jobs on: it
ticks as it starts and once a minute after, and its ticks hand the rows over): the hand-over of
the tick that found them (its seconds, and each later tick's), the drain's rate (rows published
per second from that tick's start to the last publish, by the database's clock, over the whole
drain or the first ``--window`` seconds of it), the consumer's RSS every ten seconds. ``log`` rows by default; ``--provider
webhook`` sends to a loopback receiver answering after 20 ms.
"""

from common import ROOT, machine, make_app, record, recorded, when_measured, write_section

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import func, select, text

import clock as bench_clock
import throughput as bench_tp

RESULTS = ROOT / "bench" / ".backlog-results.json"
PASSWORD = "bench password 1"


def _due_rows(app, ws: int, channel: int, count: int, kind: str) -> None:
    """``count`` queued rows due a second ago, made by the database itself (generate_series / a recursive CTE)."""
    from models.core.database import db

    payload = '{"body": "bench"}'
    with app.app_context(), db.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("""
                INSERT INTO scheduled_actions (workspace_id, action_type, target_key, channel_id, payload, publish_at,
                    status, attempt_count, origin, created_at, updated_at)
                SELECT :ws, 'publish_post', 't' || g, :ch, CAST(:payload AS JSON), now() - interval '1 second',
                    'queued', 0, 'person', now(), now()
                FROM generate_series(1, :n) g"""), {"ws": ws, "ch": channel, "n": count, "payload": payload})
            conn.execute(text("ANALYZE scheduled_actions"))
        else:
            at = (datetime.now(timezone.utc) - timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
            conn.execute(text("""
                WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < :n)
                INSERT INTO scheduled_actions (workspace_id, action_type, target_key, channel_id, payload, publish_at,
                    status, attempt_count, origin, created_at, updated_at)
                SELECT :ws, 'publish_post', 't' || n, :ch, :payload, :at, 'queued', 0, 'person', :at, :at FROM g"""),
                {"ws": ws, "ch": channel, "n": count, "payload": payload, "at": at})
            conn.execute(text("ANALYZE"))


def _ops_user(app, ws: int) -> None:
    from models.accounts.members import add_member
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        add_member(session, ws, email="ops@backlog.test", role="ops", password=PASSWORD, now=runtime().now())


def _pages(app) -> dict:
    """The queue and health pages' server time, median of 5 after a warm-up, in ms."""
    client = app.test_client()
    signed = client.post("/login", data={"email": "ops@backlog.test", "password": PASSWORD})
    assert signed.status_code == 303, signed.status_code
    out = {}
    for name, url in (("queue", "/queue"), ("health", "/health")):
        client.get(url)
        times = []
        for _ in range(5):
            started = time.perf_counter()
            assert client.get(url).status_code == 200
            times.append((time.perf_counter() - started) * 1000)
        out[name] = round(statistics.median(times), 1)
    return out


def _ticks_handing(app) -> bool:
    """Whether a tick has begun to hand rows over (a running tick's summary is written when it ends)."""
    from models.clock.tables import ClockRun
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(ClockRun).where(ClockRun.kind == "tick")) > 0


def one(kind: str, pg_admin: str | None, rows: int, workdir: Path, provider: str, window: float | None) -> dict:
    from jobs.clock import tick_once
    from models.clock.tables import ClockRun
    from models.core.database import read_session

    load_before = os.getloadavg()[0]
    database_url = bench_clock.fresh_database(kind, pg_admin, workdir)
    queue_url = bench_clock.queue_url_for(kind, database_url, workdir)
    receiver = None
    try:
        app = make_app(database_url, frozen_at=None, WTF_CSRF_ENABLED=False)
        config = {}
        if provider == "webhook":
            receiver = bench_tp.start_receiver("webhook", workdir, 0.02)
            config = {"url": f"http://127.0.0.1:{receiver[1]}/hook"}
        ws, channel = bench_clock.workspace_with_log_channel(app, provider, config)
        _ops_user(app, ws)
        loading = time.monotonic()
        _due_rows(app, ws, channel, rows, kind)
        loaded = time.monotonic() - loading
        pages = _pages(app)
        log = workdir / f"backlog-{kind}-{rows}.log"
        consumer = bench_clock.start_consumer(database_url, queue_url, workers=4, periodic=True, log=log)
        bench_clock.wait_started([log])
        started = time.monotonic()
        # The consumer's own periodic tick hands the rows over (it ticks as it starts, then once a minute), as in
        # production: a second tick run here beside it would hand the same rows over twice.
        summary = {"due": 0}
        while time.monotonic() - started < 90 and not _ticks_handing(app):
            time.sleep(0.2)
        if not _ticks_handing(app):
            with make_app(database_url, queue_url=queue_url, frozen_at=None).app_context():
                summary = tick_once(inline=False)
        handed = time.monotonic() - started
        samples, rss = [], []
        deadline = started + (window or 7200)
        while True:
            done = bench_clock.count(app, "published")
            now = time.monotonic()
            samples.append((now - started, done))
            rss.append(bench_clock.rss_kib(consumer.pid))
            if done >= rows or now >= deadline:
                break
            time.sleep(10 if rows > 50_000 else 0.5)
        published = samples[-1][1]
        bench_clock.stop(consumer)
        from models.actions.tables import ScheduledAction

        with app.app_context(), read_session() as session:
            ticks = [run for run in session.scalars(select(ClockRun).where(ClockRun.kind == "tick")
                                                     .order_by(ClockRun.id)) if run.summary]
            last_publish = session.scalar(select(func.max(ScheduledAction.updated_at))
                                          .where(ScheduledAction.status == "published"))
        # The drain is timed by the database's own clock, from the start of the tick that handed the rows over
        # (the consumer's own periodic tick when it came first, else the one run here) to the last publish:
        # the samples above are ten seconds apart and the consumer's tick may run before this one.
        handing = next((run for run in ticks if (run.summary.get("due") or 0) > 0), None)
        elapsed = (last_publish - handing.started_at).total_seconds() if handing and last_publish else samples[-1][0]
        handover_ms = handing.summary.get("duration_ms") if handing else handed * 1000
        due = handing.summary.get("due") if handing else summary["due"]
        after_warm = [kib for (at, _), kib in zip(samples, rss) if at >= min(60, elapsed / 10)] or rss
        return {"bench": "backlog", "db": kind, "provider": provider, "rows": rows, "load_seconds": round(loaded, 1),
                "pages_ms": pages, "tick_handover_seconds": round(handover_ms / 1000, 2), "tick_due": due,
                "tick_handover_per_1000_ms": round(handover_ms / max(due, 1) * 1000, 2),
                "handed_by": "bench" if handing is None or summary["due"] else "consumer",
                "later_ticks": [{"due": t.summary.get("due"), "resumed": t.summary.get("resumed_after") is not None,
                                 "ms": t.summary.get("duration_ms")} for t in ticks if t is not handing],
                "published": published, "seconds": round(elapsed, 1), "rate": round(published / max(elapsed, 1e-3)),
                "complete": published >= rows,
                "rss_start_mib": round(after_warm[0] / 1024, 1), "rss_end_mib": round(rss[-1] / 1024, 1),
                "rss_peak_mib": round(max(rss) / 1024, 1),
                "load": [round(load_before, 1), round(os.getloadavg()[0], 1)]}
    finally:
        if receiver is not None:
            bench_tp.stop_receiver(receiver[0], receiver[2])
        bench_clock.drop_database(database_url, pg_admin)


def render() -> str:
    stored = recorded(RESULTS)
    lines = [f"`bench/backlog.py`. Machine: {machine()}, shared with other work (its load average on two cores at "
             "the start and the end of each drain is in the last column); PostgreSQL 15 on the same box. Measured: "
             + when_measured(stored) + ".", "",
             __doc__.split("\n\n", 2)[2].strip(), "",
             "| database | provider | rows due | queue page | health page | tick hand-over | per 1,000 handed | later ticks "
             "| published | rate | consumer RSS (after warm-up → end, peak) | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pairs = {}
    for key in sorted(stored, key=lambda k: (stored[k]["db"], stored[k]["provider"], stored[k]["rows"])):
        d = stored[key]
        later = ", ".join(f"{t['due']:,}{' (resumed)' if t['resumed'] else ''}" for t in d["later_ticks"]) or "—"
        lines.append(f"| {d['db']} | {d['provider']} | {d['rows']:,} | {d['pages_ms']['queue']} ms | "
                     f"{d['pages_ms']['health']} ms | {d['tick_handover_seconds']} s | "
                     f"{d['tick_handover_per_1000_ms']} ms | {later} | {d['published']:,} in {d['seconds']} s"
                     f"{'' if d['complete'] else ' (window)'} | {d['rate']:,}/s | {d['rss_start_mib']} → "
                     f"{d['rss_end_mib']} MiB, {d['rss_peak_mib']} | "
                     f"{' → '.join(map(str, d['load'])) if d.get('load') else '—'} |")
        pairs.setdefault((d["db"], d["provider"]), []).append(d)
    lines += ["", "### Against the targets", ""]
    for (db, provider), runs in sorted(pairs.items()):
        if len(runs) < 2:
            continue
        small, big = sorted(runs, key=lambda d: d["rows"])[0], sorted(runs, key=lambda d: d["rows"])[-1]
        rate = big["rate"] / small["rate"]
        queue = big["pages_ms"]["queue"] / small["pages_ms"]["queue"]
        health = big["pages_ms"]["health"] / small["pages_ms"]["health"]
        hand = big["tick_handover_per_1000_ms"] / small["tick_handover_per_1000_ms"]
        lines.append(f"- {db}, {provider}: {big['rows']:,} due drain at {rate:.2f} of the {small['rows']:,}-row rate "
                     f"(target ≥ 0.8: {'met' if rate >= 0.8 else 'missed'}); queue page {queue:.2f}×, health page "
                     f"{health:.2f}× (target ≤ 2: {'met' if max(queue, health) <= 2 else 'missed'}); tick hand-over per "
                     f"row {hand:.2f}×; consumer RSS {big['rss_start_mib']} → {big['rss_end_mib']} MiB.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", choices=["run", "write"], default="run")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--pg", default=bench_clock.DEFAULT_PG)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--provider", choices=["log", "webhook"], default="log")
    parser.add_argument("--window", type=float, default=None, help="measure the big drain over its first N seconds")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.which == "write":
        write_section("Backlog", render())
        return
    if args.quick:
        args.rows, args.small = 2_000, 200
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            for rows, window in ((args.small, None), (args.rows, args.window)):
                result = one(kind, args.pg, rows, Path(tmp), args.provider, window)
                record(result, RESULTS, f"backlog:{kind}:{args.provider}:{rows}", keep=not args.quick)
    if not args.quick:
        write_section("Backlog", render())


if __name__ == "__main__":
    main()
