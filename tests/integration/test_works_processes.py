"""Work schedules with real OS processes: racing dispatchers, a works consumer killed mid-generation, and a
send that fires on time while a long generation runs."""

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select

from models.channels.outbox import OutboxEntry
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.timing.clock import SystemClock
from models.works.tables import Work, WorkRun, WorkSchedule
from tests.conftest import ROOT
from tests.integration.clock_helpers import make_channel
from tests.integration.clock_helpers import wait_until
from tests.integration.test_clock_processes import env_for, flask, stop
from tests.integration.works_helpers import runs, work_row

pytestmark = pytest.mark.slow

SCHEDULES = 150


@pytest.fixture
def app_config(app_config, tmp_path, backend, database_url):
    app_config["TICKWORK_CLOCK"] = SystemClock()
    app_config["TICKWORK_QUEUE_URL"] = (f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite"
                                        else database_url)
    return app_config


@pytest.fixture
def queues(app):
    """The real queues the test's processes share; closed after the test."""
    from jobs.queue import huey, works_huey

    yield huey, works_huey
    for queue in (huey, works_huey):
        if queue._storage is not None:
            queue.storage.close()


def add_due_schedules(app, workspace_id: int, count: int) -> list[int]:
    """``count`` works, each with an active hourly schedule due a few seconds ago; returns the work ids."""
    with app.app_context(), write_session() as session:
        now = runtime().now()
        work_ids = session.execute(insert(Work).returning(Work.id), [
            dict(workspace_id=workspace_id, name=f"work {i}", pipeline="log", settings={}, generation_status="idle",
                 created_at=now, updated_at=now) for i in range(count)]).scalars().all()
        session.execute(insert(WorkSchedule), [
            dict(work_id=work_id, workspace_id=workspace_id, cadence="hourly", status="active",
                 next_run_at=now - timedelta(seconds=5), anchor_at=now - timedelta(seconds=5), billing_mode="usage",
                 max_failure_before_pause=3, failure_count=0, provider_overrides={}, created_at=now, updated_at=now)
            for work_id in work_ids])
    return sorted(work_ids)


