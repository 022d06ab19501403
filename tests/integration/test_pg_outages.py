"""PostgreSQL outages mid-drain, with real processes: backends killed with ``pg_terminate_backend``, and a
private cluster stopped and started. Consumers and the web process recover unaided, nothing is sent twice,
nothing is lost (every row published, or failed honestly as worker lost), and the health page shows the gap."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import select

from jobs.clock import recover_once
from models.actions.tables import ScheduledAction
from models.clock.tables import ClockRun, ConsumerHeartbeat
from models.core.database import read_session
from models.timing.clock import SystemClock
from tests.conftest import PG_ADMIN_URL, ROOT, TEST_SECRET, migrate
from tests.integration.clock_helpers import make_channel
from tests.integration.outage_figures import record
from tests.integration.test_clock_processes import (HOOK_SECRET, Hook, add_due_rows, env_for, flask, free_port,
                                                    live_heartbeats, statuses, stop, wait_until)

pytestmark = [pytest.mark.slow, pytest.mark.only_backend("postgresql")]

POLICY = {"provider_timeout": 1, "task_timeout": 2, "recovery_timeout": 3}
ROWS = 600
PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_CLOCK"] = SystemClock()
    app_config["TICKWORK_POLICY"] = POLICY
    return app_config


def web_process(env: dict, port: int, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gunicorn", "webapp:create_app()", "--bind", f"127.0.0.1:{port}",
                             "--workers", "1"], cwd=ROOT, env=env, stdout=log, stderr=log)


def healthz(port: int) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    except httpx.HTTPError:
        return None


def run_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(flask(*args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def settle(app, env: dict) -> None:
    """Hand over what is still queued (the next minute's tick, run now), let it drain, declare lost the rows
    whose worker died mid-send (after the recovery timeout), and wait until no row is left submitted."""
    handed = run_cli(env, "tick")
    assert handed.returncode == 0, handed.stderr[-2000:]
    wait_until(lambda: statuses(app).get(("queued", None), 0) == 0, 90, "every queued row to be sent")
    time.sleep(POLICY["recovery_timeout"] + 0.2)
    with app.app_context():
        recover_once()
    wait_until(lambda: statuses(app).get(("submitted", None), 0) == 0, 30, "no row to be left submitted")


def accounted(app, hook: Hook, ids: list[int]) -> dict:
    """Nothing sent twice, nothing lost: every row published (and received) or failed as worker lost."""
    final = statuses(app)
    assert set(final) <= {("published", None), ("failed", "worker_lost")}, final
    assert sum(final.values()) == len(ids)
    assert set(hook.received.values()) <= {1}, "a row reached the webhook twice"
    with app.app_context(), read_session() as session:
        published = set(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == "published")))
    assert published <= set(hook.received), "a row is published that the webhook never received"
    return {"rows": len(ids), "published": len(published), "in_doubt": final.get(("failed", "worker_lost"), 0),
            "sent_twice": sum(1 for n in hook.received.values() if n > 1),
            "lost": len(ids) - sum(final.values())}


def beat_after(app, instant) -> bool:
    with app.app_context(), read_session() as session:
        return bool(session.scalar(select(ConsumerHeartbeat.name).where(ConsumerHeartbeat.beat_at > instant)))


def terminate_backends(admin_url: str, dbname: str) -> int:
    """Kill every connection to ``dbname`` (this test's own database only) but this one; how many."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        return len(conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = %s AND pid <> pg_backend_pid()", (dbname,)).fetchall())


def test_backends_killed_mid_drain_cost_no_send_twice_and_the_processes_recover_unaided(app, database_url, tmp_path,
                                                                                        backend):
    dbname = database_url.rsplit("/", 1)[1]
    env = env_for(database_url, database_url, POLICY)
    port = free_port()
    with open(tmp_path / "processes.log", "w") as log, Hook(delay=0.05) as hook:
        ids = add_due_rows(app, make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET), ROWS)
        consumer = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env,
                                    stdout=log, stderr=log)
        web = web_process(env, port, log)
        try:
            wait_until(lambda: healthz(port) is not None, 60, "the web process to answer")
            handed = run_cli(env, "tick")
            assert handed.returncode == 0, handed.stderr[-2000:]
            wait_until(lambda: hook.count() >= 100, 60, "the consumer to send 100 rows")
            killed = terminate_backends(PG_ADMIN_URL, dbname)
            time.sleep(0.3)
            killed += terminate_backends(PG_ADMIN_URL, dbname)
            killed_at = SystemClock().now()
            assert killed >= 2, "no connection was killed: nothing was tested"
            assert hook.count() < ROWS, "the drain finished before the kill; nothing was tested"
            # The web process's pooled connection died: its next request still answers, from a fresh one.
            answer = healthz(port)
            assert answer is not None and answer.status_code == 200, answer and answer.text
            settle(app, env)
            assert consumer.poll() is None and web.poll() is None, "a process died of the outage"
            wait_until(lambda: beat_after(app, killed_at), 30, "the consumer's heartbeat to resume")
            assert healthz(port).json()["consumer_alive"] is True
        finally:
            stop(consumer)
            stop(web)
        figures = accounted(app, hook, ids)
    record("pg_terminate_backend", backend, backends_killed=killed, **figures)


