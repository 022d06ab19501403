"""Real OS processes, a real database and a loopback webhook: each drip step is sent at most once, whoever
races to mint it and whatever kills the consumer sending it."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import func, select
from werkzeug import Response

from jobs.clock import recover_once
from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.clock.tables import ClockRun
from models.core.database import read_session, write_session
from models.core.policy import DEFAULT_POLICY
from models.core.runtime import runtime
from models.timing.clock import SystemClock
from tests.conftest import ROOT, TEST_SECRET
from tests.integration.outage_figures import record
from tests.integration.drip_helpers import BASE_URL, advance, campaign, contacts, enroll, enrollments, tick

pytestmark = pytest.mark.slow

ENROLLED = 200
STEPS = [{"delay": "PT0S", "subject": "One", "body": "Step one"}, {"delay": "PT0S", "subject": "Two", "body": "Step two"}]


POLICY = {"provider_timeout": 0.5, "task_timeout": 1, "recovery_timeout": 1.5}


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_CLOCK"] = SystemClock()
    app_config["TICKWORK_POLICY"] = POLICY
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


class Hook:
    """A loopback webhook counting each drip step it receives, by dedupe key, and the Idempotency-Keys it came under.

    A request that timed out waiting for its answer is sent again under the same Idempotency-Key (the webhook
    provider honours it: docs/operations.md), which a receiver de-duplicates on; two keys for one step would be
    two sends."""

    def __init__(self, delay: float = 0.0):
        self.server = HTTPServer(host="127.0.0.1", threaded=True)
        self.lock = threading.Lock()
        self.received: Counter = Counter()
        self.keys: dict[str, set[str]] = {}
        self.delay = delay
        self.answering = 0  # requests received and not yet answered

    def handle(self, request):
        drip = json.loads(request.get_data())["payload"]["drip"]
        with self.lock:
            self.answering += 1
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.answering -= 1
            step = f"drip:{drip['enrollment_id']}:{drip['step']}"
            self.received[step] += 1
            self.keys.setdefault(step, set()).add(request.headers.get("Idempotency-Key"))
        return Response(json.dumps({"id": "ok"}), status=200, content_type="application/json")

    def __enter__(self):
        self.server.expect_request("/hook", method="POST").respond_with_handler(self.handle)
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.clear()
        self.server.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/hook"

    def count(self) -> int:
        with self.lock:
            return sum(self.received.values())

    def in_flight(self) -> int:
        with self.lock:
            return self.answering


def env_for(database_url: str, queue_url: str, policy: dict | None = None) -> dict:
    return dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_QUEUE_URL=queue_url,
                TICKWORK_SECRET_KEY=TEST_SECRET, TICKWORK_POLICY_JSON=json.dumps(policy or {}),
                TICKWORK_BASE_URL=BASE_URL, PYTHONUNBUFFERED="1")


def flask(*args: str) -> list[str]:
    return [sys.executable, "-m", "flask", "--app", "wsgi", *args]


def _webhook_campaign(app, world, hook: Hook, steps) -> int:
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="hook", kind="webhook", config={"url": hook.url},
                            created_at=runtime().now()))
    campaign_id = campaign(app, world.workspace_id, steps=steps, channel="hook")
    enroll(app, world.workspace_id, campaign_id, contacts(app, world.workspace_id, ENROLLED), mint_now=False)
    return campaign_id


class Racers:
    """Processes each running drip-advance passes; the test starts each pass in all of them at one instant."""

    def __init__(self, env: dict, folder: Path, count: int = 3, passes: int = 2, batch: int = 20):
        self.folder, self.count = folder, count
        self.processes = [subprocess.Popen([sys.executable, "-m", "tests.integration.drip_racer", str(folder),
                                            str(passes), str(batch)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True) for _ in range(count)]

    def run(self, index: int) -> list[dict]:
        """Once every racer is ready, start pass ``index`` in all of them at once; their summaries."""
        deadline = time.monotonic() + 60
        while len(list(self.folder.glob(f"ready{index}-*"))) < self.count:
            assert time.monotonic() < deadline and all(p.poll() is None for p in self.processes), "a racer died"
            time.sleep(0.05)
        (self.folder / f"go{index}").write_text(str(time.time() + 0.2))
        found = []
        for process in self.processes:
            line = process.stdout.readline()
            assert line, process.stderr.read()[-2000:]
            found.append(json.loads(line))
        return found

    def finish(self) -> None:
        for process in self.processes:
            _, errors = process.communicate(timeout=60)  # also closes the pipes
            assert process.returncode == 0, errors[-2000:]

    def __enter__(self) -> "Racers":
        return self

    def __exit__(self, *exc) -> None:
        """After a failed assertion too: no racer is left running, no pipe left open for a later test to trip on."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.communicate()


def _overlapped(app, summaries: list[dict]) -> bool:
    with app.app_context(), read_session() as session:
        runs = session.scalars(select(ClockRun).where(ClockRun.id.in_([s["clock_run_id"] for s in summaries]))).all()
    return max(run.started_at for run in runs) < min(run.finished_at for run in runs)