def test_ac2_fr4_concurrent_dispatchers_cannot_both_claim_the_same_schedule(app, database_url, tmp_path, app_config,
                                                                           queues):
    """Three dispatcher processes released at once over the same due schedules: every schedule is claimed by
    exactly one of them, at least two of them win some, and every loser reports ``skipped``."""
    workspace_id = make_channel(app)
    work_ids = add_due_schedules(app, workspace_id, SCHEDULES)
    start = tmp_path / "go"
    env = env_for(database_url, app_config["TICKWORK_QUEUE_URL"], {"work_max_batch": SCHEDULES})
    with app.app_context():
        assert queues[1].pending_count() == 0  # the queue's tables exist before the racers first enqueue
    racers = [subprocess.Popen([sys.executable, "-m", "tests.integration.works_racer", str(start)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < len(racers):  # all three started and connected
        assert time.monotonic() < deadline and all(r.poll() is None for r in racers), "a racer died or hung"
        time.sleep(0.05)
    start.write_text(str(time.time() + 0.2))
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0, 0], [err[-2000:] for _, err in outputs]
    summaries = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    failed = [entry for s in summaries for entry in s["entries"] if entry["outcome"] == "failed"]
    assert failed == [], failed
    with app.app_context(), read_session() as session:
        per_work = Counter(dict(session.execute(select(WorkRun.work_id, func.count()).group_by(WorkRun.work_id)).all()))
    assert sorted(per_work) == work_ids and set(per_work.values()) == {1}, "a schedule was claimed twice or never"
    assert sum(s["dispatched"] for s in summaries) == SCHEDULES
    winners = [s["dispatched"] for s in summaries if s["dispatched"]]
    assert len(winners) >= 2, f"only one racer won rows ({[s['dispatched'] for s in summaries]}): no race was run"
    reasons = Counter(entry["reason"] for s in summaries for entry in s["entries"] if entry["outcome"] == "skipped")
    assert set(reasons) <= {"already_claimed"}
    assert sum(s["dispatched"] + s["skipped"] for s in summaries) == sum(s["dueCount"] for s in summaries)
    with app.app_context():
        assert queues[1].pending_count() == SCHEDULES  # each claim handed its run over once


def _consumer(env, log, *args) -> subprocess.Popen:
    return subprocess.Popen(flask("consumer", *args), cwd=ROOT, env=env, stdout=log, stderr=log)


def _executing_generation(log_path) -> bool:
    return bool(re.search(r"Executing \S*generate_work", log_path.read_text()))


def test_a_consumer_killed_during_a_generation_leaves_a_zombie_that_recovery_frees(app, client, world, database_url,
                                                                                  tmp_path, app_config, queues):
    from tests.integration.works_helpers import Dispatcher, create_work, put_schedule

    policy = {"work_pipeline_timeout": 4, "work_task_timeout": 5, "work_stuck_timeout": 6}
    app.extensions["tickwork"].policy = app.extensions["tickwork"].policy.with_overrides(policy)
    work_id = create_work(client, world, settings={"seconds": 30})
    assert put_schedule(client, world, work_id, cadence="daily").status_code == 201
    log_path = tmp_path / "works-consumer.log"
    with open(log_path, "w") as log:
        consumer = _consumer(env_for(database_url, app_config["TICKWORK_QUEUE_URL"], policy), log,
                             "--queue", "works", "--workers", "1")
        try:
            # The stuck timeout (6 s) counts from Run Now: on a loaded box a consumer takes longer than that to
            # start, so the run is started only once the consumer is up.
            wait_until(lambda: "consumer started" in log_path.read_text(), 300, "the works consumer to start")
            started = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
            assert started.status_code == 202, started.json
            wait_until(lambda: _executing_generation(log_path), 60, "the works consumer to start the generation")
            consumer.send_signal(signal.SIGKILL)
            consumer.wait(timeout=10)
        finally:
            stop(consumer)
    assert (work_row(app, work_id).generation_status, runs(app, work_id)[0].status) == ("generating", "running")
    dispatcher = Dispatcher(app)
    assert dispatcher.pass_(run=False)["recovered"] == 0, "recovered before the stuck timeout"
    generating_since = work_row(app, work_id).generation_started_at
    wait_until(lambda: runtime_now(app) > generating_since + timedelta(seconds=6), 15, "the stuck timeout")
    assert dispatcher.pass_(run=False)["recovered"] == 1
    (run,) = runs(app, work_id)
    assert (run.status, work_row(app, work_id).generation_status) == ("lost", "error")
    assert "recovered as a zombie" in run.error
    assert client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops")).status_code == 202, \
        "the work is free to run again"


def runtime_now(app):
    with app.app_context():
        return runtime().now()


@pytest.mark.only_backend("sqlite")  # the single box: SqliteHuey, one consumer for sends, one for generations
def test_an_action_fires_on_time_while_a_long_generation_runs(app, client, world, database_url, tmp_path, app_config,
                                                               queues):
    from tests.integration.works_helpers import create_work

    work_id = create_work(client, world, settings={"seconds": 8})
    env = env_for(database_url, app_config["TICKWORK_QUEUE_URL"])
    with open(tmp_path / "sends.log", "w") as sends_log, open(tmp_path / "works.log", "w") as works_log:
        sends = _consumer(env, sends_log, "--workers", "1", "--no-periodic")
        works = _consumer(env, works_log, "--queue", "works", "--workers", "1")
        try:
            assert client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops")).status_code == 202
            wait_until(lambda: _executing_generation(tmp_path / "works.log"), 60, "the generation to start")
            publish_at = runtime_now(app) + timedelta(seconds=2)
            created = client.post("/api/v1/actions", headers=world.auth("ops"), json={
                "action_type": "send_email", "channel": "main", "target_key": "ada@example.test",
                "payload": {"subject": "on time"}, "publish_at": publish_at.isoformat().replace("+00:00", "Z")})
            assert created.status_code == 201, created.json

            def sent():
                with app.app_context(), read_session() as session:
                    return session.scalar(select(OutboxEntry.created_at))

            wait_until(lambda: sent() is not None, 20, "the action to be sent")
            lateness = (sent() - publish_at).total_seconds()
            assert work_row(app, work_id).generation_status == "generating", "the generation had already ended"
            assert -0.05 <= lateness < 1.5, f"the action went out {lateness:.2f} s after its time"
        finally:
            stop(sends)
            stop(works)
