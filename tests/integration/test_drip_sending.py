"""Drip sends against real databases: the playbook's rules (the dedupe key, the optimistic advance), every
row of the outcome table, windows and day delays through a real enrollment, and the people's rules on
drip attempts. T0 is Monday 2026-06-01 12:00Z, 08:00 in the world's zone (America/New_York)."""

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from models.actions import lifecycle
from models.actions.guard import DuplicateActiveAction
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import CancelKind, FailureCode, Origin, ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.drips import enrollments as moves
from models.drips.sending import mint_due
from models.drips.tables import Enrollment, EnrollmentEvent, Send, dedupe_key_of
from models.timing.wall_time import to_local
from tests.integration.drip_helpers import (
    BASE_URL,
    advance,
    attempts,
    campaign,
    contacts,
    context,
    enroll,
    enrollments,
    outbox_count,
    sends,
    tick,
)

JOB = Actor.job("test")


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def test_the_dedupe_key_refuses_a_second_send_for_the_same_step(app, world, clock):
    campaign_id = campaign(app, world.workspace_id)
    [contact_id] = contacts(app, world.workspace_id, 1)
    [first] = enroll(app, world.workspace_id, campaign_id, [contact_id])
    [enrollment] = enrollments(app, campaign_id)
    with app.app_context():
        # A second mint of the same step, as a racing pass would try it: nothing happens.
        with write_session() as session:
            session.execute(update(Enrollment).where(Enrollment.id == enrollment.id).values(waiting_send_id=None))
            again = mint_due(session, [enrollment.id], now=clock.now(), ctx=context(app))
        assert again.counts["skip_minted"] == 1 and not again.new_rows
        # The database itself refuses a second send with the key, and a second active attempt with its thing_id.
        [send] = sends(app, enrollment.id)
        with pytest.raises(IntegrityError), write_session() as session:
            session.add(Send(workspace_id=world.workspace_id, enrollment_id=enrollment.id, step_index=0,
                             step_id=send.step_id, dedupe_key=dedupe_key_of(enrollment.id, 0), channel_id=send.channel_id,
                             status="pending", created_at=clock.now(), updated_at=clock.now()))
        with pytest.raises(DuplicateActiveAction), write_session() as session:
            insert_action(session, world.workspace_id, NewAction(
                action_type="send_email", channel=session.get(Channel, send.channel_id), target_key=first.target_key,
                payload={"body": "again"}, publish_at=clock.now(), thing_id=first.thing_id), now=clock.now(),
                actor=JOB, origin=Origin.DRIP)
    assert [a.thing_id for a in attempts(app)] == [f"drip:{enrollment.id}:0"]
    tick(app)
    advance(app)
    assert outbox_count(app) == 1


def test_of_two_racing_advances_from_one_step_exactly_one_wins(app, world, clock):
    campaign_id = campaign(app, world.workspace_id)
    [contact_id] = contacts(app, world.workspace_id, 1)
    enroll(app, world.workspace_id, campaign_id, [contact_id])
    [enrollment] = enrollments(app, campaign_id)
    [send] = sends(app, enrollment.id)
    barrier = threading.Barrier(2, timeout=10)
    outcomes = []

    def race():
        # Both start together; each is one guarded UPDATE in its own transaction (SQLite lets one writer
        # in at a time; PostgreSQL makes the second wait on the row lock, then re-checks its WHERE).
        barrier.wait()
        with app.app_context(), write_session() as session:
            outcomes.append(moves.advance(session, enrollment.id, step=0, send_id=send.id, anchor_at=clock.now(),
                                          next_send_at=clock.now() + timedelta(days=2), schedule_note=None,
                                          held_by_window=False, now=clock.now(), actor=JOB, reason="raced"))

    racers = [threading.Thread(target=race) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=30)
    assert sorted(outcome.ok for outcome in outcomes) == [False, True]
    [after] = enrollments(app, campaign_id)
    assert (after.current_step, after.waiting_send_id) == (1, None)
    with app.app_context(), read_session() as session:
        advanced = session.scalars(select(EnrollmentEvent).where(EnrollmentEvent.move == "advance")).all()
    assert len(advanced) == 1


