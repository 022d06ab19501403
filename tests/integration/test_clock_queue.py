"""The clock through a real Huey queue, stepped one task at a time: SqliteHuey on a file beside the
SQLite database, PostgresHuey inside the PostgreSQL one."""

from datetime import timedelta

import pytest
from sqlalchemy import select

from jobs.queue import huey
from models.accounts.tables import Role
from models.core.database import read_session, write_session
from models.clock.heartbeats import beat, forget, live_consumers
from models.core.moves import Actor
from models.channels.outbox import OutboxEntry
from models.actions.scheduling import cancel_action
from tests.integration.clock_helpers import add_actions, make_channel, row, tick
from models.core.runtime import runtime

@pytest.fixture
def app_config(app_config, tmp_path, backend, database_url):
    app_config["TICKWORK_QUEUE_URL"] = f"sqlite:///{tmp_path / 'queue.db'}" if backend == "sqlite" else database_url
    app_config["TICKWORK_POLICY"] = {"dispatch_chunk": 2}
    return app_config


@pytest.fixture
def queue(app):
    yield huey
    huey.storage.close()


def run_queue(app, clock) -> list:
    """Run every queued task, and every scheduled one whose eta has come by ``clock``, as a consumer would.

    Each dispatch task's result is its per-outcome counts, e.g. ``{"published": 2}``; the markers behind a tick's
    hand-over run too, without a result of their own in the list."""
    until = clock.now().replace(tzinfo=None)
    results = []
    with app.app_context():
        for task in huey.read_schedule(until):
            huey.enqueue(task)
        while (task := huey.dequeue()) is not None:
            if task.eta is not None and task.eta > until:
                huey.add_schedule(task)
                continue
            result = huey.execute(task, timestamp=until)
            if task.name != "hand-over-taken":
                results.append(result)
    return results


def outbox_ids(app) -> list[int]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(OutboxEntry.action_id).order_by(OutboxEntry.id)))


def queued_tasks() -> list:
    return [huey.deserialize_task(data) for data in huey.storage.enqueued_items()]


def test_a_tick_fans_out_one_dispatch_task_per_chunk_of_due_rows_and_a_marker_behind_them(app, queue, clock):
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 5)
    summary = tick(app)
    assert summary["mode"] == "queue" and summary["dispatched"] == 5
    tasks = queued_tasks()
    dispatches = [task for task in tasks if task.name == "dispatch"]
    assert sorted(tuple(task.args[0]) for task in dispatches) == [tuple(ids[0:2]), tuple(ids[2:4]), (ids[4],)]
    assert [(task.name, task.args) for task in tasks if task.name != "dispatch"] == [
        ("hand-over-taken", (summary["clock_run_id"],))]
    assert all(row(app, i).status == "queued" for i in ids)
    assert run_queue(app, clock) == [{"published": 2}, {"published": 2}, {"published": 1}]
    assert sorted(outbox_ids(app)) == ids
    assert tick_summary(app, summary["clock_run_id"])["hand_over_taken"] is True


def tick_summary(app, run_id: int) -> dict:
    from models.clock.tables import ClockRun

    with app.app_context(), read_session() as session:
        return session.scalar(select(ClockRun.summary).where(ClockRun.id == run_id))


def test_while_an_earlier_hand_over_waits_in_the_queue_a_tick_goes_on_after_it_and_hands_nothing_over_twice(
        app, queue, clock):
    """A backlog (a million rows due at once) outlasts a tick: the next tick hands over only the rows that fell
    due since, not again the ones whose tasks still wait; once a consumer takes the earlier marker, a tick starts
    from the first due row again (a row left queued behind the cursor is found)."""
    workspace_id = make_channel(app)
    first = add_actions(app, workspace_id, 4)
    earlier = tick(app)
    assert earlier["dispatched"] == 4 and earlier["resumed_after"] is None
    clock.advance(seconds=60)
    later = add_actions(app, workspace_id, 2, thing_prefix="later")
    resumed = tick(app)
    assert resumed["resumed_after"] == earlier["handed_through"] and resumed["dispatched"] == 2
    handed = [task.args[0] for task in queued_tasks() if task.name == "dispatch"]
    assert sorted(i for chunk in handed for i in chunk) == sorted(first + later)  # each row in one task only
    assert run_queue(app, clock) == [{"published": 2}, {"published": 2}, {"published": 2}]
    # The queue has caught up: the next tick starts from the first due row again.
    (left,) = add_actions(app, workspace_id, 1, due_in=-timedelta(minutes=5), thing_prefix="left")
    clock.advance(seconds=60)
    again = tick(app)
    assert again["resumed_after"] is None and again["dispatched"] == 1
    assert [task.args[0] for task in queued_tasks() if task.name == "dispatch"] == [[left]]


