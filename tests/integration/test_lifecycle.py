"""Every move of the action lifecycle, allowed and refused (invariant 2), and the claim race (invariant 3)."""

import os
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from models.actions import lifecycle
from models.actions.tables import ActionEvent, CancelKind, FailureCode, ScheduledAction
from models.core.database import write_session
from models.actions.lifecycle import ALLOWED_MOVES, Move
from models.core.moves import Actor, Refusal
from tests.conftest import ROOT, TEST_SECRET
from tests.factories import add_action, add_due_actions

JOB = Actor.job("test")


def _in(app, fn):
    with app.app_context(), write_session() as session:
        return fn(session)


def _row(app, action_id):
    return _in(app, lambda s: s.get(ScheduledAction, action_id))


def _events(app, action_id):
    return _in(app, lambda s: list(s.scalars(select(ActionEvent).where(ActionEvent.action_id == action_id)
                                             .order_by(ActionEvent.id))))


def _claimed(app, world, clock):
    action_id = add_action(app, world, publish_at=clock.now())
    outcome = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB))
    assert outcome.ok
    return action_id, outcome.row.claim_token


def _failed(app, world, clock, attempts=1):
    action_id, token = _claimed(app, world, clock)
    _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT, message="no",
                                      now=clock.now(), actor=JOB))
    if attempts > 1:
        for _ in range(attempts - 1):
            _in(app, lambda s: lifecycle.retry(s, action_id, now=clock.now(), actor=JOB, workspace_id=world.workspace_id))
            token = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB)).row.claim_token
            _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT,
                                              message="no", now=clock.now(), actor=JOB))
    return action_id


def test_the_table_of_moves_is_the_playbooks_state_machine():
    assert {move: (sorted(s.value for s in src), dst.value) for move, (src, dst) in ALLOWED_MOVES.items()} == {
        Move.CLAIM: (["queued"], "submitted"),
        Move.PUBLISH: (["failed", "submitted"], "published"),
        Move.DELIVER: (["queued"], "published"),
        Move.FAIL: (["submitted"], "failed"),
        Move.REVERT: (["submitted"], "queued"),
        Move.MISS: (["queued"], "failed"),
        Move.CANCEL: (["queued"], "cancelled"),
        Move.RETRY: (["failed"], "queued"),
        Move.HOLD: (["queued"], "queued"),
        Move.DOUBT: (["queued", "submitted"], "failed"),
        Move.ASK: (["submitted"], "submitted"),
        Move.STRAND: (["queued"], "failed"),
    }


def test_claim_flips_queued_to_submitted_counts_an_attempt_and_stamps_a_token(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    row = _row(app, action_id)
    assert (row.status, row.attempt_count, row.submitted_at) == ("submitted", 1, clock.now())
    assert token and row.claim_token == token
    assert [(e.from_status, e.to_status) for e in _events(app, action_id)] == [(None, "queued"), ("queued", "submitted")]


def test_a_second_claim_of_the_same_row_is_refused_as_wrong_state(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    again = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB))
    assert not again.ok and again.reason is Refusal.WRONG_STATE and again.status == "submitted"
    assert _row(app, action_id).attempt_count == 1


def test_a_claim_before_publish_at_or_next_attempt_at_is_refused_as_not_due(app, world, clock):
    action_id = add_action(app, world, publish_at=clock.now() + timedelta(minutes=1))
    early = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB))
    assert early.reason is Refusal.NOT_DUE
    assert _row(app, action_id).status == "queued"


def test_claiming_a_missing_row_is_refused_as_not_found(app, world, clock):
    outcome = _in(app, lambda s: lifecycle.claim(s, 999_999, now=clock.now(), actor=JOB))
    assert outcome.reason is Refusal.NOT_FOUND


def test_publish_needs_the_claim_token_of_the_claim(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    stolen = _in(app, lambda s: lifecycle.publish(s, action_id, claim_token="someone-else", provider_id="x",
                                                  now=clock.now(), actor=JOB))
    assert stolen.reason is Refusal.CLAIM_LOST
    done = _in(app, lambda s: lifecycle.publish(s, action_id, claim_token=token, provider_id="msg-1",
                                                now=clock.now(), actor=JOB))
    assert done.ok
    row = _row(app, action_id)
    assert (row.status, row.provider_id, row.finished_at) == ("published", "msg-1", clock.now())


def test_a_lost_worker_whose_send_succeeded_still_records_published(app, world, clock):
    """Recovery failed the row as worker_lost; the late success carries the matching token: the truth wins."""
    action_id, token = _claimed(app, world, clock)
    clock.advance(minutes=11)
    recovered = _in(app, lambda s: lifecycle.fail(s, action_id, code=FailureCode.WORKER_LOST,
                                                  message="worker lost; outcome unknown", now=clock.now(),
                                                  actor=JOB, submitted_before=clock.now() - timedelta(minutes=10)))
    assert recovered.ok
    late = _in(app, lambda s: lifecycle.publish(s, action_id, claim_token=token, provider_id="late-1",
                                                now=clock.now(), actor=JOB))
    assert late.ok and _row(app, action_id).status == "published"
    assert _events(app, action_id)[-1].from_status == "failed"


def test_a_permanently_failed_row_cannot_be_published_late(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT, message="bad",
                                      now=clock.now(), actor=JOB))
    late = _in(app, lambda s: lifecycle.publish(s, action_id, claim_token=token, provider_id="x",
                                                now=clock.now(), actor=JOB))
    assert late.reason is Refusal.CLAIM_LOST and _row(app, action_id).status == "failed"


