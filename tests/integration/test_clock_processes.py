"""Real OS processes against a real database and a loopback webhook: at most once, under races and crashes."""

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import func, insert, select
from werkzeug import Response

from models.actions.tables import ActionEvent, ScheduledAction
from models.timing.clock import SystemClock
from models.core.database import read_session, write_session
from models.channels.outbox import OutboxEntry
from tests.conftest import ROOT, TEST_SECRET
from tests.integration.clock_helpers import make_channel, wait_until
from tests.integration.outage_figures import record
from models.core.runtime import runtime

pytestmark = pytest.mark.slow

HOOK_SECRET = "hook-secret"
ROWS = 800  # enough for four ticks to overlap and for a kill to land mid-drain with hundreds still to go


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_CLOCK"] = SystemClock()
    return app_config


class Hook:
    """A threaded loopback webhook that records every delivery and checks its signature."""

    def __init__(self, delay: float = 0.0):
        self.server = HTTPServer(host="127.0.0.1", threaded=True)
        self.lock = threading.Lock()
        self.received: Counter = Counter()
        self.arrivals: list[float] = []
        self.bad_signatures = 0
        self.keys_mismatched = 0  # deliveries whose Idempotency-Key is not their action's id
        self.delay = delay

    def handle(self, request):
        body = request.get_data()
        expected = "sha256=" + hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.arrivals.append(time.monotonic())
            action_id = json.loads(body)["id"]
            self.received[action_id] += 1
            if request.headers.get("Idempotency-Key") != str(action_id):
                self.keys_mismatched += 1
            if not hmac.compare_digest(request.headers.get("X-Tickwork-Signature", ""), expected):
                self.bad_signatures += 1
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


def retries_with_the_same_key(app, action_ids: list[int]) -> dict[int, int]:
    """How often each row went back to the queue to be sent again under its Idempotency-Key after an unknown outcome."""
    if not action_ids:
        return {}
    with app.app_context(), read_session() as session:
        return dict(session.execute(
            select(ActionEvent.action_id, func.count()).where(
                ActionEvent.action_id.in_(action_ids), ActionEvent.to_status == "queued",
                ActionEvent.reason.like("%retrying with the same Idempotency-Key%"))
            .group_by(ActionEvent.action_id)).all())


def add_due_rows(app, workspace_id: int, count: int) -> list[int]:
    """``count`` queued webhook rows due a few seconds ago, inserted in one statement."""
    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            from models.channels.tables import Channel

            channel_id = session.scalar(select(Channel.id).where(Channel.workspace_id == workspace_id))
            ids = session.execute(insert(ScheduledAction).returning(ScheduledAction.id), [
                dict(workspace_id=workspace_id, action_type="publish_post", target_key=f"t{i}", channel_id=channel_id,
                     payload={"body": f"post {i}"}, publish_at=now - timedelta(seconds=5), status="queued",
                     attempt_count=0, origin="person", created_at=now, updated_at=now)
                for i in range(count)
            ]).scalars().all()
        return sorted(ids)


def env_for(database_url: str, queue_url: str, policy: dict | None = None) -> dict:
    return dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_QUEUE_URL=queue_url,
                TICKWORK_SECRET_KEY=TEST_SECRET, TICKWORK_POLICY_JSON=json.dumps(policy or {}),
                PYTHONUNBUFFERED="1")


def flask(*args: str) -> list[str]:
    return [sys.executable, "-m", "flask", "--app", "wsgi", *args]


def statuses(app) -> Counter:
    with app.app_context(), read_session() as session:
        return Counter({(status, code): n for status, code, n in session.execute(
            select(ScheduledAction.status, ScheduledAction.failure_code, func.count())
            .group_by(ScheduledAction.status, ScheduledAction.failure_code))})