def test_rows_due_within_a_quarter_second_share_a_task_whose_eta_ends_it(app, queue, clock):
    workspace_id = make_channel(app)
    close = add_actions(app, workspace_id, 3, due_in=timedelta(seconds=30, milliseconds=10),
                        spacing=timedelta(milliseconds=60), thing_prefix="close")
    (apart,) = add_actions(app, workspace_id, 1, due_in=timedelta(seconds=30, milliseconds=300), thing_prefix="apart")
    assert tick(app)["scheduled_ahead"] == 4
    at = (clock.now() + timedelta(seconds=30)).replace(tzinfo=None)
    assert sorted((task.eta, task.args[0]) for task in queued_tasks()) == [
        (at + timedelta(milliseconds=250), close[:2]), (at + timedelta(milliseconds=250), close[2:]),  # chunks of 2
        (at + timedelta(milliseconds=500), [apart])]


def test_rows_due_at_the_same_instant_share_a_task_with_that_eta(app, queue, clock):
    workspace_id = make_channel(app)
    together = add_actions(app, workspace_id, 3, due_in=timedelta(seconds=30), spacing=timedelta(0))
    (later,) = add_actions(app, workspace_id, 1, due_in=timedelta(seconds=45))
    assert tick(app)["scheduled_ahead"] == 4
    tasks = sorted(([huey.deserialize_task(data) for data in huey.storage.enqueued_items()]),
                   key=lambda task: (task.eta, task.args[0]))
    at = (clock.now() + timedelta(seconds=30)).replace(tzinfo=None)
    assert [(task.args[0], task.eta) for task in tasks] == [
        (together[0:2], at), ([together[2]], at), ([later], at + timedelta(seconds=15))]


def test_a_task_queued_by_an_earlier_version_with_one_id_still_runs(app, queue, clock):
    from jobs.tasks import dispatch

    workspace_id = make_channel(app)
    (action_id,) = add_actions(app, workspace_id, 1)
    huey.enqueue(dispatch.s(action_id, None))
    assert run_queue(app, clock) == [{"published": 1}]
    assert outbox_ids(app) == [action_id]


def test_rows_due_before_the_next_tick_are_handed_over_with_their_eta(app, queue, clock):
    workspace_id = make_channel(app)
    (soon,) = add_actions(app, workspace_id, 1, due_in=timedelta(seconds=30))
    add_actions(app, workspace_id, 1, due_in=timedelta(minutes=3))
    summary = tick(app)
    assert summary["due"] == 0 and summary["scheduled_ahead"] == 1
    (task,) = [huey.deserialize_task(data) for data in huey.storage.enqueued_items()]
    assert task.eta == (clock.now() + timedelta(seconds=30)).replace(tzinfo=None)
    clock.advance(seconds=30)
    assert run_queue(app, clock) == [{"published": 1}]
    assert outbox_ids(app) == [soon]


def test_a_row_cancelled_between_the_tick_and_its_eta_is_skipped(app, queue, clock):
    workspace_id = make_channel(app)
    (action_id,) = add_actions(app, workspace_id, 1, due_in=timedelta(seconds=40))
    assert tick(app)["scheduled_ahead"] == 1
    with app.app_context(), write_session() as session:
        cancel_action(session, workspace_id, action_id, now=runtime().now(), actor=Actor(label="user:ops"), role=Role.OPS)
    clock.advance(seconds=40)
    assert run_queue(app, clock) == [{"skipped:cancelled": 1}]
    assert row(app, action_id).status == "cancelled" and outbox_ids(app) == []


def test_a_write_that_makes_a_row_due_soon_hands_it_to_the_queue(app, queue, clock):
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 2, due_in=timedelta(seconds=20), spacing=timedelta(minutes=5))
    with app.app_context():
        runtime().announce_due([row(app, i) for i in ids])
    (task,) = [huey.deserialize_task(data) for data in huey.storage.enqueued_items()]
    assert task.args[0] == [ids[0]]
    clock.advance(seconds=20)
    assert run_queue(app, clock) == [{"published": 1}]