def _end(app, action_id: int, how: str, clock) -> None:
    """Move a queued drip attempt to the terminal status ``how`` names, as the clock or a person would."""
    now = clock.now()
    with app.app_context(), write_session() as session:
        if how.startswith("cancelled:"):
            kind = CancelKind(how.split(":")[1])
            assert lifecycle.cancel(session, action_id, kind=kind, now=now, actor=JOB,
                                    workspace_id=session.get(ScheduledAction, action_id).workspace_id).ok
            return
        if how == "failed:missed_window":
            assert lifecycle.miss(session, action_id, code=FailureCode.MISSED_WINDOW, message="too late", now=now,
                                  actor=JOB).ok
            return
        claimed = lifecycle.claim(session, action_id, now=now, actor=JOB)
        assert claimed.ok, claimed
        token = claimed.row.claim_token
        if how == "published":
            assert lifecycle.publish(session, action_id, claim_token=token, provider_id="p", now=now, actor=JOB).ok
        else:
            code = FailureCode(how.split(":")[1])
            if code is FailureCode.WORKER_LOST:
                moved = lifecycle.fail(session, action_id, code=code, message="lost", now=now, actor=JOB,
                                       submitted_before=now)
            else:
                moved = lifecycle.fail(session, action_id, code=code, message="refused", claim_token=token, now=now,
                                       actor=JOB)
            assert moved.ok


# (how the attempt ends, on_failure) -> (the send's status, the enrollment's status, its step or exit reason)
OUTCOMES = {
    ("published", "exit"): ("sent", "active", 1),
    ("failed:permanent", "exit"): ("failed", "exited", "send_failed"),
    ("failed:permanent", "skip"): ("failed", "active", 1),
    ("failed:attempts_exhausted", "exit"): ("failed", "exited", "send_failed"),
    ("failed:outcome_unknown", "exit"): ("unknown", "active", 1),
    ("failed:worker_lost", "exit"): ("unknown", "active", 1),
    ("failed:missed_window", "skip"): ("missed", "active", 1),
    ("failed:missed_window", "exit"): ("missed", "exited", "missed_window"),
    ("cancelled:exited", "skip"): ("exited", "exited", "stopped"),
    ("cancelled:person", "exit"): ("skipped", "active", 1),
    ("cancelled:paused", "exit"): ("pending", "active", 0),  # re-minted at once: the campaign is active
}


def test_every_row_of_the_outcome_table(app, world, clock):
    rows = list(OUTCOMES)
    ids = {}
    for on_failure in ("exit", "skip"):
        ids[on_failure] = campaign(app, world.workspace_id, name=f"Welcome {on_failure}", on_failure=on_failure)
    people = contacts(app, world.workspace_id, len(rows))
    minted = {}
    for (how, on_failure), person in zip(rows, people):
        [attempt] = enroll(app, world.workspace_id, ids[on_failure], [person])
        minted[(how, on_failure)] = attempt
        _end(app, attempt.id, how, clock)
    clock.advance(minutes=1)
    summary = advance(app)
    assert not summary["errors"]
    for key, attempt in minted.items():
        send = next(s for s in sends(app) if s.dedupe_key == attempt.thing_id)
        enrollment = next(e for e in enrollments(app, ids[key[1]]) if e.id == send.enrollment_id)
        expected_send, expected_status, step_or_reason = OUTCOMES[key]
        seen = (send.status, enrollment.status,
                enrollment.current_step if expected_status == "active" else enrollment.exit_reason)
        assert seen == (expected_send, expected_status, step_or_reason), key
        if expected_send in ("sent", "unknown", "skipped", "failed", "missed") and expected_status == "active":
            # The next step counts from the attempt's end: two calendar days later, in the contact's window.
            assert enrollment.next_send_at == clock.now() - timedelta(minutes=1) + timedelta(days=2), key
    paused = minted[("cancelled:paused", "exit")]
    [again] = [a for a in attempts(app, paused.thing_id) if a.id != paused.id]
    assert again.rescheduled_from_id == paused.id and again.status == "queued"
    # Settling is once: another pass changes nothing.
    assert advance(app)["settled"] == 0


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_a_template_that_does_not_render_fails_its_send_before_any_provider_call(app, world, clock):
    steps = [{"delay": "PT0S", "subject": "Hi", "body": "Your code: {{ attributes.coupon }}"},
             {"delay": "P1D", "subject": "Bye", "body": "Bye"}]
    exits = campaign(app, world.workspace_id, steps=steps, name="Coupons")
    skips = campaign(app, world.workspace_id, steps=steps, name="Coupons, go on", on_failure="skip")
    first, second = contacts(app, world.workspace_id, 2)
    enroll(app, world.workspace_id, exits, [first])
    enroll(app, world.workspace_id, skips, [second])
    [failed, skipped] = attempts(app)
    assert (failed.status, failed.failure_code, failed.last_error) == ("failed", "content_error",
                                                                      "template: missing attribute 'coupon'")
    assert [e.exit_reason for e in enrollments(app, exits)] == ["send_failed"]
    assert [(e.status, e.current_step) for e in enrollments(app, skips)] == [("active", 1)]
    tick(app)
    assert outbox_count(app) == 0


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_a_step_whose_channel_needs_an_address_the_contact_lacks_is_skipped(app, world, clock):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="sms", kind="log", config={"address": "phone"},
                            created_at=clock.now()))
    steps = [{"delay": "PT0S", "body": "Text only", "channel": "sms"}, {"delay": "PT0S", "subject": "Mail", "body": "x"}]
    campaign_id = campaign(app, world.workspace_id, steps=steps)
    [person] = contacts(app, world.workspace_id, 1)
    [mail] = enroll(app, world.workspace_id, campaign_id, [person])
    first, second = sends(app)
    assert (first.status, first.attempt_id, first.reason) == ("skipped", None,
                                                            "no_address: the contact has no phone for sms")
    assert second.attempt_id == mail.id and mail.target_key == "person0@example.com"