def _postgres(*args: str) -> list[str]:
    """A command of the private cluster, run as the ``postgres`` user (the server refuses to run as root)."""
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return [*runner, *args]


@pytest.fixture
def private_cluster():
    """A PostgreSQL cluster of the test's own (initdb in a temporary folder, a free port), never the shared one;
    yields (admin url, stop, start)."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no initdb at {PG_BIN}: the private-cluster outage test needs PostgreSQL 15's server binaries")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("runuser is missing: the private cluster cannot be run as the postgres user")
    folder = Path(tempfile.mkdtemp(prefix="tickwork-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    subprocess.run(_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                             "--no-sync"), check=True, capture_output=True)
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"

    def start():
        subprocess.run(_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
                                 "-o", options, "-w", "start"), check=True, capture_output=True)

    def stop_():
        subprocess.run(_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"), check=True,
                       capture_output=True)

    start()
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}", stop_, start
    finally:
        subprocess.run(_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"),
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def cluster_database_url(private_cluster):
    admin, _, _ = private_cluster
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE tickwork")
    url = f"{admin}/tickwork"
    migrate(url)
    return url


def test_a_private_cluster_stopped_and_started_mid_drain_costs_no_send_twice_and_shows_on_the_health_page(
        private_cluster, cluster_database_url, tmp_path, backend):
    from models.core.database import db
    from webapp import create_app

    _, stop_cluster, start_cluster = private_cluster
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": cluster_database_url,
                      "SECRET_KEY": TEST_SECRET, "TICKWORK_QUEUE_URL": "immediate",
                      "TICKWORK_CLOCK": SystemClock(), "TICKWORK_POLICY": POLICY})
    env = env_for(cluster_database_url, cluster_database_url, POLICY)
    inline = env_for(cluster_database_url, "immediate", POLICY)
    port = free_port()
    try:
        with open(tmp_path / "processes.log", "w") as log, Hook(delay=0.05) as hook:
            ids = add_due_rows(app, make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET), ROWS)
            consumer = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env,
                                        stdout=log, stderr=log)
            web = web_process(env, port, log)
            try:
                wait_until(lambda: healthz(port) is not None, 60, "the web process to answer")
                wait_until(lambda: len(live_heartbeats(app)) == 1, 60, "the consumer to start")
                # The clock job itself drains inline, beside the consumer, so the outage cuts a clock run.
                ticking = subprocess.Popen(flask("tick"), cwd=ROOT, env=inline, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
                wait_until(lambda: hook.count() >= 60, 60, "the tick to send 60 rows")
                stop_cluster()
                down_at = SystemClock().now()
                _, tick_errors = ticking.communicate(timeout=60)
                assert ticking.returncode != 0, "the tick went on without its database"
                assert "clock job tick" in tick_errors and "OperationalError" in tick_errors, tick_errors[-2000:]
                during = healthz(port)
                assert during is None or during.status_code >= 500
                time.sleep(2)
                start_cluster()
                # The web process answers again unaided, and shows the run the outage cut.
                wait_until(lambda: (healthz(port) or httpx.Response(599)).status_code == 200, 30,
                           "the web process to answer again")
                cut = healthz(port).json()["jobs"]["tick"]
                assert cut["finished_at"] is None or cut["error"], cut
                with app.app_context(), read_session() as session:
                    runs = session.scalars(select(ClockRun).where(ClockRun.kind == "tick")).all()
                assert [run for run in runs if run.finished_at is None or run.error], "no trace of the cut tick"
                settle(app, env)
                assert consumer.poll() is None and web.poll() is None, "a process died of the outage"
                wait_until(lambda: beat_after(app, down_at), 30, "the consumer's heartbeat to resume")
            finally:
                stop(consumer)
                stop(web)
            figures = accounted(app, hook, ids)
            assert hook.count() > 60 and figures["published"] > 0
    finally:
        with app.app_context():
            db.engine.dispose()
    record("pg_cluster_restart", backend, outage_seconds=2, tick_exit_code=ticking.returncode, **figures)