def test_recovery_leaves_a_row_submitted_after_the_cutoff(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    young = _in(app, lambda s: lifecycle.fail(s, action_id, code=FailureCode.WORKER_LOST, message="lost",
                                              now=clock.now(), actor=JOB,
                                              submitted_before=clock.now() - timedelta(minutes=10)))
    assert young.reason is Refusal.CLAIM_LOST and _row(app, action_id).status == "submitted"


def test_fail_requires_a_token_or_a_cutoff(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    with pytest.raises(ValueError):
        _in(app, lambda s: lifecycle.fail(s, action_id, code=FailureCode.PERMANENT, message="x", now=clock.now(),
                                          actor=JOB))


def test_revert_puts_the_row_back_with_its_attempt_counted(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    later = clock.now() + timedelta(seconds=30)
    outcome = _in(app, lambda s: lifecycle.revert(s, action_id, claim_token=token, next_attempt_at=later,
                                                  message="connection refused", now=clock.now(), actor=JOB))
    assert outcome.ok
    row = _row(app, action_id)
    assert (row.status, row.attempt_count, row.next_attempt_at, row.claim_token) == ("queued", 1, later, None)
    assert _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB)).reason is Refusal.NOT_DUE
    clock.set(later)
    assert _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB)).ok
    assert _row(app, action_id).attempt_count == 2


def test_revert_with_a_stale_token_is_refused(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    outcome = _in(app, lambda s: lifecycle.revert(s, action_id, claim_token="old", next_attempt_at=clock.now(),
                                                  message="x", now=clock.now(), actor=JOB))
    assert outcome.reason is Refusal.CLAIM_LOST


def test_miss_fails_a_queued_row_with_its_reason(app, world, clock):
    action_id = add_action(app, world, publish_at=clock.now())
    outcome = _in(app, lambda s: lifecycle.miss(s, action_id, code=FailureCode.MISSED_WINDOW,
                                                message="missed its window", now=clock.now(), actor=JOB))
    assert outcome.ok
    row = _row(app, action_id)
    assert (row.status, row.failure_code, row.attempt_count) == ("failed", "missed_window", 0)


def test_miss_refuses_codes_that_imply_a_send(app, world, clock):
    action_id = add_action(app, world, publish_at=clock.now())
    with pytest.raises(ValueError):
        _in(app, lambda s: lifecycle.miss(s, action_id, code=FailureCode.PERMANENT, message="x", now=clock.now(),
                                          actor=JOB))


def test_cancel_records_its_kind_and_refuses_past_queued(app, world, clock):
    action_id = add_action(app, world)
    assert _in(app, lambda s: lifecycle.cancel(s, action_id, kind=CancelKind.ORPHANED, now=clock.now(), actor=JOB,
                                               workspace_id=world.workspace_id)).ok
    row = _row(app, action_id)
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")
    claimed_id, _ = _claimed(app, world, clock)
    refused = _in(app, lambda s: lifecycle.cancel(s, claimed_id, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,
                                                    workspace_id=world.workspace_id))
    assert refused.reason is Refusal.WRONG_STATE and refused.status == "submitted"


def test_retry_requeues_the_same_row_due_now_and_clears_the_error(app, world, clock):
    action_id = _failed(app, world, clock)
    clock.advance(hours=1)
    outcome = _in(app, lambda s: lifecycle.retry(s, action_id, now=clock.now(), actor=JOB, workspace_id=world.workspace_id))
    assert outcome.ok
    row = _row(app, action_id)
    assert (row.status, row.last_error, row.next_attempt_at, row.attempt_count) == ("queued", None, clock.now(), 1)
    assert any(e.reason == "no" for e in _events(app, action_id)), "the old error stays in the events"


def test_retry_is_refused_once_five_attempts_are_spent(app, world, clock):
    action_id = _failed(app, world, clock, attempts=5)
    assert _row(app, action_id).attempt_count == 5
    outcome = _in(app, lambda s: lifecycle.retry(s, action_id, now=clock.now(), actor=JOB, workspace_id=world.workspace_id))
    assert outcome.reason is Refusal.ATTEMPTS_EXHAUSTED and _row(app, action_id).status == "failed"


def test_a_claim_past_the_attempt_budget_is_refused_as_attempts_exhausted(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    for _ in range(4):
        _in(app, lambda s: lifecycle.revert(s, action_id, claim_token=token, next_attempt_at=clock.now(),
                                            message="refused", now=clock.now(), actor=JOB))
        token = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB)).row.claim_token
    _in(app, lambda s: lifecycle.revert(s, action_id, claim_token=token, next_attempt_at=clock.now(),
                                        message="refused", now=clock.now(), actor=JOB))
    sixth = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB))
    assert sixth.reason is Refusal.ATTEMPTS_EXHAUSTED and _row(app, action_id).attempt_count == 5