def test_four_racing_inline_ticks_send_every_action_exactly_once_with_a_valid_signature(app, database_url, tmp_path,
                                                                                       backend):
    """Four tick processes released at one instant over the same due rows: each row is sent once, and at
    least two of them won rows (else no race was run)."""
    with Hook() as hook:
        workspace_id = make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET)
        ids = add_due_rows(app, workspace_id, ROWS)
        env = env_for(database_url, "immediate")
        ticks = [subprocess.Popen([sys.executable, "-m", "tests.integration.clock_racer", str(tmp_path)], cwd=ROOT,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(4)]
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("ready-*"))) < len(ticks):  # all four started and connected
            assert time.monotonic() < deadline and all(t.poll() is None for t in ticks), "a racer died or hung"
            time.sleep(0.05)
        (tmp_path / "go").write_text(str(time.time() + 0.2))
        outputs = [tick.communicate(timeout=240) for tick in ticks]  # a hang guard; a loaded box is slow
        assert [tick.returncode for tick in ticks] == [0] * 4, [err[-2000:] for _, err in outputs]
        summaries = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
        assert sorted(hook.received) == ids
        assert set(hook.received.values()) == {1}
        assert hook.bad_signatures == 0
    assert statuses(app) == {("published", None): ROWS}
    won = [s["outcomes"].get("published", 0) for s in summaries]
    assert sum(won) == ROWS
    assert sum(1 for n in won if n) >= 2, f"only one racer won rows ({won}): no race was run"
    record("racing_ticks", backend, racers=4, rows=ROWS, won_per_racer=won,
           sent_twice=sum(1 for n in hook.received.values() if n > 1), lost=ROWS - len(hook.received))


