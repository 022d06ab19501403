"""Benchmark: the health page's trends over a month of rollups, and the tick's rollup of a busy minute.

History: ``DAYS`` days of clock runs as the clock leaves them, a tick and a reconcile every
minute for each ticking consumer (``--consumers``; every one of them rolls up the same minutes),
each tick carrying its minute's rollup and, on the minute that finishes an hour, the hour's.
Figures, each the median of ``REPEATS`` after a warm-up:

- reading the trends of the last 24 hours and 7 days (``read_trends``), and the whole /health
  page and /metrics through the Flask test client, signed in as ops;
- one tick's rollup of a minute holding 0, 1,000 and 10,000 claims and their publishes
  (``roll_up``), in a database holding the month.

    .venv/bin/python bench/health.py                     # SQLite
    .venv/bin/python bench/health.py --pg postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python bench/health.py --quick                # a quick look; prints only

Figures are printed and written under "## Health page" in docs/benchmarks.md.
"""

from common import T0, machine, make_app, median_ms, migrate, scratch_database, write_section

import argparse
import time
from datetime import timedelta

DAYS = 30
REPEATS = 9
PASSWORD = "bench password"
BUSY = (0, 1_000, 10_000)
QUICK_DAYS, QUICK_BUSY = 2, (0, 100, 1_000)  # --quick: a look that the code runs, not figures to keep


def _history(consumers: int):
    """Clock runs for DAYS days before T0, as ``consumers`` ticking consumers leave them."""
    from models.clock.rollup import iso, merge

    start = T0 - timedelta(days=DAYS)
    hour_minutes: list[dict] = []
    minute = start
    while minute < T0 - timedelta(minutes=2):
        job = {"runs": consumers, "errors": 0, "unfinished": 0, "first": iso(minute), "last": iso(minute),
               "longest": 0.05}
        rollup = {"minute": iso(minute), "claims": 40, "p50": 0.3, "p95": 0.9, "max": 1.4, "sum": 14.0,
                  "histogram": [10, 15, 10, 5, 0, 0, 0, 0, 0, 0, 0, 0], "published": 39, "failed": 1, "missed": 0,
                  "backlog": 0, "jobs": {"tick": job, "reconcile": dict(job)}}
        hour_minutes.append(rollup)
        hours = []
        if minute.minute == 59:
            hours = [{"hour": iso(minute.replace(minute=0)), **merge(hour_minutes)}]
            hour_minutes = []
        started = minute + timedelta(minutes=2)
        for _ in range(consumers):
            yield {"kind": "tick", "started_at": started, "finished_at": started + timedelta(milliseconds=80),
                   "error": None, "rollup_hour": minute.replace(minute=0) if hours else None,
                   "summary": {"due": 40, "dispatched": 40, "scheduled_ahead": 3, "missed": 0, "recovered": 0,
                               "batches": 1, "budget_spent": False, "mode": "queue", "outcomes": {"queued": 40},
                               "backlog": 0, "duration_ms": 80, "rollup": [rollup], "rollup_hours": hours}}
            yield {"kind": "reconcile", "started_at": started, "finished_at": started + timedelta(milliseconds=30),
                   "error": None, "rollup_hour": None, "summary": {"posts": 12, "inserted": 0}}
        minute += timedelta(minutes=1)


def load(app, consumers: int) -> None:
    from sqlalchemy import insert

    from models.accounts.tables import Membership, User, Workspace
    from models.clock.tables import ClockRun
    from models.core.database import write_session

    with app.app_context():
        with write_session() as session:
            workspace = Workspace(name="Bench", timezone="America/New_York", created_at=T0)
            user = User(email="ops@bench.test", created_at=T0)
            user.set_password(PASSWORD)
            session.add_all([workspace, user])
            session.flush()
            session.add(Membership(user_id=user.id, workspace_id=workspace.id, role="ops"))
        batch = []
        for row in _history(consumers):
            batch.append(row)
            if len(batch) >= 20_000:
                with write_session() as session:
                    session.execute(insert(ClockRun), batch)
                batch.clear()
        with write_session() as session:
            session.execute(insert(ClockRun), batch)


