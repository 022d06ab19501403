"""Guards that other tests did not defend alone (issue 22, item 5): each test here fails when its guard, and only
it, is removed (each was checked by removing it by hand; bench/mutants.py removes them again on every run).

T0 is Monday 2026-06-01 12:00Z, 08:00 in the world's zone (America/New_York)."""

from datetime import timedelta

import pytest
from sqlalchemy import select, text

from models.actions import lifecycle as actions
from models.actions.tables import FailureCode, ScheduledAction
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.posts.tables import thing_id_of
from tests.integration.clock_helpers import tick
from tests.integration.recurring_helpers import expand, make_rule, patch, rule_rows
from tests.integration.works_helpers import Dispatcher, put_schedule, runs, schedule_row, scheduled_work

JOB = Actor.job("test")


def _post(client, world, *, local_time="2026-06-01T08:30") -> int:
    answer = client.post("/api/v1/posts", headers=world.auth("marketer"),
                         json={"body": "Fresh bread", "targets": ["main"], "local_time": local_time})
    assert answer.status_code == 201, answer.json
    assert client.post(f"/api/v1/posts/{answer.json['id']}/approve", headers=world.auth("marketer")).status_code == 200
    return answer.json["id"]


def _post_rows(app, post_id) -> list[ScheduledAction]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == thing_id_of(post_id))
                                    .order_by(ScheduledAction.id)))


def _reconcile(app) -> dict:
    from jobs.clock import reconcile_once

    with app.app_context():
        return reconcile_once()


def _drop_publish_guard(app, backend) -> None:
    """Take the database's publish guard away for this test's copy, so only the code's own gate is left."""
    with app.app_context(), write_session() as session:
        if backend == "postgresql":
            session.execute(text("DROP TRIGGER scheduled_actions_publish_guard ON scheduled_actions"))
        else:
            session.execute(text("DROP TRIGGER scheduled_actions_publish_guard_insert"))
            session.execute(text("DROP TRIGGER scheduled_actions_publish_guard_update"))


def _fail_queued(app, action_id: int, clock) -> None:
    """A queued row fails without a send (its content could not be built): terminal, like any failure."""
    with app.app_context(), write_session() as session:
        assert actions.miss(session, action_id, code=FailureCode.CONTENT_ERROR, message="the template broke",
                            now=clock.now(), actor=JOB).ok


# -- the work-schedule claim's compare-and-set --------------------------------------------------


def test_a_dispatcher_whose_read_is_stale_after_a_generation_that_already_finished_claims_nothing(
        app, client, world, clock):
    """The racers here never overlap: the winner claims, generates and settles before the loser's transaction starts,
    so the work's lock and the "already generating" check cannot stop it; only the claim's compare-and-set does."""
    from models.works.dispatcher import dispatch_schedule, due_schedules

    work_id = scheduled_work(client, world)
    clock.set(schedule_row(app, work_id).next_run_at + timedelta(seconds=20))
    with app.app_context(), read_session() as session:
        [(schedule_id, _, seen)] = due_schedules(session, clock.now(), 10)  # the slow dispatcher's read
    winner = Dispatcher(app)
    assert winner.pass_()["dispatched"] == 1  # claimed, generated, settled on the next day's slot
    assert runs(app, work_id)[0].status == "succeeded"
    late = Dispatcher(app)
    with app.app_context():
        entry = dispatch_schedule(schedule_id, work_id, seen, late.context(), Actor(label="slow dispatcher"))
    assert (entry.outcome, entry.reason) == ("skipped", "already_claimed")
    assert len(runs(app, work_id)) == 1 and late.handed == []