def test_a_quick_retry_goes_back_on_the_queue_with_its_eta(app, queue, clock, httpserver):
    from werkzeug import Response

    answers = iter([Response("busy", status=503, headers={"Retry-After": "10"}), Response("{}", status=200)])
    httpserver.expect_request("/hook").respond_with_handler(lambda _request: next(answers))
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    (action_id,) = add_actions(app, workspace_id, 1)
    tick(app)
    assert run_queue(app, clock) == [{"reverted:retry_later": 1}]
    retry_at = row(app, action_id).next_attempt_at
    assert huey.scheduled_count() == 1
    from jobs.tasks import ETA_GRAIN_US

    clock.set(retry_at + timedelta(microseconds=ETA_GRAIN_US))  # its eta: the end of its quarter second
    assert run_queue(app, clock) == [{"published": 1}]


def test_a_chunk_of_rows_that_call_out_is_sent_whole_by_its_task_on_the_sending_threads(app, queue, clock,
                                                                                        httpserver):
    httpserver.expect_request("/hook").respond_with_json({"id": "r"})
    app.extensions["tickwork"].policy = app.extensions["tickwork"].policy.with_overrides({"dispatch_chunk": 3})
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    ids = add_actions(app, workspace_id, 3)
    tick(app)
    assert run_queue(app, clock) == [{"published": 3}]
    with app.app_context():
        assert huey.storage.enqueued_items() == []
    assert len(httpserver.log) == 3 and {row(app, i).status for i in ids} == {"published"}


def test_immediate_mode_hands_nothing_ahead(app_config, tmp_path):
    from webapp import create_app

    app_config["TICKWORK_QUEUE_URL"] = "immediate"
    app = create_app(app_config)
    workspace_id = make_channel(app)
    add_actions(app, workspace_id, 1, due_in=timedelta(seconds=30))
    summary = tick(app)
    assert summary["mode"] == "inline" and summary["scheduled_ahead"] == 0 and summary["due"] == 0
    assert huey.immediate and len(huey.storage.enqueued_items()) == 0
    from models.core.database import db

    with app.app_context():
        db.engine.dispose()


def test_consumer_heartbeats_are_written_and_read_back(app, clock):
    with app.app_context():
        beat("box:1", host="box", pid=1, started_at=clock.now(), now=clock.now())
        clock.advance(seconds=5)
        beat("box:1", host="box", pid=1, started_at=clock.now() - timedelta(seconds=5), now=clock.now())
        beat("box:2", host="box", pid=2, started_at=clock.now(), now=clock.now() - timedelta(minutes=5))
        beat("box:3", host="box", pid=3, started_at=clock.now(), now=clock.now() - timedelta(seconds=30))
        beat("box:4", host="box", pid=4, started_at=clock.now(), now=clock.now() - timedelta(seconds=12))
        with read_session() as session:
            live = live_consumers(session, clock.now())
            # Most recent first; a beat exactly three intervals old still counts, an older one does not.
            assert [h.name for h in live] == ["box:1", "box:4", "box:3"] and live[0].beat_at == clock.now()
        forget("box:1")
        with read_session() as session:
            assert [h.name for h in live_consumers(session, clock.now())] == ["box:4", "box:3"]


def test_a_queue_outage_does_not_fail_the_write_that_made_a_row_due_soon(app_config, clock):
    from models.core.database import db
    from tests.conftest import make_world
    from webapp import create_app

    app_config["TICKWORK_QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there
    app = create_app(app_config)
    world = make_world(app, name="Outage")
    try:
        answer = app.test_client().post("/api/v1/actions", headers=world.auth(), json={
            "action_type": "send_email", "channel": "main", "target_key": "a@example.com", "payload": {"body": "hi"},
            "publish_at": (clock.now() + timedelta(seconds=20)).isoformat()})
        assert answer.status_code == 201, answer.json
        assert row(app, answer.json["id"]).status == "queued"
    finally:
        huey.storage.close()
        with app.app_context():
            db.engine.dispose()


@pytest.mark.only_backend("postgresql")
def test_queue_storages_built_at_once_on_a_database_without_huey_tables_all_come_up(database_url):
    """Consumers starting together each build their storage, which creates Huey's tables: none may fail
    (PostgreSQL's CREATE TABLE IF NOT EXISTS races between sessions on its catalog)."""
    import threading

    import psycopg

    from jobs.queue import storage_for

    storage_class, kwargs = storage_for(database_url)
    for _ in range(5):
        with psycopg.connect(kwargs["dsn"], autocommit=True) as conn:
            for table in ("huey_kv", "huey_schedule", "huey_task", "huey_counter"):
                conn.execute(f"drop table if exists {table}")
        start, failures, built = threading.Barrier(6), [], []

        def build():
            start.wait()
            try:
                built.append(storage_class("tickwork", **kwargs))
            except Exception as exc:
                failures.append(exc)

        threads = [threading.Thread(target=build) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for storage in built:
            storage.close()
        assert failures == [], failures
        assert len(built) == 6
