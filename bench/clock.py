"""Benchmarks of the clock: drain, lateness, the tick's query, consumer memory.

    .venv/bin/python bench/clock.py drain      [--pg URL] [--rows 10000]
    .venv/bin/python bench/clock.py lateness   [--pg URL] [--actions 1000] [--minutes 5]
    .venv/bin/python bench/clock.py tickquery  [--pg URL]
    .venv/bin/python bench/clock.py memory     [--actions 50000] [--provider log|webhook]
    .venv/bin/python bench/clock.py all --pg URL --write     # everything, then docs/benchmarks.md "## Clock"
    .venv/bin/python bench/clock.py drain --quick            # any of them at a small volume; prints only

Every figure comes from real processes on real databases: a consumer started with
``tickwork consumer``, the tick run as ``tickwork tick``, the log provider writing real
outbox rows. Results are printed as JSON lines and kept in bench/.clock-results.json so
``--write`` can render whichever have been measured.
"""

from common import (ROOT, drop_pg, environment, machine, make_app, migrate, pg_database, record, recorded, tickwork,
                    when_measured, workspace_with_channel, write_section)

import argparse
import json
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
from sqlalchemy import func, insert, select, text

RESULTS = ROOT / "bench" / ".clock-results.json"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
TICKQUERY_SIZES = (10_000, 1_000_000)
# --quick: each bench at a small volume, printed and not kept; a look that the code runs, not figures
QUICK = {"rows": 200, "tickquery_sizes": (2_000, 20_000), "lateness_actions": 20, "lateness_minutes": 0.25,
         "memory_actions": 500}


# -- set-up -----------------------------------------------------------------------------


def fresh_database(kind: str, pg_admin: str | None, workdir: Path) -> str:
    """A new database built by the migrations: a SQLite file in ``workdir``, or a PostgreSQL one; its URL."""
    if kind == "sqlite":
        url = f"sqlite:///{workdir / f'clock-{uuid.uuid4().hex[:6]}.db'}"
    else:
        url = pg_database(pg_admin, f"tickwork_bench_clock_{uuid.uuid4().hex[:8]}")
    migrate(url)
    return url


def drop_database(url: str, pg_admin: str | None) -> None:
    if url.startswith("postgresql"):
        drop_pg(pg_admin, url.rsplit("/", 1)[1])


def env_for(database_url: str, queue_url: str, policy: dict | None = None) -> dict:
    """The environment of a consumer or tick on the real clock, with ``policy`` over the defaults.

    The benches' receivers listen on loopback, which the egress policy refuses unless opened."""
    return environment(database_url, queue_url, TICKWORK_POLICY_JSON=json.dumps(policy or {}), PYTHONUNBUFFERED="1",
                       TICKWORK_EGRESS_ALLOW="127.0.0.0/8")


def workspace_with_log_channel(app, kind: str = "log", config: dict | None = None) -> tuple[int, int]:
    """A UTC workspace with a name of its own and its channel "main" of ``kind``; their ids."""
    return workspace_with_channel(app, kind, config, name=f"Bench {uuid.uuid4().hex[:4]}", timezone="UTC")


def insert_rows(app, ws: int, channel: int, publish_ats: list[datetime], status: str = "queued",
                chunk: int = 5000) -> None:
    from models.actions.tables import ScheduledAction
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context():
        now = runtime().now()
        for start in range(0, len(publish_ats), chunk):
            with write_session() as session:
                session.execute(insert(ScheduledAction), [
                    dict(workspace_id=ws, action_type="publish_post", target_key=f"t{start + i}", channel_id=channel,
                         payload={"body": "bench"}, publish_at=at, status=status, attempt_count=0, origin="person",
                         created_at=now, updated_at=now)
                    for i, at in enumerate(publish_ats[start:start + chunk])])


def count(app, status: str) -> int:
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(ScheduledAction).where(ScheduledAction.status == status))


def start_consumer(database_url: str, queue_url: str, *, workers: int, periodic: bool, log: Path,
                   policy: dict | None = None) -> subprocess.Popen:
    args = tickwork("consumer", "--workers", str(workers))
    if not periodic:
        args.append("--no-periodic")
    handle = open(log, "a")
    return subprocess.Popen(args, cwd=ROOT, env=env_for(database_url, queue_url, policy), stdout=handle, stderr=handle)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_started(logs: list[Path], timeout: float = 300) -> None:
    """Until each consumer whose output goes to ``logs`` says it started (on a loaded box a consumer's start-up
    takes far longer than the few seconds a bench used to allow, and would count in its drain)."""
    deadline = time.monotonic() + timeout
    while not all(log.exists() and "Huey consumer started" in log.read_text() for log in logs):
        if time.monotonic() > deadline:
            raise SystemExit(f"a consumer did not start within {timeout:.0f} s; see {logs}")
        time.sleep(0.2)
    time.sleep(0.5)  # its first poll of the queue