def test_a_step_due_at_night_waits_for_the_window_and_a_day_delay_keeps_the_local_time_across_dst(app, world, clock):
    clock.set(clock.now().replace(month=3, day=6, hour=23, minute=30))  # Fri 6 March 18:30 EST
    window = {"start": "09:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri", "sun"]}
    steps = [{"delay": "PT2H", "subject": "a", "body": "a"}, {"delay": "P1D", "subject": "b", "body": "b"}]
    campaign_id = campaign(app, world.workspace_id, steps=steps, window=window)
    [person] = contacts(app, world.workspace_id, 1)
    assert enroll(app, world.workspace_id, campaign_id, [person]) == []  # 20:30 is outside: nothing minted now
    [enrollment] = enrollments(app, campaign_id)
    local = to_local(enrollment.next_send_at, "America/New_York")
    # Not Saturday (left out): Sunday 09:00, the morning the clocks sprang forward, in EDT.
    assert local.strftime("%a %d %H:%M %Z") == "Sun 08 09:00 EDT"
    assert enrollment.held_by_window and "held until the send window opens at 09:00" in enrollment.schedule_note
    clock.set(enrollment.next_send_at - timedelta(seconds=30))
    assert advance(app)["minted"] == 1  # due before the next tick: minted now, handed over with its time
    [attempt] = attempts(app)
    assert attempt.publish_at == enrollment.next_send_at
    clock.set(enrollment.next_send_at)
    tick(app)
    advance(app)
    [after] = enrollments(app, campaign_id)
    assert to_local(after.next_send_at, "America/New_York").strftime("%a %d %H:%M %Z") == "Mon 09 09:00 EDT"


def test_people_on_drip_attempts_cancel_skips_reschedule_and_late_retry_answer_409(app, world, client, clock):
    campaign_id = campaign(app, world.workspace_id, steps=[{"delay": "PT0S", "subject": "a", "body": "a"},
                                                           {"delay": "PT0S", "subject": "b", "body": "b"},
                                                           {"delay": "PT0S", "subject": "c", "body": "c"}])
    [person] = contacts(app, world.workspace_id, 1)
    [first] = enroll(app, world.workspace_id, campaign_id, [person])
    moved = client.post(f"/api/v1/actions/{first.id}/reschedule", headers=world.auth("ops"),
                        json={"publish_at": "2026-06-02T12:00:00Z"})
    assert moved.status_code == 409 and moved.json["error"]["code"] == "follows_enrollment"
    assert client.post(f"/api/v1/actions/{first.id}/cancel", headers=world.auth("marketer")).status_code == 403
    assert client.post(f"/api/v1/actions/{first.id}/cancel", headers=world.auth("ops")).status_code == 200
    advance(app)  # the cancel skips the step; the next one is minted in the same pass
    [enrollment] = enrollments(app, campaign_id)
    assert enrollment.current_step == 1
    assert sends(app)[0].reason == "cancelled_by_person"
    second = attempts(app)[-1]
    _end(app, second.id, "failed:permanent", clock)
    # While the enrollment still waits on this attempt, an admin may retry it...
    assert client.post(f"/api/v1/actions/{second.id}/retry", headers=world.auth("ops")).status_code == 403
    retried = client.post(f"/api/v1/actions/{second.id}/retry", headers=world.auth("admin"))
    assert retried.status_code == 200 and retried.json["status"] == "queued"
    _end(app, second.id, "failed:permanent", clock)
    advance(app)  # ...and once the step is settled, it follows the enrollment.
    late = client.post(f"/api/v1/actions/{second.id}/retry", headers=world.auth("admin"))
    assert late.status_code == 409 and late.json["error"]["code"] == "follows_enrollment"
    assert [e.exit_reason for e in enrollments(app, campaign_id)] == ["send_failed"]