def stop(process: subprocess.Popen, timeout: float = 15):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_consumer_killed_mid_chunk_sends_nothing_twice_and_leaves_only_its_sends_in_flight_unknown(
        app, database_url, tmp_path, backend):
    """The receiver answers in 50 ms, so the consumer's sending threads always have sends in flight:
    the kill cuts some, and only those (at most one per sending thread) end as worker lost."""
    queue_url = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    policy = {"provider_timeout": 1, "task_timeout": 2, "recovery_timeout": 3}
    env = env_for(database_url, queue_url, policy)
    with open(tmp_path / "consumer.log", "w") as log, Hook(delay=0.05) as hook:
        workspace_id = make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET)
        ids = add_due_rows(app, workspace_id, ROWS)
        first = subprocess.Popen(flask("consumer", "--workers", "4"), cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            wait_until(lambda: hook.count() >= 300, 60, "the first consumer to send 300 actions")
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        finally:
            stop(first)
        sent_before_restart = hook.count()
        assert sent_before_restart < ROWS, "the drain finished before the kill; nothing was tested"
        second = subprocess.Popen(flask("consumer", "--workers", "4"), cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            wait_until(lambda: statuses(app).get(("queued", None), 0) == 0, 90, "the restarted consumer to drain")
            time.sleep(3.2)  # the recovery timeout, so that rows the killed consumer held count as lost
            recovery = subprocess.run(flask("recover"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert recovery.returncode == 0, recovery.stderr
            # Only the killed consumer's rows were left in flight; the survivor's own sends end recorded
            # before it is stopped, so a stop cannot add rows in doubt of its own.
            wait_until(lambda: statuses(app).get(("submitted", None), 0) == 0, 30, "no row to be left submitted")
        finally:
            stop(second)
        assert hook.bad_signatures == 0
        final = statuses(app)
    # A receipt beyond the first is a second send unless the row recorded a retry under the same
    # Idempotency-Key (a send that outlived the provider timeout on a loaded box), which the receiver
    # de-duplicates on.
    retried = retries_with_the_same_key(app, [action_id for action_id, n in hook.received.items() if n > 1])
    sent_twice = {action_id: n for action_id, n in hook.received.items() if n > 1 + retried.get(action_id, 0)}
    assert not sent_twice, f"actions reached the webhook twice: {sent_twice}"
    assert hook.keys_mismatched == 0
    assert set(final) <= {("published", None), ("failed", "worker_lost")}, final
    assert sum(final.values()) == ROWS
    lost = final[("failed", "worker_lost")]
    assert 1 <= lost <= 32, "the kill cut no send in flight" if not lost else lost  # at most sends_in_flight
    with app.app_context(), read_session() as session:
        messages = set(session.scalars(select(ScheduledAction.last_error).where(
            ScheduledAction.failure_code == "worker_lost")))
    assert all(message.startswith("worker lost; outcome unknown") for message in messages)
    published = final[("published", None)]
    assert len(hook.received) in range(published, published + lost + 1)
    assert sorted(set(hook.received) - set(ids)) == []
    record("consumer_sigkill", backend, rows=ROWS, sent_before_kill=sent_before_restart, published=published,
           in_doubt=lost, sent_twice=len(sent_twice), retried_with_key=sum(retried.values()),
           lost=ROWS - published - lost)


class HoldingHook(Hook):
    """A webhook that holds every request it receives until released: the sends a consumer has in flight
    stay in flight, and ``held`` says exactly which rows' requests had started."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.held: set[int] = set()

    def handle(self, request):
        with self.lock:
            self.held.add(json.loads(request.get_data())["id"])
        self.release.wait(timeout=60)
        return super().handle(request)


def test_a_consumer_killed_in_a_batched_chunk_leaves_in_doubt_exactly_the_rows_whose_request_had_started(
        app, database_url, tmp_path, backend):
    """The consumer claims a batch for its free sending slots and starts every claimed row's request at once;
    the webhook holds them all, so the consumer is killed with its slots full. The rows in doubt are then
    exactly the ones whose request had reached the webhook: none claimed and not sent, none sent twice."""
    rows_count = 48
    queue_url = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    env = env_for(database_url, queue_url, {"provider_timeout": 20, "task_timeout": 25, "recovery_timeout": 30})
    with open(tmp_path / "consumer.log", "w") as log, HoldingHook() as hook:
        workspace_id = make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET)
        ids = add_due_rows(app, workspace_id, rows_count)
        consumer = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env,
                                    stdout=log, stderr=log)
        try:
            wait_until(lambda: len(live_heartbeats(app)) == 1, 60, "the consumer to start")
            tick = subprocess.run(flask("tick"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert tick.returncode == 0, tick.stderr
            wait_until(lambda: len(hook.held) >= 32, 60, "the consumer's 32 sending slots to fill")
            time.sleep(0.5)  # anything more it would claim or send would show now
            claimed_at_kill, held_at_kill = submitted_ids(app), set(hook.held)
            consumer.send_signal(signal.SIGKILL)
            consumer.wait(timeout=10)
        finally:
            stop(consumer)
            hook.release.set()
        assert claimed_at_kill == held_at_kill and len(held_at_kill) == 32, (len(claimed_at_kill), len(held_at_kill))
        time.sleep(0.6)
        short = env_for(database_url, "immediate", {"provider_timeout": 0.1, "task_timeout": 0.2, "recovery_timeout": 0.5})
        recovery = subprocess.run(flask("recover"), cwd=ROOT, env=short, capture_output=True, text=True, timeout=60)
        assert recovery.returncode == 0, recovery.stderr
        rest = subprocess.run(flask("tick"), cwd=ROOT, env=env_for(database_url, "immediate"), capture_output=True,
                              text=True, timeout=120)
        assert rest.returncode == 0, rest.stderr
        time.sleep(0.5)
        received = dict(hook.received)
    final = statuses(app)
    assert final == {("failed", "worker_lost"): 32, ("published", None): rows_count - 32}, final
    with app.app_context(), read_session() as session:
        lost = dict(session.execute(select(ScheduledAction.id, ScheduledAction.last_error)
                                    .where(ScheduledAction.failure_code == "worker_lost")).all())
    assert set(lost) == held_at_kill
    assert all(message.startswith("worker lost; outcome unknown") for message in lost.values())
    assert sorted(received) == ids and set(received.values()) == {1}, "a row was sent twice, or never"
    record("consumer_sigkill_batched", backend, rows=rows_count, claimed_at_kill=len(claimed_at_kill),
           requests_started=len(held_at_kill), in_doubt=len(lost),
           sent_twice=sum(1 for n in received.values() if n > 1))


def submitted_ids(app) -> set[int]:
    with app.app_context(), read_session() as session:
        return set(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == "submitted")))


def test_sigterm_drains_the_sends_in_flight_and_claims_no_more(app, database_url, tmp_path, backend):
    """What process managers send: the rows being sent when SIGTERM arrives end published (not in doubt),
    no other row is claimed, and the consumer exits 0 within the provider timeout and the outcome's writes."""
    from jobs.consumer import OUTCOME_WRITES_SECONDS

    rows_count = 200
    policy = {"provider_timeout": 3, "task_timeout": 4, "recovery_timeout": 6}
    queue_url = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    env = env_for(database_url, queue_url, policy)
    with open(tmp_path / "consumer.log", "w") as log, Hook(delay=1.5) as hook:
        workspace_id = make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET)
        add_due_rows(app, workspace_id, rows_count)
        consumer = subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env,
                                    stdout=log, stderr=log)
        try:
            wait_until(lambda: len(live_heartbeats(app)) == 1, 60, "the consumer to start")
            tick = subprocess.run(flask("tick"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert tick.returncode == 0, tick.stderr
            wait_until(lambda: len(submitted_ids(app)) >= 8, 30, "sends in flight")
            in_flight = submitted_ids(app)
            consumer.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            code = consumer.wait(timeout=policy["provider_timeout"] + OUTCOME_WRITES_SECONDS + 10)
            took = time.monotonic() - signalled
        finally:
            stop(consumer)
        time.sleep(0.5)  # any request the webhook is still answering would show here
        received = dict(hook.received)
    final = statuses(app)
    log_text = (tmp_path / "consumer.log").read_text()
    assert code == 0, log_text[-3000:]
    assert took < policy["provider_timeout"] + OUTCOME_WRITES_SECONDS, took
    assert set(received.values()) == {1}
    with app.app_context(), read_session() as session:
        published = set(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == "published")))
    assert in_flight and in_flight <= published, "a send in flight at SIGTERM did not end published"
    assert published == set(received)
    # Nothing in doubt, nothing failed; the rows it had not claimed stay queued for the next tick.
    assert set(final) == {("published", None), ("queued", None)}, final
    assert final[("queued", None)] > 0, "the drain sent everything: SIGTERM came too late to test anything"
    record("sigterm_drain", backend, rows=rows_count, in_flight_at_signal=len(in_flight),
           published=len(published), sent_twice=sum(1 for n in received.values() if n > 1),
           in_doubt=final.get(("submitted", None), 0) + final.get(("failed", "worker_lost"), 0),
           left_queued=final[("queued", None)], seconds_to_exit=round(took, 2))


def most_in_any_second(arrivals: list[float]) -> int:
    """The largest number of arrivals within any one-second window [t, t + 1)."""
    arrivals = sorted(arrivals)
    most, start = 0, 0
    for end, at in enumerate(arrivals):
        while at - arrivals[start] >= 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


# Hands every chunk of the given rows to the queue twice, as two ticks racing over the same rows would.
ENQUEUE_TWICE = """
import json, sys
import wsgi
from jobs.queue import huey
from jobs.tasks import dispatch
from models.clock.dispatch import chunks
ids, size = json.loads(sys.argv[1]), int(sys.argv[2])
with wsgi.app.app_context():
    huey.enqueue_many([dispatch.s(chunk, None) for chunk in chunks(ids, size)] * 2)
"""


def dispatch_tasks_done(log_path) -> int:
    return sum(1 for line in log_path.read_text().splitlines() if "jobs.tasks.dispatch" in line and "executed in" in line)


@pytest.mark.only_backend("postgresql")
def test_a_consumer_started_during_a_drain_takes_every_chunk_the_first_is_not_working_on_and_no_row_is_claimed_twice(
        app, database_url, tmp_path, backend):
    """The first consumer is frozen (SIGSTOP) once it has published a chunk: a consumer started then can only
    drain what the first has not taken, so the drain finishing all but the first's chunks in hand shows that a
    consumer holds no more than the tasks it is working on. Every chunk is queued twice, so the two
    consumers' claims meet on the same rows (the first frozen inside its transaction, its rows locked)."""
    rows, chunk, workers = 1200, 50, 2
    env = env_for(database_url, database_url, {"dispatch_chunk": chunk})
    workspace_id = make_channel(app, "log")
    ids = add_due_rows(app, workspace_id, rows)
    enqueued = subprocess.run([sys.executable, "-c", ENQUEUE_TWICE, json.dumps(ids), str(chunk)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
    assert enqueued.returncode == 0, enqueued.stderr

    def published() -> int:
        return statuses(app).get(("published", None), 0)

    logs = [tmp_path / "first.log", tmp_path / "joined.log"]
    joined = None
    with open(logs[0], "w") as first_log, open(logs[1], "w") as joined_log:
        first = subprocess.Popen(flask("consumer", "--workers", str(workers), "--no-periodic"), cwd=ROOT, env=env,
                                 stdout=first_log, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: published() >= chunk, 300, "the first consumer to publish a chunk")
            first.send_signal(signal.SIGSTOP)
            at_freeze = published()
            assert at_freeze < rows - workers * chunk, "the first consumer drained nearly everything; nothing was tested"
            joined = subprocess.Popen(flask("consumer", "--workers", str(workers), "--no-periodic"), cwd=ROOT, env=env,
                                      stdout=joined_log, stderr=subprocess.STDOUT)
            # The frozen consumer holds at most one task per worker thread; everything else is the joiner's.
            wait_until(lambda: published() >= rows - workers * chunk, 300, "the joined consumer to drain the rest")
            first.send_signal(signal.SIGCONT)
            wait_until(lambda: published() == rows, 300, "the first consumer to finish the chunks it held")
        finally:
            if first.poll() is None:
                first.send_signal(signal.SIGCONT)
            stop(first)
            if joined is not None:
                stop(joined)
    with app.app_context(), read_session() as session:
        claims = Counter(session.scalars(select(ActionEvent.action_id).where(ActionEvent.to_status == "submitted")))
        entries = Counter(session.scalars(select(OutboxEntry.action_id)))
    assert statuses(app) == Counter({("published", None): rows})
    assert set(claims) == set(ids) and set(claims.values()) == {1}, "a row was claimed twice"
    assert set(entries) == set(ids) and set(entries.values()) == {1}, "a row was delivered twice"
    took = [dispatch_tasks_done(log) for log in logs]
    assert took[1] >= (rows - at_freeze) // chunk - workers, took
    assert sum(took) == 2 * len(ids) // chunk, took  # every task ran once: the duplicates found their rows done


def test_a_channel_limited_to_20_a_second_receives_no_more_than_20_in_any_second_from_three_consumers(
        app, database_url, tmp_path, backend):
    rows_count = 100
    queue_url = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    env = env_for(database_url, queue_url)
    with open(tmp_path / "consumers.log", "w") as log, Hook() as hook:
        workspace_id = make_channel(app, "webhook", {"url": hook.url, "rate": "20/s"}, HOOK_SECRET)
        ids = add_due_rows(app, workspace_id, rows_count)
        consumers = [subprocess.Popen(flask("consumer", "--workers", "4", "--no-periodic"), cwd=ROOT, env=env,
                                      stdout=log, stderr=log) for _ in range(3)]
        try:
            wait_until(lambda: len(live_heartbeats(app)) == 3, 60, "three consumers to start")
            tick = subprocess.run(flask("tick"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert tick.returncode == 0, tick.stderr
            wait_until(lambda: statuses(app) == {("published", None): rows_count}, 90, "every row to go out")
        finally:
            for consumer in consumers:
                stop(consumer)
        assert sorted(hook.received) == ids and set(hook.received.values()) == {1}
        assert most_in_any_second(hook.arrivals) <= 20
        # Paced, not starved: the hundred went out at close to the limit.
        assert hook.arrivals[-1] - hook.arrivals[0] < rows_count / 20 * 2


def live_heartbeats(app) -> list:
    from models.clock.heartbeats import live_consumers

    with app.app_context(), read_session() as session:
        return live_consumers(session, runtime().now())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.only_backend("sqlite")  # serve is the single-box mode: SQLite and SqliteHuey
def test_serve_runs_the_web_and_a_consumer_restarts_a_dead_child_and_stops_cleanly(app, database_url, tmp_path):
    """... and on SIGTERM its consumer drains the sends in flight before it exits 0."""
    port = free_port()
    env = env_for(database_url, f"sqlite:///{tmp_path / 'queue.db'}",
                  {"provider_timeout": 3, "task_timeout": 4, "recovery_timeout": 6})
    workspace_id = make_channel(app)
    with app.app_context(), write_session() as session:
        from models.channels.tables import Channel

        channel_id = session.scalar(select(Channel.id).where(Channel.workspace_id == workspace_id))
        now = runtime().now()
        session.execute(insert(ScheduledAction).values(
            workspace_id=workspace_id, action_type="publish_post", target_key="t", channel_id=channel_id,
            payload={"body": "hi"}, publish_at=now, status="queued", attempt_count=0, origin="person",
            created_at=now, updated_at=now))
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        serve = subprocess.Popen(flask("serve", "--host", "127.0.0.1", "--port", str(port), "--web-workers", "1"),
                                 cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        def outbox_count():
            with app.app_context(), read_session() as session:
                return session.scalar(select(func.count()).select_from(OutboxEntry))

        wait_until(lambda: outbox_count() == 1, 60, "the consumer child to fire the due action")

        def web_answers():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/login", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(web_answers, 60, "the web child to answer")
        started = lambda: [line for line in log_path.read_text().splitlines() if "consumer started (pid" in line]  # noqa: E731
        consumer_pid = int(started()[0].rsplit("pid ", 1)[1].rstrip(")"))
        os.kill(consumer_pid, signal.SIGKILL)
        wait_until(lambda: len(started()) == 2, 30, "the supervisor to restart the consumer")
        with Hook(delay=1.5) as hook:
            add_due_rows(app, make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET, workspace="Hooks"), 100)
            handed = subprocess.run(flask("tick"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert handed.returncode == 0, handed.stderr
            wait_until(lambda: len(submitted_ids(app)) >= 8, 30, "the restarted consumer to have sends in flight")
            in_flight = submitted_ids(app)
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(timeout=30) == 0
        assert set(hook.received.values()) == {1}
        final = statuses(app)
        assert ("submitted", None) not in final and ("failed", "worker_lost") not in final, final
        assert final[("queued", None)] > 0, "the stop waited for every row, not just the sends in flight"
        with app.app_context(), read_session() as session:
            published = set(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == "published")))
        assert in_flight <= published, "a send in flight when serve was stopped did not end published"
        new_pid = int(started()[1].rsplit("pid ", 1)[1].rstrip(")"))
        with pytest.raises(ProcessLookupError):
            os.kill(new_pid, 0)
        assert not web_answers()
    finally:
        stop(serve)


@pytest.mark.only_backend("sqlite")  # what it proves is the web child's command line, not the database
def test_two_instances_on_one_box_share_no_gunicorn_control_socket(app, database_url, tmp_path):
    """gunicorn's default control socket is one path per user (~/.gunicorn/gunicorn.ctl): a second instance
    would take it over from the first. serve's web child opens none."""
    from jobs.serve import Supervisor

    home = tmp_path / "home"
    home.mkdir()
    env = {**env_for(database_url, f"sqlite:///{tmp_path / 'queue.db'}"), "HOME": str(home)}
    ports = [free_port(), free_port()]
    webs = []
    try:
        for port in ports:
            [web] = [child for child in Supervisor.for_single_box(host="127.0.0.1", port=port).children
                     if child.name == "web"]
            argv = [*web.argv]
            argv[argv.index("--workers") + 1] = "1"
            webs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))

        def answers(port):
            try:
                return httpx.get(f"http://127.0.0.1:{port}/login", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        for port in ports:
            wait_until(lambda: answers(port), 60, f"the web child on port {port} to answer")
        assert not (home / ".gunicorn").exists(), list((home / ".gunicorn").iterdir())
    finally:
        for web in webs:
            stop(web)
