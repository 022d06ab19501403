"""The tick and the dispatch worker, inline (immediate mode), on a frozen clock."""

import json
import threading
from datetime import timedelta

from sqlalchemy import func, select, update
from werkzeug import Response

from models.accounts.tables import Role
from models.actions import lifecycle
from models.actions.tables import ActionEvent, ScheduledAction
from models.clock.tables import ClockRun
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.channels.outbox import OutboxEntry
from models.actions.scheduling import retry_action
from models.clock.tick import recover_lost_workers
from tests.integration.clock_helpers import (add_actions, events, make_channel, publish_a_legacy_sibling_of, row,
                                             rows, tick)
from models.core.runtime import runtime

import pytest


def outbox(app) -> list[OutboxEntry]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(OutboxEntry).order_by(OutboxEntry.id)))


def set_policy(app, **values):
    runtime_ = app.extensions["tickwork"]
    runtime_.policy = runtime_.policy.with_overrides(values)


@pytest.fixture
def workspace(app):
    return make_channel(app)


def test_one_tick_drains_every_due_row_in_batches_not_one_batch_per_minute(app, workspace):
    set_policy(app, tick_batch_size=50)
    ids = add_actions(app, workspace, 180)
    summary = tick(app)
    assert summary["due"] == 180 and summary["batches"] == 4
    assert {r.status for r in rows(app, ids).values()} == {"published"}
    assert len(outbox(app)) == 180


def test_due_rows_go_out_in_publish_at_then_id_order(app, clock, workspace):
    later = add_actions(app, workspace, 3, due_in=timedelta(seconds=-30))
    earlier = add_actions(app, workspace, 3, due_in=timedelta(seconds=-90))
    tick(app)
    assert [entry.action_id for entry in outbox(app)] == earlier + later


def test_a_row_not_yet_due_is_left_queued(app, workspace):
    (action_id,) = add_actions(app, workspace, 1, due_in=timedelta(minutes=5))
    summary = tick(app)
    assert summary["due"] == 0 and row(app, action_id).status == "queued"


def test_a_tick_records_its_run_and_the_events_name_it(app, workspace):
    ids = add_actions(app, workspace, 2)
    summary = tick(app)
    with app.app_context(), read_session() as session:
        run = session.get(ClockRun, summary["clock_run_id"])
        assert run.kind == "tick" and run.finished_at is not None and run.error is None
        assert run.summary["due"] == 2 and run.summary["outcomes"] == {"published": 2}
        assert {"recovered", "missed", "dispatched", "duration_ms"} <= set(run.summary)
        moved = session.execute(select(ActionEvent.to_status, func.count()).where(ActionEvent.clock_run_id == run.id)
                                .group_by(ActionEvent.to_status)).all()
        assert dict(moved) == {"submitted": 2, "published": 2}
    for action_id in ids:
        moves = [(e.to_status, e.clock_run_id) for e in events(app, action_id)]
        assert moves == [("queued", None), ("submitted", run.id), ("published", run.id)]