def test_three_drip_advance_processes_over_hundreds_of_due_enrollments_send_each_step_exactly_once(app, world,
                                                                                                   database_url,
                                                                                                   tmp_path, backend):
    with Hook() as hook:
        campaign_id = _webhook_campaign(app, world, hook, STEPS)
        # A real queue, as the consumers that run drip-advance have: each batch hands its rows due soon to it.
        with Racers(env_for(database_url, f"sqlite:///{tmp_path / 'queue.db'}"), tmp_path) as racers:
            for step in (0, 1):
                summaries = racers.run(step)
                # They raced: their passes overlapped, and between them each step was minted exactly once.
                assert _overlapped(app, summaries), summaries
                assert sum(s["minted"] for s in summaries) == ENROLLED, summaries
                won = [s["minted"] for s in summaries]
                assert sum(1 for n in won if n) >= 2, f"only one racer minted steps ({won}): no race was run"
                assert sum(s["settled"] for s in summaries) == (ENROLLED if step else 0), summaries
                tick(app)
            racers.finish()
        assert set(hook.received.values()) == {1}
        assert len(hook.received) == 2 * ENROLLED
        record("racing_drip_advance", backend, racers=3, steps=2 * ENROLLED, minted_per_racer_second_step=won,
               sent_twice=sum(1 for n in hook.received.values() if n > 1), lost=2 * ENROLLED - len(hook.received))
    assert advance(app)["settled"] == ENROLLED
    assert Counter((e.status, e.current_step) for e in enrollments(app, campaign_id)) == {("completed", 2): ENROLLED}


def _statuses(app) -> Counter:
    with app.app_context(), read_session() as session:
        return Counter({(status, code): n for status, code, n in session.execute(
            select(ScheduledAction.status, ScheduledAction.failure_code, func.count())
            .group_by(ScheduledAction.status, ScheduledAction.failure_code))})


def _wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_consumer_killed_mid_drain_sends_no_drip_step_twice(app, world, database_url, tmp_path, backend):
    queue_url = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    env = env_for(database_url, queue_url, POLICY)
    with open(tmp_path / "consumer.log", "w") as log, Hook(delay=0.05) as hook:
        campaign_id = _webhook_campaign(app, world, hook, STEPS[:1])
        minted = subprocess.run(flask("drip-advance"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert minted.returncode == 0, minted.stderr
        assert json.loads(minted.stdout.strip().splitlines()[-1])["minted"] == ENROLLED  # and handed to the queue
        first = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env, stdout=log,
                                 stderr=log)
        try:
            # Killed while requests are at the receiver, so the kill cuts sends in flight on a slow box too.
            _wait_until(lambda: hook.count() >= 40 and hook.in_flight() >= 2, 60,
                        "the first consumer to send 40 steps with more in flight")
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        finally:
            _stop(first)
        assert hook.count() < ENROLLED, "the drain finished before the kill; nothing was tested"
        second = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env, stdout=log,
                                  stderr=log)
        try:
            # The killed consumer's tasks died with it; the rows stayed queued, and the next tick hands them over.
            handed = subprocess.run(flask("tick"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert handed.returncode == 0, handed.stderr
            _wait_until(lambda: _statuses(app).get(("queued", None), 0) == 0, 90, "the restarted consumer to drain")
            time.sleep(POLICY["recovery_timeout"] + 0.2)  # rows the killed consumer held now count as lost
            with app.app_context():
                recover_once()
            # Only the killed consumer's rows were in doubt: the survivor's sends are recorded before it stops.
            _wait_until(lambda: _statuses(app).get(("submitted", None), 0) == 0, 30, "no row to be left submitted")
        finally:
            _stop(second)
        advance(app)
        # On a loaded box a request may outlast provider_timeout at the receiver: that unknown outcome is sent again
        # under the same key, a replay the receiver drops. A step under a second key would be sent twice.
        assert {len(keys) for keys in hook.keys.values()} == {1}, "a drip step reached the webhook under two keys"
        assert None not in set().union(*hook.keys.values())
    final = _statuses(app)
    assert set(final) <= {("published", None), ("failed", "worker_lost")}, final
    # The kill cut sends in flight, at most the consumer's sending threads' worth.
    lost = final[("failed", "worker_lost")]
    assert lost >= 1, "the kill cut no send in flight: nothing was tested"
    assert lost <= DEFAULT_POLICY.sends_in_flight
    record("drip_consumer_sigkill", backend, rows=ENROLLED, published=final[("published", None)], in_doubt=lost,
           sent_twice=sum(1 for keys in hook.keys.values() if len(keys) > 1),
           replayed_under_the_same_key=sum(1 for n in hook.received.values() if n > 1),
           lost=ENROLLED - final[("published", None)] - lost)
    # A lost worker's step counts as sent (outcome unknown) and is never sent again: every enrollment completes.
    assert Counter(e.status for e in enrollments(app, campaign_id)) == {"completed": ENROLLED}