def test_a_stale_read_of_a_schedule_paused_since_claims_nothing(app, client, world, clock):
    """Pausing keeps nextRunAt (re-enabling reads the grid again), so only the claim's status compare stops it."""
    from models.works.dispatcher import dispatch_schedule, due_schedules

    work_id = scheduled_work(client, world)
    clock.set(schedule_row(app, work_id).next_run_at + timedelta(seconds=20))
    with app.app_context(), read_session() as session:
        [(schedule_id, _, seen)] = due_schedules(session, clock.now(), 10)
    assert put_schedule(client, world, work_id, enable=False).json["status"] == "paused"
    assert schedule_row(app, work_id).next_run_at == seen
    late = Dispatcher(app)
    with app.app_context():
        entry = dispatch_schedule(schedule_id, work_id, seen, late.context(), Actor(label="slow dispatcher"))
    assert (entry.outcome, entry.reason) == ("skipped", "already_claimed") and runs(app, work_id) == []


def test_a_stale_read_of_a_slot_whose_retry_is_due_since_claims_nothing_and_the_next_pass_runs_the_retry(
        app, client, world, clock):
    """nextRunAt moved from the slot read to its retry, due too: only ``nextRunAt = :seen`` tells them apart."""
    from models.works.dispatcher import dispatch_schedule, due_schedules

    work_id = scheduled_work(client, world, settings={"fail": "the source was down"})
    slot = schedule_row(app, work_id).next_run_at
    clock.set(slot + timedelta(seconds=20))
    with app.app_context(), read_session() as session:
        [(schedule_id, _, seen)] = due_schedules(session, clock.now(), 10)
    Dispatcher(app).pass_()  # claimed, failed: the retry is due 15 minutes later
    retry = schedule_row(app, work_id).next_run_at
    clock.set(retry + timedelta(seconds=5))
    late = Dispatcher(app)
    with app.app_context():
        entry = dispatch_schedule(schedule_id, work_id, seen, late.context(), Actor(label="slow dispatcher"))
    assert (entry.outcome, entry.reason) == ("skipped", "already_claimed") and late.handed == []
    assert schedule_row(app, work_id).next_run_at == retry


def test_a_claim_of_a_slot_not_yet_due_is_refused(app, client, world, clock):
    from models.works import lifecycle

    work_id = scheduled_work(client, world)
    schedule = schedule_row(app, work_id)
    with app.app_context(), write_session() as session:
        early = lifecycle.claim(session, schedule.id, seen_next_run_at=schedule.next_run_at, token="early" * 6,
                                now=clock.now())
    assert not early.ok and schedule_row(app, work_id).next_run_at == schedule.next_run_at


def test_a_busy_skip_from_a_stale_read_leaves_a_slot_claimed_since_alone(app, client, world, clock):
    """Run Now claimed the due slot after the dispatcher read it: the dispatcher's busy retry must not put a
    nextRunAt back on a claimed schedule (that would run the slot twice)."""
    from models.works.dispatcher import dispatch_schedule, due_schedules
    from tests.integration.works_helpers import run_now_held

    work_id = scheduled_work(client, world)
    clock.set(schedule_row(app, work_id).next_run_at + timedelta(seconds=20))
    with app.app_context(), read_session() as session:
        [(schedule_id, _, seen)] = due_schedules(session, clock.now(), 10)
    run_now_held(Dispatcher(app), world, work_id)
    with app.app_context():
        entry = dispatch_schedule(schedule_id, work_id, seen, Dispatcher(app).context(), Actor(label="slow"))
    assert (entry.outcome, entry.reason) == ("skipped", "already_claimed")
    assert schedule_row(app, work_id).next_run_at is None


# -- the reconciler's own terminal-history gate -------------------------------------------------


def test_the_reconcilers_own_gate_keeps_a_published_target_from_being_minted_again_without_the_database_guard(
        app, client, world, clock, backend):
    post_id = _post(client, world)
    clock.advance(minutes=30)
    tick(app)
    assert [row.status for row in _post_rows(app, post_id)] == ["published"]
    _drop_publish_guard(app, backend)
    summary = _reconcile(app)
    assert summary["inserted"] == 0 and summary["skip_terminal"] == 1
    assert [row.status for row in _post_rows(app, post_id)] == ["published"]