def test_overlapping_ticks_send_each_row_once(app, workspace):
    ids = add_actions(app, workspace, 120)
    threads = [threading.Thread(target=tick, args=(app,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = [entry.action_id for entry in outbox(app)]
    assert sorted(sent) == sorted(ids)
    assert {r.attempt_count for r in rows(app, ids).values()} == {1}


def test_a_row_that_never_gets_through_fails_once_its_attempts_are_spent(app, clock):
    set_policy(app, max_attempts=3)
    workspace_id = make_channel(app, "webhook", {"url": "http://127.0.0.1:9/never"})
    (action_id,) = add_actions(app, workspace_id, 1)
    for _ in range(5):
        tick(app)
        clock.advance(hours=1)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "attempts_exhausted"
    assert after.attempt_count == 3
    assert "could not reach" in after.last_error
    claims = [e for e in events(app, action_id) if e.to_status == "submitted"]
    assert len(claims) == 3


def test_a_claim_refused_for_spent_attempts_fails_the_row_instead_of_retrying_every_tick(app):
    set_policy(app, max_attempts=2)
    workspace_id = make_channel(app)
    (action_id,) = add_actions(app, workspace_id, 1)
    with app.app_context(), write_session() as session:
        session.query(ScheduledAction).filter_by(id=action_id).update({"attempt_count": 2})
    summary = tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "attempts_exhausted"
    assert summary["outcomes"] == {"missed:attempts_exhausted": 1}
    assert outbox(app) == []


def test_a_row_later_than_its_window_is_failed_as_missed_not_sent(app, clock, workspace):
    sms = add_actions(app, workspace, 1, action_type="send_sms")[0]
    post = add_actions(app, workspace, 1, action_type="publish_post")[0]
    clock.advance(hours=2)  # SMS may be 1 h late, posts 6 h
    summary = tick(app)
    missed = row(app, sms)
    assert missed.status == "failed" and missed.failure_code == "missed_window"
    assert "missed its window" in missed.last_error and "send_sms may be at most 1h00m late" in missed.last_error
    assert row(app, post).status == "published"
    assert summary["missed"] == 1
    assert [entry.action_id for entry in outbox(app)] == [post]


def test_an_admin_retry_gives_a_missed_row_a_fresh_window(app, clock, workspace):
    (sms,) = add_actions(app, workspace, 1, action_type="send_sms")
    clock.advance(hours=2)
    tick(app)
    assert row(app, sms).failure_code == "missed_window"
    clock.advance(minutes=10)
    with app.app_context(), write_session() as session:
        retry_action(session, workspace, sms, now=runtime().now(), policy=runtime().policy, actor=Actor(label="admin"),
                     role=Role.ADMIN)
    tick(app)
    assert row(app, sms).status == "published"


def test_lateness_is_measured_from_the_next_attempt_so_backoff_never_misses_a_window(app, clock, httpserver):
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    answers = iter([Response("busy", status=429, headers={"Retry-After": "5400"}), Response("{}", status=200)])
    httpserver.expect_request("/hook").respond_with_handler(lambda _request: next(answers))
    (sms,) = add_actions(app, workspace_id, 1, action_type="send_sms")
    tick(app)
    retry_at = row(app, sms).next_attempt_at
    assert retry_at == clock.now() + timedelta(minutes=90)  # later than the 1 h window of an SMS
    clock.set(retry_at + timedelta(minutes=1))
    tick(app)
    assert row(app, sms).status == "published"


def claim_and_abandon(app, action_id: int) -> str:
    """What a worker that died after its claim leaves behind."""
    with app.app_context(), write_session() as session:
        moved = lifecycle.claim(session, action_id, now=runtime().now(), actor=Actor.job("dispatch"))
        assert moved.ok
        return moved.row.claim_token


def test_a_row_left_submitted_past_the_recovery_timeout_fails_as_worker_lost_and_is_never_resent(app, clock, workspace):
    (action_id,) = add_actions(app, workspace, 1)
    claim_and_abandon(app, action_id)
    clock.advance(minutes=9)
    assert tick(app)["recovered"] == 0
    assert row(app, action_id).status == "submitted"
    clock.advance(minutes=2)
    summary = tick(app)
    lost = row(app, action_id)
    assert summary["recovered"] == 1
    assert lost.status == "failed" and lost.failure_code == "worker_lost"
    assert lost.last_error.startswith("worker lost; outcome unknown")
    tick(app)
    assert outbox(app) == [] and row(app, action_id).status == "failed"


def test_a_recovery_pass_with_no_row_past_its_cutoff_writes_nothing_and_never_waits_for_a_writer(
        app, clock, workspace, backend, database_url):
    """Rows being sent, none of them past the recovery timeout: recovery only reads. Its read's own cut-off is what
    keeps it from taking a write transaction each tick (on SQLite the one writer's lock) for rows it must refuse."""
    import sqlite3

    import psycopg

    ids = add_actions(app, workspace, 2)
    for action_id in ids:
        claim_and_abandon(app, action_id)
    clock.advance(minutes=9)
    done = []

    def recover():
        with app.app_context():
            rt = runtime()
            done.append(recover_lost_workers(now=rt.now(), policy=rt.policy, actor=Actor.job("recover")))

    if backend == "sqlite":
        holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing
    else:
        holder = psycopg.connect(database_url.replace("postgresql+psycopg", "postgresql"))
        holder.execute("LOCK TABLE scheduled_actions IN SHARE MODE")  # reads pass, writes wait
    try:
        worker = threading.Thread(target=recover)
        worker.start()
        worker.join(timeout=30)
        assert done == [0], "recovery waited for the writer although it had nothing to recover"
    finally:
        holder.rollback()
        holder.close()
        worker.join()
    assert {row(app, action_id).status for action_id in ids} == {"submitted"}


def test_a_lost_workers_late_success_still_publishes_the_row(app, clock, httpserver):
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    (action_id,) = add_actions(app, workspace_id, 1)

    def slow_success(_request):
        # While the provider is "thinking", the worker is declared lost.
        clock.advance(minutes=11)
        with app.app_context():
            rt = runtime()
            assert recover_lost_workers(now=rt.now(), policy=rt.policy, actor=Actor.job("recover")) == 1
        assert row(app, action_id).failure_code == "worker_lost"
        return Response(json.dumps({"id": "late-1"}), status=200, content_type="application/json")

    httpserver.expect_request("/hook").respond_with_handler(slow_success)
    tick(app)
    after = row(app, action_id)
    assert after.status == "published" and after.provider_id == "late-1"
    assert [e.to_status for e in events(app, action_id)] == ["queued", "submitted", "failed", "published"]
    assert "after the worker was declared lost" in events(app, action_id)[-1].reason


def test_a_legacy_duplicate_beside_a_published_sibling_is_failed_not_retried_every_tick(app, clock, workspace):
    (action_id,) = add_actions(app, workspace, 1, thing_prefix="post-7")
    publish_a_legacy_sibling_of(app, action_id)
    summary = tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "duplicate_of_published"
    assert summary["outcomes"] == {"missed:duplicate_of_published": 1}
    assert outbox(app) == []


def test_a_row_that_is_no_longer_queued_is_skipped_without_a_send(app, workspace):
    from models.clock.dispatch import DispatchContext, dispatch_action

    (action_id,) = add_actions(app, workspace, 1)
    tick(app)
    with app.app_context():
        rt = runtime()
        result = dispatch_action(action_id, DispatchContext.of(rt))
        with read_session() as session:
            claims = session.scalar(select(func.count()).select_from(ActionEvent).where(
                ActionEvent.action_id == action_id, ActionEvent.to_status == "submitted"))
    assert result.outcome == "skipped" and result.reason == "published"
    assert claims == 1 and len(outbox(app)) == 1


def test_the_ticks_batches_walk_every_due_row_once_in_publish_at_then_id_order_across_rows_due_at_one_instant(
        app, workspace):
    """The cursor's two ranges (the rest of its instant, then the instants after it) give what the one
    ``(publish_at, id) > cursor`` condition gave: each due row once, in order, nothing not due."""
    from models.clock.tick import due_batch

    at_once = add_actions(app, workspace, 5, due_in=timedelta(minutes=-3))
    spread = add_actions(app, workspace, 4, due_in=timedelta(minutes=-10), spacing=timedelta(minutes=3))
    not_yet = add_actions(app, workspace, 2, due_in=timedelta(minutes=5))
    with app.app_context(), write_session() as session:
        session.execute(ScheduledAction.__table__.update().where(ScheduledAction.id == at_once[1])
                        .values(next_attempt_at=runtime().now() + timedelta(minutes=1)))  # retried later: not due
    with app.app_context(), read_session() as session:
        now = runtime().now()
        expected = [(r.id, r.publish_at) for r in session.scalars(
            select(ScheduledAction).where(ScheduledAction.id.not_in(not_yet + [at_once[1]]))
            .order_by(ScheduledAction.publish_at, ScheduledAction.id))]
        walked, cursor = [], None
        while batch := due_batch(session, now, after=cursor, limit=2):
            walked += batch
            cursor = (batch[-1][1], batch[-1][0])
    assert len(expected) == 8 and set(spread) <= {ident for ident, _ in expected}
    assert walked == expected


def test_recovery_alone_fails_only_rows_past_the_timeout_and_records_a_recover_run_naming_them(app, clock, workspace):
    """``tickwork recover``: the tick's first step on its own, recorded as a run of its own kind."""
    from jobs.clock import recover_once

    lost_id, fresh_id = add_actions(app, workspace, 2)
    claim_and_abandon(app, lost_id)
    clock.advance(minutes=11)
    claim_and_abandon(app, fresh_id)
    with app.app_context():
        summary = recover_once()
    assert summary["kind"] == "recover" and summary["recovered"] == 1 and summary["duration_ms"] >= 0
    with app.app_context(), read_session() as session:
        run = session.get(ClockRun, summary["clock_run_id"])
        assert run.kind == "recover" and run.finished_at == clock.now() and run.error is None
        assert run.summary == {"recovered": 1, "duration_ms": summary["duration_ms"]}
    assert row(app, lost_id).status == "failed" and row(app, lost_id).failure_code == "worker_lost"
    assert events(app, lost_id)[-1].clock_run_id == run.id
    assert row(app, fresh_id).status == "submitted" and outbox(app) == []


def test_a_hand_over_marker_is_recorded_on_its_own_tick_once_that_tick_has_written_its_summary(app, clock):
    """The marker a consumer takes behind a tick's tasks: False while that tick is still running (asked again
    later), True once it has finished; recorded only on a tick that hands over, whatever other runs say."""
    from models.clock.runs import HAND_OVER_TAKEN, finish_run, mark_hand_over_taken, start_run

    def summary_of(run_id):
        with app.app_context(), read_session() as session:
            return session.scalar(select(ClockRun.summary).where(ClockRun.id == run_id))

    with app.app_context():
        finished = start_run("tick", now=clock.now())
        finish_run(finished, now=clock.now(), summary={"due": 3})
        running = start_run("tick", now=clock.now())
        assert mark_hand_over_taken(running) is False  # its summary is not written yet
        finish_run(running, now=clock.now(), summary={"due": 0})
        assert mark_hand_over_taken(running) is True and summary_of(running) == {"due": 0}
        handing = start_run("tick", now=clock.now())
        finish_run(handing, now=clock.now(), summary={"due": 2, HAND_OVER_TAKEN: False})
        assert mark_hand_over_taken(handing) is True
        assert mark_hand_over_taken(handing) is True
    assert summary_of(handing) == {"due": 2, HAND_OVER_TAKEN: True}
    assert summary_of(finished) == {"due": 3}


def test_a_tick_goes_on_after_the_latest_finished_ticks_hand_over_only_while_its_marker_waits_and_is_recent(app, clock):
    """Where a fanned-out tick starts (``earlier_hand_over``), read from the runs table as the ticks left it:
    after the last finished tick's cursor, as long as that hand-over's marker has not been taken and both runs
    started within the recovery timeout; from the first due row otherwise."""
    from models.clock.runs import HAND_OVER_TAKEN, finish_run, start_run
    from models.clock.tick import earlier_hand_over

    through = [clock.now().isoformat(), 7]

    def run(kind, summary=None, *, started=None):
        with app.app_context():
            run_id = start_run(kind, now=started or clock.now())
            if summary is not None:
                finish_run(run_id, now=clock.now(), summary=summary)
            return run_id

    def goes_on_after(current):
        with app.app_context(), read_session() as session:
            return earlier_hand_over(session, current, clock.now(), runtime().policy)

    def change(run_id, **values):
        with app.app_context(), write_session() as session:
            session.execute(update(ClockRun).where(ClockRun.id == run_id).values(**values))

    def waiting(marker):
        return {"handed_through": through, "hand_over_run": marker}

    older = run("tick", {"handed_through": [clock.now().isoformat(), 3], "hand_over_run": None})
    marker = run("tick", {HAND_OVER_TAKEN: False, "handed_through": None, "hand_over_run": None})
    tied = run("tick", {"handed_through": [clock.now().isoformat(), 5], "hand_over_run": marker})
    last = run("tick", waiting(marker))
    # A later tick whose id is higher but which started earlier (clocks of two hosts) is not the latest.
    run("tick", {"handed_through": [clock.now().isoformat(), 9], "hand_over_run": marker},
        started=clock.now() - timedelta(seconds=30))
    run("reconcile", {"minted": 0})  # another job's run, newer
    run("tick")  # a tick that never finished (its consumer died)
    current = run("tick")  # this tick, not finished
    run("tick", {"handed_through": [clock.now().isoformat(), 11], "hand_over_run": marker})  # started after it
    expected = ((clock.now(), 7), marker)
    assert goes_on_after(current) == expected
    assert older < tied < last < current
    # A tick that handed nothing over, or whose summary names no marker, leaves nothing to go on after.
    change(last, summary={"handed_through": through, "hand_over_run": None})
    assert goes_on_after(current) is None
    change(last, summary=waiting(marker))
    # The marker has been taken, or is a run that never said: the queue has caught up.
    change(marker, summary={HAND_OVER_TAKEN: True})
    assert goes_on_after(current) is None
    change(marker, summary={"due": 0})
    assert goes_on_after(current) is None
    change(marker, summary={HAND_OVER_TAKEN: False})
    assert goes_on_after(current) == expected
    # Both runs count only while they started within the recovery timeout (ten minutes), its last instant included.
    clock.advance(minutes=10)
    assert goes_on_after(current) == expected
    change(marker, started_at=clock.now() - timedelta(minutes=11))
    assert goes_on_after(current) is None
    change(marker, started_at=clock.now() - timedelta(minutes=10))
    change(last, started_at=clock.now() - timedelta(minutes=11))
    assert goes_on_after(current) == ((clock.now() - timedelta(minutes=10), 5), marker)  # ``tied`` is the latest now


def test_rows_due_before_the_next_tick_are_read_in_publish_at_then_id_order_with_their_due_time(app, clock, workspace):
    """``due_ahead``: what a fanned-out tick hands over with an eta, in the order they fall due (rows added in
    another order), each due at its publish_at or, for a retry, its next attempt."""
    from models.clock.tick import due_ahead

    last, tied_first, tied_second = (add_actions(app, workspace, 1, due_in=timedelta(seconds=s), thing_prefix=p)[0]
                                     for s, p in ((50, "last"), (20, "tied-1"), (20, "tied-2")))
    (retried,) = add_actions(app, workspace, 1, due_in=timedelta(seconds=-5), thing_prefix="retried")
    (now_due,) = add_actions(app, workspace, 1, thing_prefix="now")
    retry_at = clock.now() + timedelta(seconds=40)
    with app.app_context(), write_session() as session:
        session.execute(update(ScheduledAction).where(ScheduledAction.id == retried).values(next_attempt_at=retry_at))
    with app.app_context(), read_session() as session:
        ahead = list(due_ahead(session, clock.now(), clock.now() + timedelta(minutes=1)))
    assert ahead == [(retried, retry_at), (tied_first, clock.now() + timedelta(seconds=20)),
                     (tied_second, clock.now() + timedelta(seconds=20)), (last, clock.now() + timedelta(seconds=50))]
    assert now_due not in [ident for ident, _ in ahead]


def test_the_misfire_sweep_alone_fails_exactly_the_rows_later_than_their_types_window(app, clock, workspace):
    """The sweep, with no dispatch after it to catch what it misses: a typed kind against its own window, every
    other kind against the default one, a held row from its hold's ``late_from``, a retried row from its next
    attempt."""
    from dataclasses import replace as with_changes

    from models.clock.tick import sweep_misfires

    def due(hours, action_type="publish_post", name="row"):
        return add_actions(app, workspace, 1, action_type=action_type, due_in=-timedelta(hours=hours),
                           thing_prefix=name)[0]

    sms_late, sms_on_time = due(2, "send_sms", "sms-late"), due(0.5, "send_sms", "sms-on-time")
    post_late, post_on_time = due(7, name="post-late"), due(5, name="post-on-time")
    held_late, retried_on_time = due(3, "send_sms", "held"), due(3, "send_sms", "retried")
    now = clock.now()
    with app.app_context(), write_session() as session:
        channel_id = session.get(ScheduledAction, held_late).channel_id
        # Held until ten minutes ago, late since two hours ago: the hold does not make it on time.
        assert lifecycle.hold(session, held_late, channel_id=channel_id, until=now - timedelta(minutes=10),
                              late_from=now - timedelta(hours=2), cause="rate", message="held", now=now,
                              actor=Actor.job("test")).ok
        session.execute(update(ScheduledAction).where(ScheduledAction.id == retried_on_time)
                        .values(next_attempt_at=now - timedelta(minutes=20)))
    with app.app_context():
        # publish_post has no window of its own here: the default (6 h) is its window.
        policy = with_changes(runtime().policy, max_lateness={"send_sms": timedelta(hours=1)})
        missed = sweep_misfires(now=now, policy=policy, actor=Actor.job("test"))
    after = rows(app)
    assert {i for i, r in after.items() if r.status == "failed"} == {sms_late, post_late, held_late} and missed == 3
    assert all(after[i].failure_code == "missed_window" for i in (sms_late, post_late, held_late))
    assert {after[i].status for i in (sms_on_time, post_on_time, retried_on_time)} == {"queued"}
    assert outbox(app) == []


def test_a_clock_job_that_raises_is_recorded_finished_with_its_error_and_logged_then_raised_again(app, clock, caplog):
    """``run_recorded`` outside any app context, on the engine it is given, as a process without Flask would call it."""
    from models.clock.runs import run_recorded
    from models.core.database import db

    with app.app_context():
        engine = db.engine

    def body(run_id):
        clock.advance(seconds=3)
        raise RuntimeError(f"no room in run {run_id}")

    with pytest.raises(RuntimeError, match="no room"):
        run_recorded("sweep-test", body, clock=clock, engine=engine)
    with app.app_context(), read_session() as session:
        run = session.scalar(select(ClockRun).where(ClockRun.kind == "sweep-test"))
    assert run.error == f"RuntimeError: no room in run {run.id}" and run.finished_at == clock.now()
    assert run.started_at == clock.now() - timedelta(seconds=3) and set(run.summary) == {"duration_ms"}
    (logged,) = [r for r in caplog.records if r.name == "tickwork.clock"]
    assert logged.getMessage() == f"clock job sweep-test (run {run.id}) failed" and logged.exc_info[0] is RuntimeError
    assert run_recorded("sweep-test", lambda run_id: {"swept": run_id}, clock=clock, engine=engine)["swept"] > run.id