@pytest.mark.parametrize("move", ["publish", "fail", "revert", "retry"])
def test_moves_from_the_wrong_status_change_nothing(app, world, clock, move):
    action_id = add_action(app, world, publish_at=clock.now())  # queued
    calls = {
        "publish": lambda s: lifecycle.publish(s, action_id, claim_token="t", provider_id="x", now=clock.now(), actor=JOB),
        "fail": lambda s: lifecycle.fail(s, action_id, claim_token="t", code=FailureCode.PERMANENT, message="x",
                                         now=clock.now(), actor=JOB),
        "revert": lambda s: lifecycle.revert(s, action_id, claim_token="t", next_attempt_at=clock.now(), message="x",
                                             now=clock.now(), actor=JOB),
        "retry": lambda s: lifecycle.retry(s, action_id, now=clock.now(), actor=JOB, workspace_id=world.workspace_id),
    }
    outcome = _in(app, calls[move])
    assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE and outcome.status == "queued"
    assert len(_events(app, action_id)) == 1


def test_every_move_writes_exactly_one_event_in_its_transaction(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    with pytest.raises(RuntimeError):
        with app.app_context(), write_session() as session:
            lifecycle.publish(session, action_id, claim_token=token, provider_id="x", now=clock.now(), actor=JOB)
            raise RuntimeError("crash before commit")
    assert _row(app, action_id).status == "submitted"
    assert len(_events(app, action_id)) == 2


def test_doubt_fails_active_rows_that_may_have_gone_out_and_leaves_later_and_terminal_ones(app, world, clock):
    submitted, _ = _claimed(app, world, clock)
    due = add_action(app, world, publish_at=clock.now() - timedelta(minutes=1))
    later = add_action(app, world, publish_at=clock.now() + timedelta(minutes=1))
    published, token = _claimed(app, world, clock)
    _in(app, lambda s: lifecycle.publish(s, published, claim_token=token, provider_id="p", now=clock.now(), actor=JOB))
    moved = _in(app, lambda s: lifecycle.doubt_after_restore(s, message="restored from a backup taken at T",
                                                             now=clock.now(), actor=JOB))
    assert moved == sorted([submitted, due])
    for action_id, source in ((submitted, "submitted"), (due, "queued")):
        row = _row(app, action_id)
        assert (row.status, row.failure_code, row.last_error) == ("failed", "outcome_unknown",
                                                                  "restored from a backup taken at T")
        assert (_events(app, action_id)[-1].from_status, _events(app, action_id)[-1].to_status) == (source, "failed")
    assert _row(app, later).status == "queued" and _row(app, published).status == "published"


# -- the claim race ------------------------------------------------------------------------

def _due_rows(app, world, clock, count):
    return add_due_actions(app, world, count, publish_at=clock.now())


def test_eight_threads_claiming_the_same_200_rows_claim_each_exactly_once(app, world, clock):
    ids = _due_rows(app, world, clock, 200)
    wins: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker():
        try:
            with app.app_context():
                for action_id in ids:
                    with write_session() as session:
                        outcome = lifecycle.claim(session, action_id, now=clock.now(), actor=JOB)
                    if outcome.ok:
                        with lock:
                            wins.append(action_id)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(wins) == sorted(ids)
    with app.app_context(), write_session() as session:
        assert session.scalar(select(func.count()).select_from(ScheduledAction)
                              .where(ScheduledAction.status == "submitted", ScheduledAction.attempt_count == 1)) == 200
        assert session.scalar(select(func.count()).select_from(ActionEvent)
                              .where(ActionEvent.to_status == "submitted")) == 200


CLAIMER = """
import json, sys
from datetime import datetime
from models.actions import lifecycle
from models.core.database import write_session
from models.core.moves import Actor
from webapp import create_app
from models.timing.clock import FrozenClock
app = create_app({"TICKWORK_CLOCK": FrozenClock(datetime.fromisoformat(sys.argv[1]))})
ids = json.loads(sys.argv[2])
won = []
with app.app_context():
    for action_id in ids:
        with write_session() as session:
            if lifecycle.claim(session, action_id, now=app.extensions["tickwork"].now(), actor=Actor.job("race")).ok:
                won.append(action_id)
print(json.dumps(won))
"""


@pytest.mark.slow
def test_four_processes_claiming_the_same_200_rows_claim_each_exactly_once(app, world, clock, database_url):
    ids = _due_rows(app, world, clock, 200)
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate")
    import json

    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, clock.now().isoformat(), json.dumps(ids)], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    wins = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        wins.extend(json.loads(out.strip().splitlines()[-1]))
    assert sorted(wins) == sorted(ids)