# -- a failed target is never minted again ------------------------------------------------------


def test_a_failed_target_is_never_minted_again_by_the_reconciler(app, client, world, clock):
    post_id = _post(client, world)
    [row] = _post_rows(app, post_id)
    _fail_queued(app, row.id, clock)
    for _ in range(2):
        assert _reconcile(app)["inserted"] == 0
    assert [row.status for row in _post_rows(app, post_id)] == ["failed"]


def test_a_failed_slot_is_never_minted_again_by_the_expander(app, client, world, clock):
    rule = make_rule(client, world)["id"]
    slot = f"rule:{rule}:2026-06-03T09:00"
    [row] = [row for row in rule_rows(app, rule) if row.thing_id == slot]
    _fail_queued(app, row.id, clock)
    # An edit re-expands every future slot, and a plain pass looks again.
    patch(client, world, rule, payload={"subject": "Digest {{ occurrence.local_date }}"})
    expand(app)
    assert [(r.status, r.failure_code) for r in rule_rows(app, rule) if r.thing_id == slot] == [
        ("failed", "content_error")]


# -- the drip advance's optimistic lock on current_step -----------------------------------------


@pytest.fixture
def drip_app_config(app_config):
    from tests.integration.drip_helpers import BASE_URL

    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def test_the_drip_advance_from_a_stale_step_changes_nothing_when_only_current_step_guards(
        drip_app_config, app, world, clock):
    """The advance names the send the enrollment waits on, so ``waiting_send_id`` matches and cannot refuse it:
    the step it read is stale, and only ``current_step = :step`` (the playbook's optimistic lock) stops it."""
    from models.drips import enrollments as moves
    from tests.integration.drip_helpers import campaign, contacts, enroll, enrollments, sends

    campaign_id = campaign(app, world.workspace_id)
    [contact_id] = contacts(app, world.workspace_id, 1)
    enroll(app, world.workspace_id, campaign_id, [contact_id])
    [enrollment] = enrollments(app, campaign_id)
    [send] = sends(app, enrollment.id)
    assert (enrollment.current_step, enrollment.waiting_send_id) == (0, send.id)
    with app.app_context(), write_session() as session:
        stale = moves.advance(session, enrollment.id, step=1, send_id=send.id, anchor_at=clock.now(),
                              next_send_at=clock.now() + timedelta(days=2), schedule_note=None, held_by_window=False,
                              now=clock.now(), actor=JOB, reason="a stale advance")
    assert not stale.ok
    [after] = enrollments(app, campaign_id)
    assert (after.current_step, after.waiting_send_id) == (0, send.id)


def test_a_drip_advance_naming_a_send_the_enrollment_does_not_wait_on_changes_nothing(
        drip_app_config, app, world, clock):
    """The step matches, so ``current_step`` cannot refuse it: only ``waiting_send_id = :send`` does."""
    from models.drips import enrollments as moves
    from tests.integration.drip_helpers import campaign, contacts, enroll, enrollments, sends

    campaign_id = campaign(app, world.workspace_id)
    [contact_id] = contacts(app, world.workspace_id, 1)
    enroll(app, world.workspace_id, campaign_id, [contact_id])
    [enrollment] = enrollments(app, campaign_id)
    [send] = sends(app, enrollment.id)
    with app.app_context(), write_session() as session:
        wrong = moves.advance(session, enrollment.id, step=0, send_id=send.id + 1000, anchor_at=clock.now(),
                              next_send_at=clock.now() + timedelta(days=2), schedule_note=None, held_by_window=False,
                              now=clock.now(), actor=JOB, reason="a send it does not wait on")
    assert not wrong.ok
    [after] = enrollments(app, campaign_id)
    assert (after.current_step, after.waiting_send_id) == (0, send.id)