def queue_url_for(kind: str, database_url: str, workdir: Path) -> str:
    return f"sqlite:///{workdir / f'queue-{uuid.uuid4().hex[:6]}.db'}" if kind == "sqlite" else database_url


# -- drain ------------------------------------------------------------------------------


def raw_claim_and_finish(database_url: str, ids: list[int], connections: int = 1) -> float:
    """Rows/s of the bare minimum: a guarded claim UPDATE and a final UPDATE, each committed."""
    def work(part: list[int]):
        if database_url.startswith("sqlite"):
            import sqlite3

            conn = sqlite3.connect(database_url.removeprefix("sqlite:///"), timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            mark = "?"
        else:
            conn = psycopg.connect(database_url, autocommit=True)
            mark = "%s"
        now = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(" ") if mark == "?" else datetime.now(timezone.utc)
        for ident in part:
            token = uuid.uuid4().hex
            if mark == "?":
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("BEGIN")
            conn.execute(f"UPDATE scheduled_actions SET status='submitted', claim_token={mark}, "
                         f"attempt_count=attempt_count+1, submitted_at={mark}, updated_at={mark} "
                         f"WHERE id={mark} AND status='queued'", (token, now, now, ident))
            conn.execute("COMMIT")
            if mark == "?":
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("BEGIN")
            conn.execute(f"UPDATE scheduled_actions SET status='published', finished_at={mark}, updated_at={mark} "
                         f"WHERE id={mark} AND claim_token={mark}", (now, now, ident, token))
            conn.execute("COMMIT")
        conn.close()

    parts = [ids[i::connections] for i in range(connections)]
    threads = [threading.Thread(target=work, args=(part,)) for part in parts]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(ids) / (time.monotonic() - started)


def bench_drain(kind: str, pg_admin: str | None, rows: int, workdir: Path, workers: int = 4,
                consumers: int = 1) -> dict:
    """tick → Huey → claim → log provider → published, for ``rows`` due actions; beside the raw loop.

    Twice, with the same consumers: first with the tick run in an interpreter that has the
    app loaded already, as the consumer's periodic tick runs (the figure the ratio is taken
    from); then over as many fresh rows with the tick run as ``tickwork tick``, whose
    interpreter start and imports (a second or more on this box) count in its drain.
    """
    from jobs.clock import tick_once

    database_url = fresh_database(kind, pg_admin, workdir)
    queue_url = queue_url_for(kind, database_url, workdir)
    try:
        app = make_app(database_url, frozen_at=None)
        ws, channel = workspace_with_log_channel(app)
        now = datetime.now(timezone.utc)
        raw_before = _raw_rate(app, database_url, ws, channel, rows, kind, now)
        insert_rows(app, ws, channel, [now - timedelta(seconds=1)] * rows)
        logs = [workdir / f"drain-{uuid.uuid4().hex[:6]}-{n}.log" for n in range(consumers)]
        running = [start_consumer(database_url, queue_url, workers=workers, periodic=False, log=log) for log in logs]
        ticker = make_app(database_url, queue_url=queue_url, frozen_at=None)  # the queue the consumers read
        wait_started(logs)  # the consumers are up and polling before the clock starts
        started = time.monotonic()
        with ticker.app_context():
            summary = tick_once(inline=False)
        fanned_out = time.monotonic() - started
        drained = _wait_published(app, rows + raw_before["rows"], started)
        # Again over fresh rows, the tick as the command line runs it.
        insert_rows(app, ws, channel, [now] * rows)
        started = time.monotonic()
        tick = subprocess.run(tickwork("tick"), cwd=ROOT, env=env_for(database_url, queue_url), capture_output=True,
                              text=True)
        fanned_out_command = time.monotonic() - started
        if tick.returncode:
            raise SystemExit(tick.stderr)
        drained_command = _wait_published(app, 2 * rows + raw_before["rows"], started)
        for consumer in running:
            stop(consumer)
        # The raw loop on the same database in the same run, over fresh rows, before the drains
        # and after them: the box's speed drifts within a run, so the faster of the two counts.
        raw_after = _raw_rate(app, database_url, ws, channel, rows, kind, now)
        raw_one = max(raw_before["one"], raw_after["one"])
        raw_four = max(raw_before["four"], raw_after["four"]) if kind == "postgresql" else None
        raw = max(raw_one, raw_four or 0)
        result = {"bench": "drain", "db": kind, "rows": rows, "workers": workers, "consumers": consumers, "tick_seconds": round(fanned_out, 2),
                  "tick_due": summary["due"], "tick_dispatched": summary["dispatched"],
                  "budget_spent": summary["budget_spent"], "drain_seconds": round(drained, 2),
                  "full_rate": round(rows / drained), "raw_rate_1": round(raw_one),
                  "raw_rate_4": round(raw_four) if raw_four else None,
                  "command_tick_seconds": round(fanned_out_command, 2), "command_drain_seconds": round(drained_command, 2),
                  "command_full_rate": round(rows / drained_command),
                  "raw_spread": [round(raw_before["one"]), round(raw_after["one"])]}
        result["ratio"] = round(result["full_rate"] / raw, 3)
        result["command_ratio"] = round(result["command_full_rate"] / raw, 3)
        return result
    finally:
        drop_database(database_url, pg_admin)


def _raw_rate(app, database_url: str, ws: int, channel: int, rows: int, kind: str, now: datetime) -> dict:
    """The raw loop over ``rows`` fresh rows: half on one connection, half on four (PostgreSQL)."""
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    insert_rows(app, ws, channel, [now] * rows)
    with app.app_context(), read_session() as session:
        ids = list(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == "queued")
                                   .order_by(ScheduledAction.id)))
    if kind != "postgresql":
        return {"one": raw_claim_and_finish(database_url, ids, 1), "four": 0, "rows": rows}
    one = raw_claim_and_finish(database_url, ids[: rows // 2], 1)
    four = raw_claim_and_finish(database_url, ids[rows // 2:], 4)
    return {"one": one, "four": four, "rows": rows}


def _wait_published(app, total: int, started: float) -> float:
    """Seconds from ``started`` until ``total`` rows are published."""
    while count(app, "published") < total:
        if time.monotonic() - started > 1800:
            raise SystemExit("drain did not finish in 30 minutes")
        time.sleep(0.05)
    return time.monotonic() - started


def bench_join(pg_admin: str, rows: int, workdir: Path, join_after: float = 3.0) -> dict:
    """Two consumer processes on PostgreSQL: one drain with one consumer, one with two from the start, and one
    where the second consumer starts ``join_after`` seconds into the drain; from the consumers' logs, how soon
    the late one took its first task and what share of the chunks it took."""
    from jobs.clock import tick_once

    out: dict = {"bench": "join", "db": "postgresql", "rows": rows, "join_after": join_after}
    for label, starts in (("one", [0.0]), ("two", [0.0, 0.0]), ("joined", [0.0, join_after])):
        database_url = fresh_database("postgresql", pg_admin, workdir)
        try:
            app = make_app(database_url, frozen_at=None)
            ws, channel = workspace_with_log_channel(app)
            insert_rows(app, ws, channel, [datetime.now(timezone.utc) - timedelta(seconds=1)] * rows)
            logs = [workdir / f"join-{label}-{n}-{uuid.uuid4().hex[:4]}.log" for n in range(len(starts))]
            running = [start_consumer(database_url, database_url, workers=4, periodic=False, log=logs[0])]
            ticker = make_app(database_url, queue_url=database_url, frozen_at=None)
            for log in logs[1:]:
                if starts[1] == 0:
                    running.append(start_consumer(database_url, database_url, workers=4, periodic=False, log=log))
            wait_started(logs[:len(running)])
            started = time.monotonic()
            with ticker.app_context():
                tick_once(inline=False)
            handed = time.monotonic() - started
            joined_at = None
            if len(starts) > 1 and starts[1] > 0:
                time.sleep(max(0.0, started + starts[1] - time.monotonic()))
                running.append(start_consumer(database_url, database_url, workers=4, periodic=False, log=logs[1]))
                wait_started([logs[1]])
                joined_at = datetime.now()  # from when it is up: its start-up is the box's, not the queue's
                up_after = time.monotonic() - started
            drained = _wait_published(app, rows, started)
            for consumer in running:
                stop(consumer)
            tasks = [_executed(log) for log in logs]
            out[label] = {"seconds": round(drained, 2), "rate": round(rows / drained),
                          "tasks": [len(t) for t in tasks], "tick_s": round(handed, 2)}
            if joined_at is not None and tasks[1]:
                out[label]["first_task_after_start_s"] = round((min(tasks[1]) - joined_at).total_seconds(), 2)
            if joined_at is not None:
                # Its start-up is the box's: what the engine owes it is a share of what was left once it was up.
                out[label]["up_after_tick_s"] = round(up_after, 2)
                out[label]["tasks_once_up"] = [sum(1 for at in t if at > joined_at) for t in tasks]
        finally:
            drop_database(database_url, pg_admin)
    out["two_over_one"] = round(out["two"]["rate"] / out["one"]["rate"], 2)
    out["joined_over_one"] = round(out["joined"]["rate"] / out["one"]["rate"], 2)
    return out


def _executed(log: Path) -> list[datetime]:
    """When each dispatch task in a consumer's log finished (Huey's "executed in" lines)."""
    found = []
    for line in log.read_text().splitlines() if log.exists() else []:
        if "jobs.tasks.dispatch" in line and "executed in" in line:
            found.append(datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f"))
    return found


# -- lateness ---------------------------------------------------------------------------


def bench_lateness(actions: int, minutes: float, workdir: Path, kind: str = "sqlite", pg_admin: str | None = None) -> dict:
    """Actions spread over ``minutes`` through a real consumer; half scheduled up front (the tick hands
    them over with an eta), half created while it runs (the on_due_soon hook hands them over)."""
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session
    from models.channels.outbox import OutboxEntry

    database_url = fresh_database(kind, pg_admin, workdir)
    queue_url = queue_url_for(kind, database_url, workdir)
    try:
        app = make_app(database_url, queue_url=queue_url, frozen_at=None)
        ws, channel = workspace_with_log_channel(app)
        start = datetime.now(timezone.utc) + timedelta(seconds=15)
        span = timedelta(minutes=minutes)
        upfront = [start + span * (i / actions) for i in range(0, actions, 2)]
        insert_rows(app, ws, channel, upfront)
        consumer = start_consumer(database_url, queue_url, workers=4, periodic=True, log=workdir / "lateness.log")
        late_ones = [start + span * (i / actions) for i in range(1, actions, 2)]
        # Created while the consumer runs, each about 20 s before it is due, as a person would.
        created = 0
        while created < len(late_ones):
            now = datetime.now(timezone.utc)
            batch = [at for at in late_ones[created:] if at - now <= timedelta(seconds=20)]
            if batch:
                _create_announced(app, ws, channel, batch)
                created += len(batch)
            time.sleep(0.5)
        end = start + span + timedelta(seconds=10)
        while datetime.now(timezone.utc) < end or count(app, "published") < actions:
            if datetime.now(timezone.utc) > end + timedelta(minutes=2):
                break
            time.sleep(0.5)
        stop(consumer)
        with app.app_context(), read_session() as session:
            pairs = session.execute(select(OutboxEntry.created_at, ScheduledAction.publish_at)
                                    .join(ScheduledAction, ScheduledAction.id == OutboxEntry.action_id)).all()
        lateness = sorted((sent - due).total_seconds() for sent, due in pairs)
        return {"bench": "lateness", "db": kind, "actions": actions, "minutes": minutes, "sent": len(lateness),
                "p50": round(statistics.median(lateness), 3),
                "p99": round(lateness[int(len(lateness) * 0.99) - 1], 3), "max": round(lateness[-1], 3),
                "min": round(lateness[0], 3)}
    finally:
        drop_database(database_url, pg_admin)


def _create_announced(app, ws: int, channel: int, publish_ats: list[datetime]) -> None:
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.actions.tables import Origin
    from models.core.moves import Actor
    from models.actions.scheduling import NewAction, create_action
    from models.core.runtime import runtime

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            chan = session.get(Channel, channel)
            rows = [create_action(session, ws, NewAction(action_type="publish_post", channel=chan,
                                                         target_key=f"late-{at.timestamp()}", payload={"body": "x"},
                                                         publish_at=at),
                                  now=rt.now(), policy=rt.policy, actor=Actor(label="bench"), origin=Origin.PERSON)
                    for at in publish_ats]
        rt.announce_due(rows)


# -- the tick's query ---------------------------------------------------------------------


def bench_tickquery(kind: str, pg_admin: str | None, workdir: Path, sizes: tuple[int, int] = TICKQUERY_SIZES
                    ) -> dict:
    """The tick's due-batch query at 10,000 and at 1,000,000 rows (``sizes``), about 90 % of them terminal history."""
    from models.core.database import read_session
    from models.clock.tick import due_batch

    result = {"bench": "tickquery", "db": kind}
    for total in sizes:
        database_url = fresh_database(kind, pg_admin, workdir)
        try:
            app = make_app(database_url, frozen_at=None)
            ws, channel = workspace_with_log_channel(app)
            _bulk_history(app, database_url, ws, channel, total)
            now = datetime.now(timezone.utc)
            timings = []
            with app.app_context():
                for _ in range(60):
                    with read_session() as session:
                        started = time.perf_counter()
                        batch = due_batch(session, now, after=None, limit=200)
                        timings.append(time.perf_counter() - started)
            assert len(batch) == 200
            result[f"ms_{total}"] = round(statistics.median(timings[10:]) * 1000, 2)
        finally:
            drop_database(database_url, pg_admin)
    result["ratio"] = round(result[f"ms_{sizes[1]}"] / result[f"ms_{sizes[0]}"], 2)
    return result


def _bulk_history(app, database_url: str, ws: int, channel: int, total: int) -> None:
    """``total`` rows: 1,000 queued and due, the rest 90 % terminal history and 10 % queued for later."""
    from models.core.database import db

    with app.app_context(), db.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("""
                INSERT INTO scheduled_actions (workspace_id, action_type, target_key, channel_id, payload, publish_at,
                    status, cancel_kind, failure_code, attempt_count, origin, created_at, updated_at)
                SELECT :ws, 'publish_post', 't' || g, :ch, '{"body": "x"}',
                    CASE WHEN g <= 1000 THEN now() - interval '1 second' * g
                         WHEN g % 10 = 0 THEN now() + interval '1 minute' * (g % 5000)
                         ELSE now() - interval '1 minute' * (g % 100000) END,
                    CASE WHEN g <= 1000 OR g % 10 = 0 THEN 'queued' WHEN g % 10 < 7 THEN 'published'
                         WHEN g % 10 < 9 THEN 'failed' ELSE 'cancelled' END,
                    CASE WHEN g > 1000 AND g % 10 = 9 THEN 'person' END,
                    CASE WHEN g > 1000 AND g % 10 IN (7, 8) THEN 'permanent' END,
                    1, 'person', now(), now()
                FROM generate_series(1, :total) g"""), {"ws": ws, "ch": channel, "total": total})
            conn.execute(text("ANALYZE scheduled_actions"))
        else:
            conn.execute(text("""
                WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < :total)
                INSERT INTO scheduled_actions (workspace_id, action_type, target_key, channel_id, payload, publish_at,
                    status, cancel_kind, failure_code, attempt_count, origin, created_at, updated_at)
                SELECT :ws, 'publish_post', 't' || n, :ch, '{"body": "x"}',
                    CASE WHEN n <= 1000 THEN datetime('now', '-' || n || ' seconds')
                         WHEN n % 10 = 0 THEN datetime('now', '+' || (n % 5000) || ' minutes')
                         ELSE datetime('now', '-' || (n % 100000) || ' minutes') END,
                    CASE WHEN n <= 1000 OR n % 10 = 0 THEN 'queued' WHEN n % 10 < 7 THEN 'published'
                         WHEN n % 10 < 9 THEN 'failed' ELSE 'cancelled' END,
                    CASE WHEN n > 1000 AND n % 10 = 9 THEN 'person' END,
                    CASE WHEN n > 1000 AND n % 10 IN (7, 8) THEN 'permanent' END,
                    1, 'person', datetime('now'), datetime('now')
                FROM g"""), {"ws": ws, "ch": channel, "total": total})
            conn.execute(text("ANALYZE"))


# -- consumer memory ------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class _Receiver(BaseHTTPRequestHandler):
    """A loopback webhook receiver: reads the body, answers 200 with an id."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"id": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def bench_memory(actions: int, workdir: Path, provider: str = "log") -> dict:
    """A consumer's resident memory over ``actions`` dispatches (SQLite + SqliteHuey), through ``log`` or
    ``webhook`` (a loopback receiver: the path that claims, calls out over HTTP and records one row at a time)."""
    database_url = fresh_database("sqlite", None, workdir)
    queue_url = queue_url_for("sqlite", database_url, workdir)
    app = make_app(database_url, frozen_at=None)
    receiver = None
    config = {}
    if provider == "webhook":
        receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
        receiver.daemon_threads = True
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        config = {"url": f"http://127.0.0.1:{receiver.server_address[1]}/hook"}
    ws, channel = workspace_with_log_channel(app, provider, config)
    insert_rows(app, ws, channel, [datetime.now(timezone.utc) - timedelta(seconds=1)] * actions)
    consumer = start_consumer(database_url, queue_url, workers=4, periodic=False, log=workdir / "memory.log")
    wait_started([workdir / "memory.log"])
    subprocess.run(tickwork("tick"), cwd=ROOT, check=True, capture_output=True,
                   env=env_for(database_url, queue_url, {"tick_budget": 3000, "task_timeout": 3100,
                                                         "recovery_timeout": 3600}))
    samples = []
    started = time.monotonic()
    while True:
        done = count(app, "published")
        samples.append((done, rss_kib(consumer.pid)))
        if done >= actions or time.monotonic() - started > 3600:
            break
        time.sleep(2)
    elapsed = time.monotonic() - started
    stop(consumer)
    if receiver is not None:
        receiver.shutdown()
    warm = next(rss for done, rss in samples if done >= actions * 0.1)
    end = samples[-1][1]
    peak = max(rss for _, rss in samples)
    return {"bench": "memory", "db": "sqlite", "provider": provider, "actions": actions, "seconds": round(elapsed),
            "rss_after_warmup_mib": round(warm / 1024, 1), "rss_end_mib": round(end / 1024, 1),
            "rss_peak_mib": round(peak / 1024, 1), "growth_pct": round((end - warm) / warm * 100, 1)}


# -- results -----------------------------------------------------------------------------


def remember(result: dict, *, keep: bool = True) -> None:
    """Print ``result``; ``keep`` it in RESULTS too, for --write."""
    key = f"{result['bench']}:{result.get('db', '')}"
    if result.get("consumers", 1) > 1:
        key += f":{result['consumers']}c"
    if result.get("provider", "log") != "log":
        key += f":{result['provider']}"
    record(result, RESULTS, key, keep=keep)


def render() -> str:
    stored = recorded(RESULTS)
    lines = [f"`bench/clock.py`. Machine: {machine()}; PostgreSQL 15 on the same box with durable commits (fsync on), SQLite in WAL mode. "
             "This box's speed varies from run to run (a durable commit cost anywhere from 0.5 to 3.4 ms, the raw "
             "SQLite loop ran at 2,600 to 13,400 rows/s from one run to the next, and by a factor of two within one), "
             "so compare only figures from the same run. When each was measured: "
             + when_measured(stored) + ".", ""]
    drains = [stored[k] for k in sorted(stored, key=lambda k: (stored[k].get("consumers", 1), k))
              if k.startswith("drain:")]
    lines += _section(
        "Drain",
        "10,000 due actions, `log` provider, full path: the tick fans out one dispatch task per chunk of 500 "
        "rows (`dispatch_chunk`) to the queue (SqliteHuey / PostgresHuey in the app database), run in an "
        "interpreter that has the app loaded, as the consumer's periodic tick runs; `tickwork consumer` "
        "processes take the tasks, and each task looks at its rows, claims them (`queued → submitted`, with "
        "events), writes their outbox entries and publishes them (with events) in one transaction. Beside it, "
        "on the same database in the same run, a raw-SQL loop doing only the guarded claim UPDATE and the final "
        "UPDATE per row, each committed, measured before and after the drain (the faster counts). The last "
        "columns are a second drain over fresh rows with the tick run as the `tickwork tick` command, whose "
        "interpreter start and imports (one to two seconds here) count in it; until December 2026 that was "
        "the only drain measured.",
        ["database", "consumers × threads", "tick fan-out", "all published", "full path", "raw, 1 connection",
         "raw, 4 connections", "full ÷ raw", "with `tickwork tick`", "its ratio"],
        drains,
        lambda d: [d["db"], f"{d.get('consumers', 1)} × {d.get('workers', 4)}",
                   f"{d['tick_seconds']} s ({d['tick_dispatched']:,} handed over)", f"{d['drain_seconds']} s",
                   f"{d['full_rate']:,} rows/s", f"{d['raw_rate_1']:,} rows/s",
                   f"{d['raw_rate_4']:,} rows/s" if d.get("raw_rate_4") else "—", f"{d['ratio']}",
                   f"{d['command_drain_seconds']} s" if d.get("command_drain_seconds") else "—",
                   f"{d['command_ratio']}" if d.get("command_ratio") else "—"],
        after="History. With one task per row and three write transactions per action (claim; outbox "
        "entry; outcome), the same drain took 48.0 s on SQLite (208 rows/s, 0.031 of raw) and 84.3 s on "
        "PostgreSQL (119 rows/s, 0.091 of raw) with one consumer, and 40.1 s / 59.8 s with two; more "
        "threads did not help, as the consumer was bound by one interpreter's CPU. Before the tick handed "
        "its tasks over in one transaction, PostgreSQL took 39.7 s just to hand 10,000 tasks over.",
    )
    lines += _section(
        "Lateness",
        "Actions spread evenly over the run through one real consumer (4 threads, periodic tick on). Half "
        "were scheduled before the consumer started (the tick hands them over with an eta), half were "
        "created while it ran, each about 20 s before its time (the `on_due_soon` hook hands them over). "
        "Lateness = outbox entry written − `publish_at`. Consumer settings: scheduler every 1 s; "
        "SqliteHuey polling from 0.05 s backing off to at most 0.2 s (Huey's default backs off to 10 s).",
        ["database", "actions", "over", "p50", "p99", "max"],
        [stored[k] for k in ("lateness:sqlite", "lateness:postgresql") if k in stored],
        lambda d: [d["db"], f"{d['sent']:,} of {d['actions']:,}", f"{d['minutes']} min", f"{d['p50']} s",
                   f"{d['p99']} s", f"{d['max']} s"],
    )
    lines += _section(
        "The tick's query",
        "The due-batch query (200 rows, `(publish_at, id)` order) at 10,000 and 1,000,000 rows, 90 % "
        "terminal history, 10 % queued for later, and the same 1,000 rows due in both; median of 50.",
        ["database", "10,000 rows", "1,000,000 rows", "ratio"],
        [stored[k] for k in ("tickquery:sqlite", "tickquery:postgresql") if k in stored],
        lambda d: [d["db"], f"{d['ms_10000']} ms", f"{d['ms_1000000']} ms", f"{d['ratio']}×"],
    )
    lines += _section(
        "Consumer memory",
        "One consumer (4 threads, SQLite + SqliteHuey) over a run of due actions; resident memory after "
        "warm-up (10 % done), at the end, and at its peak.",
        ["provider", "actions", "took", "after warm-up", "end", "peak", "growth"],
        [stored[k] for k in ("memory:sqlite", "memory:sqlite:webhook") if k in stored],
        lambda d: [d.get("provider", "log"), f"{d['actions']:,}", f"{d['seconds']} s",
                   f"{d['rss_after_warmup_mib']} MiB", f"{d['rss_end_mib']} MiB", f"{d['rss_peak_mib']} MiB",
                   f"{d['growth_pct']} %"],
    )
    if "join:postgresql" in stored:
        d = stored["join:postgresql"]
        lines += ["### Two consumers on PostgreSQL", "",
                  f"`bench/clock.py join`: {d['rows']:,} due `log` actions on PostgreSQL (PostgresHuey in the same database), "
                  "drained three times in one run: by one consumer (4 threads), by two from the start, and by one with "
                  f"a second started {d['join_after']} s after the tick. Tasks are the chunks each consumer took (from "
                  "its log).", "",
                  "| consumers | all published | rate | chunks taken (each consumer) | the late one's first chunk done |",
                  "|---|---|---|---|---|",
                  f"| one | {d['one']['seconds']} s | {d['one']['rate']:,}/s | {d['one']['tasks']} | — |",
                  f"| two | {d['two']['seconds']} s | {d['two']['rate']:,}/s | {d['two']['tasks']} | — |",
                  f"| one, then a second | {d['joined']['seconds']} s | {d['joined']['rate']:,}/s | "
                  f"{d['joined']['tasks']} | {d['joined'].get('first_task_after_start_s', '—')} s after it started |",
                  ""]
        if "up_after_tick_s" in d["joined"]:
            lines += [f"The second consumer was up {d['joined']['up_after_tick_s']} s after the tick began (its start-up, "
                      "not the queue's: the imports and the app, on a shared box); of the chunks finished after that, "
                      f"it took {d['joined']['tasks_once_up'][1]} and the first {d['joined']['tasks_once_up'][0]}.", ""]
    if "runs:sqlite" in stored:
        d = stored["runs:sqlite"]
        lines += ["### The SQLite drain, run after run", "",
                  f"`bench/clock.py runs`: {len(d['ratios'])} drains of {d['rows']:,} `log` actions on SQLite in a row, "
                  "each beside its raw loop: full ÷ raw " + ", ".join(str(r) for r in d["ratios"]) + ".", ""]
    lines += _verdicts(stored)
    return "\n".join(lines)


def _section(heading: str, intro: str, header: list[str], records: list[dict], cells, after: str | None = None
             ) -> list[str]:
    """A ``###`` section: the intro, a table with a row of ``cells(record)`` per record, and ``after``."""
    if not records:
        return []
    lines = [f"### {heading}", "", intro, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells(record)) + " |" for record in records]
    return lines + ([""] if after is None else ["", after, ""])


def _verdicts(stored: dict) -> list[str]:
    """Each target of the clock's benchmarks, met or missed, with the figure that says so."""
    out = ["### Against the targets", ""]
    for key in sorted(k for k in stored if k.startswith("drain:")):
        if key in stored:
            d = stored[key]
            handed = "met" if d["tick_seconds"] < 60 else "missed"
            drained = "met" if d["drain_seconds"] < 60 else "missed"
            third = "met" if d["ratio"] >= 1 / 3 else "missed"
            out.append(f"- {d['db']}, {d.get('consumers', 1)} consumer(s): 10,000 due actions handed to the queue within the minute: {handed} "
                       f"({d['tick_seconds']} s); all of them sent within the minute: {drained} ({d['drain_seconds']} s); "
                       f"full path at least a third of the raw rate: {third} ({d['ratio']}).")
    if "join:postgresql" in stored:
        d = stored["join:postgresql"]
        out.append(f"- two consumers on PostgreSQL never deliver less than one: "
                   f"{'met' if d['two_over_one'] >= 1 and d['joined_over_one'] >= 1 else 'missed'} "
                   f"({d['two_over_one']}× and, one joining late, {d['joined_over_one']}× the rate of one); the late one "
                   f"took {d['joined']['tasks'][1]} of {sum(d['joined']['tasks'])} chunks"
                   + (f" ({d['joined']['tasks_once_up'][1]} of the {sum(d['joined']['tasks_once_up'])} finished after "
                      f"it was up, {d['joined']['up_after_tick_s']} s into the drain)." if "tasks_once_up" in d["joined"]
                      else "."))
    if "runs:sqlite" in stored:
        d = stored["runs:sqlite"]
        out.append(f"- the SQLite drain at least 0.5 of its raw loop in every one of {len(d['ratios'])} runs: "
                   f"{'met' if d['lowest'] >= 0.5 else 'missed'} (lowest {d['lowest']}).")
    for key in ("lateness:sqlite", "lateness:postgresql"):
        if key in stored:
            d = stored[key]
            out.append(f"- {d['db']}: lateness p99 under 1.5 s: {'met' if d['p99'] < 1.5 else 'missed'} ({d['p99']} s).")
    for key in ("tickquery:sqlite", "tickquery:postgresql"):
        if key in stored:
            d = stored[key]
            out.append(f"- {d['db']}: tick query at 1,000,000 rows within 2x of 10,000: "
                       f"{'met' if d['ratio'] <= 2 else 'missed'} ({d['ratio']}x).")
    for key in ("memory:sqlite", "memory:sqlite:webhook"):
        if key in stored:
            d = stored[key]
            out.append(f"- consumer memory flat over {d['actions']:,} actions through {d.get('provider', 'log')} "
                       f"(under 10 % growth after warm-up): {'met' if d['growth_pct'] < 10 else 'missed'} "
                       f"({d['growth_pct']} %).")
    out += ["", WHY_SLOW, ""]
    return out


WHY_SLOW = (
    "Where a drain's time goes. Per chunk of 500: the queue's dequeue, one look at the rows (their columns, not ORM "
    "objects, no payload) and one at their channels, and one write transaction holding (on PostgreSQL) a lock of "
    "the chunk's rows, one claim UPDATE for the chunk (a token per row), one INSERT ... SELECT of its 500 claim "
    "events, one INSERT of its 500 outbox entries and one UPDATE of its 500 publishes, each given its values as one "
    "JSON document, and one INSERT ... SELECT of their events: seven statements for 500 rows, whatever their "
    "number, and id lists bound as one array on PostgreSQL. The raw loop commits twice per row; the full path "
    "commits once per 500 rows, although it writes far more (two event rows and an outbox entry per row, which "
    "the raw loop does not write). On SQLite a process's "
    "writers queue on a lock of their own: SQLite's busy handler sleeps up to 100 ms between looks, which left "
    "the database idle between the worker threads' transactions (a fifth of the worker time in a py-spy "
    "profile); claimed chunks come back as plain rows, not ORM objects. When the tick runs as the `tickwork "
    "tick` command, starting the interpreter and importing the app is most of its fan-out. Rows whose provider "
    "calls out (webhook, smtp, postmark, twilio, mastodon) are sent side by side on the consumer's sending "
    "threads, each claimed just before its own send; see \"## Throughput\"."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", choices=["drain", "lateness", "tickquery", "memory", "all", "write", "join", "runs"])
    parser.add_argument("--runs", type=int, default=5, help="runs: how many SQLite drains in a row")
    parser.add_argument("--pg", default=None, help="PostgreSQL admin URL (also runs the PostgreSQL variants)")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4, help="the drain consumer's worker threads")
    parser.add_argument("--consumers", type=int, default=1, help="how many drain consumer processes")
    parser.add_argument("--actions", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--provider", choices=["log", "webhook"], default="log", help="the memory run's provider")
    parser.add_argument("--write", action="store_true", help="render docs/benchmarks.md's Clock section")
    parser.add_argument("--quick", action="store_true", help="each at a small volume; print only, keep nothing")
    args = parser.parse_args()
    kinds = ["sqlite"] + (["postgresql"] if args.pg else [])
    keep, sizes = not args.quick, TICKQUERY_SIZES
    if args.quick:
        args.rows, sizes, args.minutes = QUICK["rows"], QUICK["tickquery_sizes"], QUICK["lateness_minutes"]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.which == "join":
            remember(bench_join(args.pg or DEFAULT_PG, args.rows, workdir), keep=keep)
        if args.which == "runs":
            ratios = [bench_drain("sqlite", None, args.rows, workdir)["ratio"] for _ in range(args.runs)]
            remember({"bench": "runs", "db": "sqlite", "rows": args.rows, "ratios": ratios, "lowest": min(ratios)},
                     keep=keep)
        if args.which in ("drain", "all"):
            for kind in kinds:
                remember(bench_drain(kind, args.pg, args.rows, workdir, args.workers, args.consumers), keep=keep)
        if args.which in ("tickquery", "all"):
            for kind in kinds:
                remember(bench_tickquery(kind, args.pg, workdir, sizes), keep=keep)
        if args.which in ("lateness", "all"):
            actions = args.actions or (QUICK["lateness_actions"] if args.quick else 1000)
            for kind in kinds:
                remember(bench_lateness(actions, args.minutes, workdir, kind, args.pg), keep=keep)
        if args.which in ("memory", "all"):
            actions = args.actions or (QUICK["memory_actions"] if args.quick else 50_000)
            remember(bench_memory(actions, workdir, args.provider), keep=keep)
    if (args.write or args.which == "write") and not args.quick:
        write_section("Clock", render())


if __name__ == "__main__":
    main()