def busy_minute(app, claims: int) -> float:
    """One minute with ``claims`` claims and publishes, rolled up as a tick would; returns ms."""
    from sqlalchemy import insert, select

    from models.actions.tables import ActionEvent, ScheduledAction
    from models.channels.tables import Channel
    from models.clock.rollup import roll_up
    from models.core.database import read_session, write_session
    from models.accounts.tables import Workspace

    minute = T0 - timedelta(minutes=2 + claims // 1000)
    with app.app_context():
        if claims:
            with write_session() as session:
                workspace_id = session.scalar(select(Workspace.id))
                channel = session.scalar(select(Channel.id).where(Channel.workspace_id == workspace_id))
                if channel is None:
                    session.add(Channel(workspace_id=workspace_id, name="main", kind="log", config={}, created_at=T0))
                    session.flush()
                    channel = session.scalar(select(Channel.id))
                ids = session.execute(insert(ScheduledAction).returning(ScheduledAction.id), [
                    {"workspace_id": workspace_id, "action_type": "send_email", "target_key": f"busy-{claims}-{n}",
                     "channel_id": channel, "payload": {}, "publish_at": minute, "status": "published",
                     "attempt_count": 1, "origin": "person", "created_at": minute - timedelta(hours=1),
                     "updated_at": minute} for n in range(claims)]).scalars().all()
                events = []
                for n, ident in enumerate(ids):
                    at = minute + timedelta(seconds=55 * n / claims)
                    events.append({"action_id": ident, "from_status": "queued", "to_status": "submitted", "at": at,
                                   "actor": "job:tick"})
                    events.append({"action_id": ident, "from_status": "submitted", "to_status": "published",
                                   "at": at + timedelta(milliseconds=200), "actor": "job:tick"})
                session.execute(insert(ActionEvent), events)

        def once():
            with read_session() as session:
                [rolled] = roll_up(session, [minute], "tick")
            assert rolled["claims"] == claims, rolled["claims"]

        return median_ms(once, REPEATS, warmups=1)


def measure(app) -> dict[str, float]:
    from models.core.database import read_session
    from models.overview.health import read_trends

    figures = {}
    with app.app_context():
        def trends():
            with read_session() as session:
                day, week = read_trends(session, T0, [(timedelta(hours=24), timedelta(hours=1)),
                                                      (timedelta(days=7), timedelta(hours=4))],
                                        kinds=["tick", "reconcile"])
            assert sum(b.claims for b in week.buckets) > 0 and len(day.buckets) == 24

        figures["trends (24 h + 7 days)"] = median_ms(trends, REPEATS, warmups=1)
    client = app.test_client()
    assert client.post("/login", data={"email": "ops@bench.test", "password": PASSWORD}).status_code == 303
    for name, url in (("/health page", "/health"), ("/metrics", "/metrics")):
        assert client.get(url).status_code == 200
        figures[name] = median_ms(lambda url=url: client.get(url), REPEATS, warmups=1)
    for claims in BUSY:
        figures[f"rollup of a minute with {claims:,} claims"] = busy_minute(app, claims)
    return figures


def run(backend: str, admin_url: str | None, consumers: int) -> dict[str, float]:
    started = time.perf_counter()
    with scratch_database(admin_url, f"tickwork_bench_health_{consumers}") as url:
        migrate(url)
        app = make_app(url, WTF_CSRF_ENABLED=False)
        load(app, consumers)
        loaded = time.perf_counter() - started
        figures = measure(app)
        from models.core.database import db

        with app.app_context():
            db.engine.dispose()
    print(f"{backend}, {consumers} ticking consumer(s), {DAYS} days of runs (built in {loaded:.0f} s): "
          + ", ".join(f"{name} {ms:.1f} ms" for name, ms in figures.items()), flush=True)
    return figures


def section(results: dict[str, dict[str, float]]) -> str:
    """The "## Health page" section's body."""
    names = list(next(iter(results.values())))
    lines = [f"`bench/health.py`: {DAYS} days of clock runs as the clock leaves them (a tick and a reconcile a",
             "minute per ticking consumer, every tick carrying its minute's rollup and, once an hour, the hour's),",
             f"median of {REPEATS} after a warm-up; pages through the Flask test client, signed in as ops.",
             f"Machine: {machine()} (shared and busy).",
             "",
             "| figure | " + " | ".join(results) + " |",
             "|---|" + "---|" * len(results)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{figures[name]:.1f} ms" for figures in results.values()) + " |")
    lines += ["", "A week of charts reads the hour rollups through the partial `rollup_hour` index (168 per ticking",
              "consumer) and only the unfinished hour's minutes through `(kind, started_at)`; reading every minute",
              "of the week instead (10,080 summaries) took about 270 ms on SQLite here. A tick's rollup reads one",
              "minute of events through `ix_action_events_at`, so its cost follows that minute's claims, not the",
              "history."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", help="PostgreSQL admin URL; also benchmark PostgreSQL")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DAYS} days of runs, smaller busy minutes; print only")
    args = parser.parse_args()
    if args.quick:
        global DAYS, BUSY
        DAYS, BUSY = QUICK_DAYS, QUICK_BUSY
    results = {"SQLite, 1 consumer": run("sqlite", None, 1), "SQLite, 3 consumers": run("sqlite", None, 3)}
    if args.pg:
        results["PostgreSQL, 1 consumer"] = run("postgresql", args.pg, 1)
        results["PostgreSQL, 3 consumers"] = run("postgresql", args.pg, 3)
    if not (args.no_write or args.quick):
        write_section("Health page", section(results))


if __name__ == "__main__":
    main()
