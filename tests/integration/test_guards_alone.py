"""Each predicate of the lifecycles' guarded statements, alone (issue 22, item 6): a move whose row is in another
status, under another claim, in another workspace, or whose caller's view of it is stale, changes nothing.

Every test here fails when the one predicate it is named for is taken out of its statement (bench/guards.toml
lists which; bench/mutants.py takes each out and runs these again). The stale views are made by writing the
status behind the ORM object's back with a Core statement on the table, which the session does not see."""

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from models.actions import lifecycle
from models.actions.tables import ActionEvent, CancelKind, FailureCode, ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor, Refusal
from tests.factories import add_action
from tests.integration.clock_helpers import publish_a_legacy_sibling_of

JOB = Actor.job("test")


def _in(app, fn):
    with app.app_context(), write_session() as session:
        return fn(session)


def _row(app, action_id) -> ScheduledAction:
    with app.app_context(), read_session() as session:
        return session.get(ScheduledAction, action_id)


def _moves(app, action_id) -> list[tuple[str | None, str]]:
    with app.app_context(), read_session() as session:
        return [(e.from_status, e.to_status) for e in session.scalars(
            select(ActionEvent).where(ActionEvent.action_id == action_id).order_by(ActionEvent.id))]


def _claimed(app, world, clock) -> tuple[int, str]:
    action_id = add_action(app, world, publish_at=clock.now())
    outcome = _in(app, lambda s: lifecycle.claim(s, action_id, now=clock.now(), actor=JOB))
    assert outcome.ok
    return action_id, outcome.row.claim_token


def _published(app, world, clock) -> tuple[int, str]:
    """A row claimed and published: it keeps its claim token and its submitted_at."""
    action_id, token = _claimed(app, world, clock)
    assert _in(app, lambda s: lifecycle.publish(s, action_id, claim_token=token, provider_id="p-1", now=clock.now(),
                                                actor=JOB)).ok
    return action_id, token


def _still_published(app, action_id) -> None:
    row = _row(app, action_id)
    assert (row.status, row.provider_id) == ("published", "p-1")
    assert _moves(app, action_id)[-1] == ("submitted", "published")


# -- the action lifecycle: a published row keeps its token, and no move but publish may take it -------------


def test_a_published_row_is_not_failed_by_its_own_worker_nor_by_recovery(app, world, clock):
    action_id, token = _published(app, world, clock)
    by_worker = _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT,
                                                  message="late refusal", now=clock.now(), actor=JOB))
    assert by_worker.reason is Refusal.WRONG_STATE
    clock.advance(minutes=30)
    by_recovery = _in(app, lambda s: lifecycle.fail(s, action_id, code=FailureCode.WORKER_LOST, message="lost",
                                                    now=clock.now(), actor=JOB,
                                                    submitted_before=clock.now() - timedelta(minutes=10)))
    assert by_recovery.reason is Refusal.WRONG_STATE
    _still_published(app, action_id)


def test_a_fail_under_a_claim_that_is_no_longer_the_workers_is_refused(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    stale = _in(app, lambda s: lifecycle.fail(s, action_id, claim_token="an-older-claim", code=FailureCode.PERMANENT,
                                              message="no", now=clock.now(), actor=JOB))
    assert stale.reason is Refusal.CLAIM_LOST and _row(app, action_id).status == "submitted"


def test_a_published_row_is_not_reverted_asked_held_missed_or_stranded(app, world, clock):
    action_id, token = _published(app, world, clock)
    channel_id = _row(app, action_id).channel_id
    _in(app, lambda s: s.execute(update(Channel.__table__).where(Channel.__table__.c.id == channel_id)
                                 .values(reconnect_needed_since=clock.now())))
    moves = {
        "revert": lambda s: lifecycle.revert(s, action_id, claim_token=token, next_attempt_at=clock.now(),
                                             message="refused", now=clock.now(), actor=JOB),
        "ask": lambda s: lifecycle.ask(s, action_id, claim_token=token, message="asked", now=clock.now(), actor=JOB),
        "hold": lambda s: lifecycle.hold(s, action_id, channel_id=channel_id, until=clock.now() + timedelta(minutes=1),
                                         late_from=clock.now(), cause="rate", message="held", now=clock.now(),
                                         actor=JOB),
        "miss": lambda s: lifecycle.miss(s, action_id, code=FailureCode.MISSED_WINDOW, message="missed",
                                         now=clock.now(), actor=JOB),
        "strand": lambda s: lifecycle.strand(s, action_id, message="reconnect", now=clock.now(), actor=JOB),
    }
    for move, call in moves.items():
        outcome = _in(app, call)
        assert (move, outcome.reason, outcome.status) == (move, Refusal.WRONG_STATE, "published")
    _still_published(app, action_id)


def test_a_row_being_sent_is_not_missed_held_or_stranded_from_under_its_worker(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    channel_id = _row(app, action_id).channel_id
    _in(app, lambda s: s.execute(update(Channel.__table__).where(Channel.__table__.c.id == channel_id)
                                 .values(reconnect_needed_since=clock.now())))
    for call in (
        lambda s: lifecycle.miss(s, action_id, code=FailureCode.MISSED_WINDOW, message="missed", now=clock.now(),
                                 actor=JOB),
        lambda s: lifecycle.hold(s, action_id, channel_id=channel_id, until=clock.now() + timedelta(minutes=1),
                                 late_from=clock.now(), cause="rate", message="held", now=clock.now(), actor=JOB),
        lambda s: lifecycle.strand(s, action_id, message="reconnect", now=clock.now(), actor=JOB),
    ):
        assert _in(app, call).reason is Refusal.WRONG_STATE
    row = _row(app, action_id)
    assert (row.status, row.claim_token, row.failure_code) == ("submitted", token, None)
    assert _moves(app, action_id) == [(None, "queued"), ("queued", "submitted")]


def _sibling_moves(world, clock, channel_id):
    """Each move whose statement names its row by id alone (its other predicates hold for any row in that state)."""
    later = clock.now() + timedelta(minutes=1)
    return {
        "claim": ("queued", lambda s, i: lifecycle.claim(s, i, now=clock.now(), actor=JOB)),
        "miss": ("queued", lambda s, i: lifecycle.miss(s, i, code=FailureCode.MISSED_WINDOW, message="missed",
                                                       now=clock.now(), actor=JOB)),
        "cancel": ("queued", lambda s, i: lifecycle.cancel(s, i, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,
                                                           workspace_id=world.workspace_id)),
        "strand": ("queued", lambda s, i: lifecycle.strand(s, i, message="reconnect", now=clock.now(), actor=JOB)),
        "hold": ("queued", lambda s, i: lifecycle.hold(s, i, channel_id=channel_id, until=later, late_from=clock.now(),
                                                       cause="rate", message="held", now=clock.now(), actor=JOB)),
        "retry": ("failed", lambda s, i: lifecycle.retry(s, i, now=clock.now(), actor=JOB,
                                                         workspace_id=world.workspace_id)),
        "fail_by_recovery": ("submitted", lambda s, i: lifecycle.fail(
            s, i, code=FailureCode.WORKER_LOST, message="lost", now=clock.now(), actor=JOB,
            submitted_before=clock.now() - timedelta(minutes=10))),
    }


@pytest.mark.parametrize("move", ["claim", "miss", "cancel", "strand", "hold", "retry", "fail_by_recovery"])
def test_a_move_of_one_row_leaves_a_sibling_in_the_same_state_alone(app, world, clock, move):
    """Two rows of one workspace and channel, both due and in the move's source status: the id is all that tells
    the statement which one it moves."""
    ids = [add_action(app, world, publish_at=clock.now()) for _ in range(2)]
    channel_id = _row(app, ids[0]).channel_id
    source, call = _sibling_moves(world, clock, channel_id)[move]
    if source != "queued":
        tokens = [_in(app, lambda s, i=i: lifecycle.claim(s, i, now=clock.now(), actor=JOB)).row.claim_token
                  for i in ids]
        if source == "failed":
            for i, token in zip(ids, tokens):
                assert _in(app, lambda s, i=i, token=token: lifecycle.fail(
                    s, i, claim_token=token, code=FailureCode.PERMANENT, message="refused", now=clock.now(),
                    actor=JOB)).ok
        else:
            clock.advance(minutes=11)
    if move == "strand":
        _in(app, lambda s: s.execute(update(Channel.__table__).where(Channel.__table__.c.id == channel_id)
                                     .values(reconnect_needed_since=clock.now())))
    before = _row(app, ids[1])
    history = _moves(app, ids[1])
    assert before.status == source
    assert _in(app, lambda s: call(s, ids[0])).ok
    after = _row(app, ids[1])
    assert (after.status, after.next_attempt_at, after.failure_code, after.claim_token) == (
        before.status, before.next_attempt_at, before.failure_code, before.claim_token)
    assert _moves(app, ids[1]) == history


def test_a_hold_of_a_row_not_yet_due_is_refused(app, world, clock):
    action_id = add_action(app, world, publish_at=clock.now() + timedelta(minutes=5))
    channel_id = _row(app, action_id).channel_id
    outcome = _in(app, lambda s: lifecycle.hold(s, action_id, channel_id=channel_id,
                                                until=clock.now() + timedelta(minutes=10), late_from=clock.now(),
                                                cause="rate", message="held", now=clock.now(), actor=JOB))
    assert outcome.reason is Refusal.NOT_DUE
    assert _row(app, action_id).next_attempt_at is None and _moves(app, action_id) == [(None, "queued")]


def test_a_late_success_under_another_claim_than_the_lost_workers_is_refused(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    clock.advance(minutes=11)
    assert _in(app, lambda s: lifecycle.fail(s, action_id, code=FailureCode.WORKER_LOST, message="lost",
                                             now=clock.now(), actor=JOB,
                                             submitted_before=clock.now() - timedelta(minutes=10))).ok
    other = _in(app, lambda s: lifecycle.publish(s, action_id, claim_token=token + "-not", provider_id="x",
                                                 now=clock.now(), actor=JOB))
    assert other.reason is Refusal.CLAIM_LOST
    row = _row(app, action_id)
    assert (row.status, row.failure_code, row.provider_id) == ("failed", "worker_lost", None)


@pytest.mark.parametrize("move", ["cancel", "retry"])
def test_a_cancel_or_retry_from_another_workspace_finds_nothing(app, world, clock, move):
    if move == "cancel":
        action_id = add_action(app, world, publish_at=clock.now())
        call = lambda s: lifecycle.cancel(s, action_id, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,  # noqa: E731
                                          workspace_id=world.workspace_id + 1000)
    else:
        action_id, token = _claimed(app, world, clock)
        _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT, message="no",
                                          now=clock.now(), actor=JOB))
        call = lambda s: lifecycle.retry(s, action_id, now=clock.now(), actor=JOB,  # noqa: E731
                                         workspace_id=world.workspace_id + 1000)
    before = _row(app, action_id).status
    assert _in(app, call).reason is Refusal.NOT_FOUND
    assert _row(app, action_id).status == before


# -- the bulk moves ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("claim", ["claim_many", "claim_batch"])
def test_a_bulk_claim_takes_only_due_queued_rows_with_attempts_left(app, world, clock, claim):
    due = add_action(app, world, publish_at=clock.now(), target_key="due")
    later = add_action(app, world, publish_at=clock.now() + timedelta(minutes=5), target_key="later")
    spent = add_action(app, world, publish_at=clock.now(), target_key="spent")
    cancelled = add_action(app, world, publish_at=clock.now(), target_key="cancelled")
    published, _ = _published(app, world, clock)
    _in(app, lambda s: s.execute(update(ScheduledAction.__table__).where(ScheduledAction.__table__.c.id == spent)
                                 .values(attempt_count=5)))
    assert _in(app, lambda s: lifecycle.cancel(s, cancelled, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,
                                               workspace_id=world.workspace_id)).ok
    ids = [due, later, spent, cancelled, published]
    claimed = _in(app, lambda s: [row.id for row in getattr(lifecycle, claim)(s, ids, now=clock.now(), actor=JOB)])
    assert claimed == [due]
    assert [_row(app, i).status for i in ids] == ["submitted", "queued", "queued", "cancelled", "published"]
    assert (_row(app, spent).attempt_count, _row(app, published).attempt_count) == (5, 1)
    _still_published(app, published)


@pytest.mark.parametrize("claim", ["claim_many", "claim_batch"])
def test_a_bulk_claim_takes_only_the_rows_it_was_given(app, world, clock, claim):
    """Another due queued row of the same workspace and channel, not in the chunk: the id set alone leaves it to
    the chunk it belongs to."""
    given = [add_action(app, world, publish_at=clock.now()) for _ in range(2)]
    other = add_action(app, world, publish_at=clock.now())
    claimed = _in(app, lambda s: [row.id for row in getattr(lifecycle, claim)(s, given, now=clock.now(), actor=JOB)])
    assert sorted(claimed) == given
    assert _row(app, other).status == "queued" and _moves(app, other) == [(None, "queued")]


def test_publish_many_refuses_a_claimed_row_under_another_token(app, world, clock):
    action_id, _ = _claimed(app, world, clock)
    with pytest.raises(RuntimeError, match="moved 0 of 1"):
        _in(app, lambda s: lifecycle.publish_many(s, [(action_id, "another-claim", "x")], now=clock.now(),
                                                  actor=JOB))
    assert _row(app, action_id).status == "submitted"


def test_publish_many_refuses_a_row_already_failed_under_the_same_token(app, world, clock):
    action_id, token = _claimed(app, world, clock)
    _in(app, lambda s: lifecycle.fail(s, action_id, claim_token=token, code=FailureCode.PERMANENT, message="no",
                                      now=clock.now(), actor=JOB))
    with pytest.raises(RuntimeError, match="moved 0 of 1"):
        _in(app, lambda s: lifecycle.publish_many(s, [(action_id, token, "x")], now=clock.now(), actor=JOB))
    assert _row(app, action_id).status == "failed"


def test_a_batch_publish_moves_only_submitted_rows_under_their_own_token(app, world, clock):
    """The batch's one statement (json_to_recordset on PostgreSQL, json_each on SQLite) keeps both guards: a row
    under another token, or failed for good under its own, falls back to the one-row publish, which refuses it."""
    mine, token = _claimed(app, world, clock)
    stolen, _ = _claimed(app, world, clock)
    gone, gone_token = _claimed(app, world, clock)
    _in(app, lambda s: lifecycle.fail(s, gone, claim_token=gone_token, code=FailureCode.PERMANENT, message="no",
                                      now=clock.now(), actor=JOB))
    outcomes = _in(app, lambda s: {action_id: (None if outcome is None else outcome.reason)
                                   for action_id, outcome in lifecycle.publish_batch(
                                       s, [(mine, token, "p-mine"), (stolen, "another-claim", "p-stolen"),
                                           (gone, gone_token, "p-gone")], now=clock.now(), actor=JOB).items()})
    assert outcomes == {mine: None, stolen: Refusal.CLAIM_LOST, gone: Refusal.CLAIM_LOST}
    assert [_row(app, i).status for i in (mine, stolen, gone)] == ["published", "submitted", "failed"]


def test_a_delivery_moves_only_due_queued_rows_with_attempts_left_and_no_published_sibling(app, world, clock):
    """The deliver move's one statement (a local provider's claim and publish at once) keeps the claim's guards and
    makes the publish guard's test itself, which the database's trigger does not make for a row written published:
    a sibling already published, live or archived, keeps the row queued."""
    from models.actions.archived_keys import ArchivedKey

    due = add_action(app, world, publish_at=clock.now(), thing_id="post-due", target_key="due")
    later = add_action(app, world, publish_at=clock.now() + timedelta(minutes=5), target_key="later")
    spent = add_action(app, world, publish_at=clock.now(), target_key="spent")
    cancelled = add_action(app, world, publish_at=clock.now(), target_key="cancelled")
    published, _ = _published(app, world, clock)
    duplicate = add_action(app, world, publish_at=clock.now(), thing_id="post-dup", target_key="dup")
    archived = add_action(app, world, publish_at=clock.now(), thing_id="post-archived", target_key="archived")
    _in(app, lambda s: s.execute(update(ScheduledAction.__table__).where(ScheduledAction.__table__.c.id == spent)
                                 .values(attempt_count=5)))
    assert _in(app, lambda s: lifecycle.cancel(s, cancelled, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,
                                               workspace_id=world.workspace_id)).ok
    publish_a_legacy_sibling_of(app, duplicate)
    _in(app, lambda s: s.add(ArchivedKey(workspace_id=world.workspace_id, action_type="send_email",
                                         thing_id="post-archived", target_key="archived", published=True,
                                         archived_at=clock.now())))
    other = add_action(app, world, publish_at=clock.now(), target_key="not given")
    ids = [due, later, spent, cancelled, published, duplicate, archived]
    moved = _in(app, lambda s: lifecycle.deliver_batch(s, [(i, f"p-{i}") for i in ids], now=clock.now(), actor=JOB))
    assert moved == [due]
    assert _row(app, other).status == "queued"
    assert [_row(app, i).status for i in ids] == ["published", "queued", "queued", "cancelled", "published",
                                                  "queued", "queued"]
    assert (_row(app, due).provider_id, _row(app, due).attempt_count) == (f"p-{due}", 1)
    assert _moves(app, due) == [(None, "queued"), ("queued", "submitted"), ("submitted", "published")]
    assert _moves(app, duplicate) == _moves(app, archived) == [(None, "queued")]
    assert (_row(app, spent).attempt_count, _row(app, published).attempt_count) == (5, 1)
    _still_published(app, published)


# -- posts, recurring rules and contacts: each move runs from the status its caller saw ------------------------
#
# The callers read the thing under its lock, so in the product the status seen is the status stored; these tests
# hand a move a stale view (the status written behind the session's back) to show the statement's own compare.

_POST_MOVES = {  # move: (a status it starts from, its call's extra arguments)
    "submit": ("draft", {}), "request_changes": ("in_review", {"comment": "shorter"}), "approve": ("draft", {}),
    "unapprove": ("approved", {}), "expire": ("in_review", {}), "redraft": ("expired", {}),
    "publish": ("approved", {}), "archive": ("draft", {}), "return_to_review": ("approved", {"reason": "text"}),
}


@pytest.mark.parametrize("move", sorted(_POST_MOVES))
def test_a_post_move_from_a_status_the_post_no_longer_has_changes_nothing(app, client, world, clock, move):
    from models.posts import lifecycle as posts
    from models.posts.tables import Post, PostEvent

    answer = client.post("/api/v1/posts", headers=world.auth("marketer"),
                         json={"body": "Fresh bread", "targets": ["main"], "local_time": "2026-06-01T08:30"})
    assert answer.status_code == 201, answer.json
    post_id, (seen, extra) = answer.json["id"], _POST_MOVES[move]
    table = Post.__table__
    _in(app, lambda s: s.execute(update(table).where(table.c.id == post_id).values(status=seen)))
    behind = "archived" if seen != "archived" else "draft"
    with app.app_context(), write_session() as session:
        post = session.get(Post, post_id)
        assert post.status == seen
        session.execute(update(table).where(table.c.id == post_id).values(status=behind))
        outcome = getattr(posts, move)(session, post, now=clock.now(), actor=JOB, **extra)
        assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE
    with app.app_context(), read_session() as session:
        assert session.get(Post, post_id).status == behind
        assert [e.to_status for e in session.scalars(select(PostEvent).where(PostEvent.post_id == post_id))] == ["draft"]


_RULE_MOVES = {"pause": ("active", "ended"), "resume": ("paused", "ended"), "end": ("active", "ended"),
               "run_out": ("active", "paused")}


@pytest.mark.parametrize("move", sorted(_RULE_MOVES) + ["edit"])
def test_a_rule_move_or_edit_from_a_status_or_revision_the_rule_no_longer_has_changes_nothing(
        app, client, world, clock, move):
    from models.recurring import lifecycle as rules
    from models.recurring.tables import RecurringSchedule, RecurringScheduleEvent
    from tests.integration.recurring_helpers import make_rule

    rule_id = make_rule(client, world)["id"]
    table = RecurringSchedule.__table__
    seen, behind = _RULE_MOVES.get(move, ("active", "active"))
    _in(app, lambda s: s.execute(update(table).where(table.c.id == rule_id).values(status=seen)))
    with app.app_context(), write_session() as session:
        rule = session.get(RecurringSchedule, rule_id)
        revision = rule.revision
        if move == "edit":  # the status still allows an edit; the revision seen is the stale part
            session.execute(update(table).where(table.c.id == rule_id).values(revision=table.c.revision + 1))
            definition = {name: getattr(rule, name) for name in rules.DEFINITION}
            outcome = rules.edit(session, rule, {**definition, "target_key": "other@example.test"}, now=clock.now(),
                                 actor=JOB, changed=["target_key"])
        else:
            session.execute(update(table).where(table.c.id == rule_id).values(status=behind))
            outcome = getattr(rules, move)(session, rule, now=clock.now(), actor=JOB)
        assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE
    with app.app_context(), read_session() as session:
        stored = session.get(RecurringSchedule, rule_id)
        assert (stored.status, stored.target_key) == (behind, "list@example.test")
        assert stored.revision == revision + (1 if move == "edit" else 0)
        assert len(list(session.scalars(select(RecurringScheduleEvent)
                                        .where(RecurringScheduleEvent.schedule_id == rule_id)))) == 1


_RULE_SOURCES = {"pause": "active", "resume": "paused", "end": "active", "run_out": "active", "edit": "active"}


@pytest.mark.parametrize("move", sorted(_RULE_SOURCES))
def test_a_rule_move_or_edit_changes_its_own_rule_and_leaves_a_sibling_in_the_same_state_alone(
        app, client, world, clock, move):
    """Two rules in the same status at the same revision: the statement's id is the only thing telling them apart."""
    from models.recurring import lifecycle as rules
    from models.recurring.tables import RecurringSchedule
    from tests.integration.recurring_helpers import make_rule

    moved_id, sibling_id = make_rule(client, world)["id"], make_rule(client, world, target_key="b@example.test")["id"]
    table = RecurringSchedule.__table__
    _in(app, lambda s: s.execute(update(table).values(status=_RULE_SOURCES[move])))
    with app.app_context(), write_session() as session:
        rule = session.get(RecurringSchedule, moved_id)
        if move == "edit":
            definition = {name: getattr(rule, name) for name in rules.DEFINITION}
            outcome = rules.edit(session, rule, {**definition, "target_key": "other@example.test"}, now=clock.now(),
                                 actor=JOB, changed=["target_key"])
        else:
            outcome = getattr(rules, move)(session, rule, now=clock.now(), actor=JOB)
        assert outcome.ok
    with app.app_context(), read_session() as session:
        moved, sibling = session.get(RecurringSchedule, moved_id), session.get(RecurringSchedule, sibling_id)
        assert (moved.status != _RULE_SOURCES[move]) or moved.target_key == "other@example.test"
        assert (sibling.status, sibling.target_key, sibling.revision) == (_RULE_SOURCES[move], "b@example.test", 1)


def test_an_edit_of_a_rule_ended_since_it_was_read_changes_nothing(app, client, world, clock):
    from models.recurring import lifecycle as rules
    from models.recurring.tables import RecurringSchedule
    from tests.integration.recurring_helpers import make_rule

    rule_id = make_rule(client, world)["id"]
    table = RecurringSchedule.__table__
    with app.app_context(), write_session() as session:
        rule = session.get(RecurringSchedule, rule_id)
        session.execute(update(table).where(table.c.id == rule_id).values(status="ended"))
        definition = {name: getattr(rule, name) for name in rules.DEFINITION}
        outcome = rules.edit(session, rule, {**definition, "target_key": "other@example.test"}, now=clock.now(),
                             actor=JOB, changed=["target_key"])
        assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE
    with app.app_context(), read_session() as session:
        stored = session.get(RecurringSchedule, rule_id)
        assert (stored.status, stored.target_key, stored.revision) == ("ended", "list@example.test", 1)


@pytest.mark.parametrize("move", ["unsubscribe", "bounce"])
def test_a_contact_move_from_a_status_the_contact_no_longer_has_changes_nothing(app, world, clock, move):
    from models.drips import contacts as people
    from models.drips.tables import Contact, ContactEvent
    from tests.integration.drip_helpers import contacts

    [contact_id] = contacts(app, world.workspace_id, 1)
    table = Contact.__table__
    with app.app_context(), write_session() as session:
        contact = session.get(Contact, contact_id)
        assert contact.status == "subscribed"
        session.execute(update(table).where(table.c.id == contact_id).values(status="unsubscribed"))
        outcome = getattr(people, move)(session, contact, now=clock.now(), actor=JOB, reason="a stale view")
        assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE
    with app.app_context(), read_session() as session:
        assert session.get(Contact, contact_id).status == "unsubscribed"
        assert len(list(session.scalars(select(ContactEvent).where(ContactEvent.contact_id == contact_id)))) == 1


# -- drip enrollments and their sends: the status, the step and the send each refuse on their own ---------------


@pytest.fixture
def drip_app_config(app_config):
    from tests.integration.drip_helpers import BASE_URL

    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def _enrolled(app, world, *, mint_now=True):
    """An enrollment at step 0, in a campaign of its own: waiting on its first send when ``mint_now``."""
    from tests.integration.drip_helpers import campaign, contacts, enroll, enrollments

    name = "waiting" if mint_now else "idle"
    campaign_id = campaign(app, world.workspace_id, name=name)
    enroll(app, world.workspace_id, campaign_id, contacts(app, world.workspace_id, 1, prefix=name), mint_now=mint_now)
    [enrollment] = enrollments(app, campaign_id)
    return enrollment


def _enrollment(app, enrollment_id):
    from models.drips.tables import Enrollment

    with app.app_context(), read_session() as session:
        found = session.get(Enrollment, enrollment_id)
        return (found.status, found.current_step, found.waiting_send_id, found.next_send_at)


def _exit(app, enrollment_id, clock):
    from models.drips import enrollments as moves

    assert _in(app, lambda s: moves.exit_enrollment(s, enrollment_id, exit_reason="removed", now=clock.now(),
                                                    actor=JOB)).ok


def test_an_enrollment_that_ended_is_not_minted_advanced_completed_exited_or_retimed(drip_app_config, app, world,
                                                                                     clock):
    """Its step and its send still match (an exit leaves them as they were): only the status refuses."""
    from models.drips import enrollments as moves
    from tests.integration.drip_helpers import sends

    waiting, idle = _enrolled(app, world), _enrolled(app, world, mint_now=False)
    [send] = sends(app, waiting.id)
    for enrollment in (waiting, idle):
        _exit(app, enrollment.id, clock)
    before = (_enrollment(app, waiting.id), _enrollment(app, idle.id))
    later = clock.now() + timedelta(days=2)
    calls = {
        "mint": lambda s: moves.mint(s, idle.id, step=0, send_id=send.id, now=clock.now(), actor=JOB, reason="x").ok,
        "advance": lambda s: moves.advance(s, waiting.id, step=0, send_id=send.id, anchor_at=clock.now(),
                                           next_send_at=later, schedule_note=None, held_by_window=False,
                                           now=clock.now(), actor=JOB, reason="x").ok,
        "complete": lambda s: moves.complete(s, waiting.id, step=0, send_id=send.id, now=clock.now(), actor=JOB,
                                             reason="x").ok,
        "exit": lambda s: moves.exit_enrollment(s, waiting.id, exit_reason="send_failed", now=clock.now(),
                                                actor=JOB).ok,
        "reschedule": lambda s: moves.reschedule(s, idle.id, step=0, next_send_at=later, schedule_note=None,
                                                 held_by_window=False, now=clock.now()),
        "mint_each": lambda s: s.execute(moves.MINT_EACH, [{"enrollment_id": idle.id, "step": 0, "send_id": send.id,
                                                             "now": clock.now()}]).rowcount == 1,
    }
    assert {move: _in(app, call) for move, call in calls.items()} == {move: False for move in calls}
    assert (_enrollment(app, waiting.id), _enrollment(app, idle.id)) == before


def test_an_enrollment_move_from_a_stale_step_changes_nothing(drip_app_config, app, world, clock):
    from models.drips import enrollments as moves
    from tests.integration.drip_helpers import sends

    waiting, idle = _enrolled(app, world), _enrolled(app, world, mint_now=False)
    [send] = sends(app, waiting.id)
    before = (_enrollment(app, waiting.id), _enrollment(app, idle.id))
    later = clock.now() + timedelta(days=2)
    calls = {
        "mint": lambda s: moves.mint(s, idle.id, step=1, send_id=send.id, now=clock.now(), actor=JOB, reason="x").ok,
        "complete": lambda s: moves.complete(s, waiting.id, step=1, send_id=send.id, now=clock.now(), actor=JOB,
                                             reason="x").ok,
        "reschedule": lambda s: moves.reschedule(s, idle.id, step=1, next_send_at=later, schedule_note=None,
                                                 held_by_window=False, now=clock.now()),
        "mint_each": lambda s: s.execute(moves.MINT_EACH, [{"enrollment_id": idle.id, "step": 1, "send_id": send.id,
                                                             "now": clock.now()}]).rowcount == 1,
    }
    assert {move: _in(app, call) for move, call in calls.items()} == {move: False for move in calls}
    assert (_enrollment(app, waiting.id), _enrollment(app, idle.id)) == before


def test_an_enrollment_already_waiting_on_a_send_is_not_minted_again_nor_retimed_nor_completed_by_another(
        drip_app_config, app, world, clock):
    from models.drips import enrollments as moves
    from tests.integration.drip_helpers import sends

    waiting = _enrolled(app, world)
    [send] = sends(app, waiting.id)
    before = _enrollment(app, waiting.id)
    calls = {
        "mint": lambda s: moves.mint(s, waiting.id, step=0, send_id=send.id + 1000, now=clock.now(), actor=JOB,
                                     reason="x").ok,
        "complete": lambda s: moves.complete(s, waiting.id, step=0, send_id=send.id + 1000, now=clock.now(),
                                             actor=JOB, reason="x").ok,
        "reschedule": lambda s: moves.reschedule(s, waiting.id, step=0, next_send_at=clock.now() + timedelta(days=2),
                                                 schedule_note=None, held_by_window=False, now=clock.now()),
        "mint_each": lambda s: s.execute(moves.MINT_EACH, [{"enrollment_id": waiting.id, "step": 0,
                                                             "send_id": send.id + 1000, "now": clock.now()}]
                                         ).rowcount == 1,
    }
    assert {move: _in(app, call) for move, call in calls.items()} == {move: False for move in calls}
    assert _enrollment(app, waiting.id) == before


def _send_of(app, world):
    from tests.integration.drip_helpers import sends

    [send] = sends(app, _enrolled(app, world).id)
    assert send.status == "pending" and send.attempt_id is not None
    return send


def _send_now(app, send_id):
    from models.drips.tables import Send

    with app.app_context(), read_session() as session:
        found = session.get(Send, send_id)
        return (found.status, found.attempt_id, found.reason)


def test_a_send_is_not_settled_held_or_reminted_under_an_attempt_it_no_longer_points_at(drip_app_config, app, world,
                                                                                       clock):
    from models.drips import enrollments as moves
    from models.drips.tables import SendStatus

    send = _send_of(app, world)
    before, other = _send_now(app, send.id), send.attempt_id + 1000
    calls = {
        "settle": lambda s: moves.settle_send(s, send, attempt_id=other, to_status=SendStatus.SENT, reason="x",
                                              finished_at=clock.now(), now=clock.now(), actor=JOB).ok,
        "hold": lambda s: moves.hold_send(s, send, attempt_id=other, reason="x", now=clock.now(), actor=JOB).ok,
        "remint": lambda s: moves.remint_send(s, send, old_attempt_id=other, new_attempt_id=send.attempt_id,
                                              reason="x", now=clock.now(), actor=JOB).ok,
    }
    assert {move: _in(app, call) for move, call in calls.items()} == {move: False for move in calls}
    assert _send_now(app, send.id) == before


def test_a_settled_send_is_not_settled_again_held_or_reminted_under_its_own_attempt(drip_app_config, app, world,
                                                                                    clock):
    from models.drips import enrollments as moves
    from models.drips.tables import SendStatus

    send = _send_of(app, world)
    assert _in(app, lambda s: moves.settle_send(s, send, attempt_id=send.attempt_id, to_status=SendStatus.SENT,
                                                reason="sent", finished_at=clock.now(), now=clock.now(),
                                                actor=JOB).ok)
    before = _send_now(app, send.id)
    assert before[0] == "sent"
    calls = {
        "settle": lambda s: moves.settle_send(s, send, attempt_id=send.attempt_id, to_status=SendStatus.FAILED,
                                              reason="x", finished_at=clock.now(), now=clock.now(), actor=JOB).ok,
        "hold": lambda s: moves.hold_send(s, send, attempt_id=send.attempt_id, reason="x", now=clock.now(),
                                          actor=JOB).ok,
        "remint": lambda s: moves.remint_send(s, send, old_attempt_id=send.attempt_id, new_attempt_id=send.attempt_id,
                                              reason="x", now=clock.now(), actor=JOB).ok,
    }
    assert {move: _in(app, call) for move, call in calls.items()} == {move: False for move in calls}
    assert _send_now(app, send.id) == before


# -- the reconciler's and the expander's own gates, where the lifecycle's guard alone would answer otherwise ----


def _approved_post(client, world, *, local_time, targets=("main",)) -> int:
    answer = client.post("/api/v1/posts", headers=world.auth("marketer"),
                         json={"body": "Fresh bread", "targets": list(targets), "local_time": local_time})
    assert answer.status_code == 201, answer.json
    assert client.post(f"/api/v1/posts/{answer.json['id']}/approve", headers=world.auth("marketer")).status_code == 200
    return answer.json["id"]


def _post_rows(app, post_id) -> list[ScheduledAction]:
    from models.posts.tables import thing_id_of

    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == thing_id_of(post_id))
                                    .order_by(ScheduledAction.id)))


def _reconcile(app) -> dict:
    from jobs.clock import reconcile_once

    with app.app_context():
        return reconcile_once()


def test_the_reconciler_counts_a_claimed_row_of_an_approved_post_in_flight_not_unchanged(app, client, world, clock):
    """A claimed row is the sender's: the pass says so, whether or not the row still matches its post."""
    post_id = _approved_post(client, world, local_time="2026-06-01T08:00")  # due now
    [row] = _post_rows(app, post_id)
    assert _in(app, lambda s: lifecycle.claim(s, row.id, now=clock.now(), actor=JOB)).ok
    summary = _reconcile(app)
    assert (summary["skip_in_flight"], summary["unchanged"]) == (1, 0)
    assert [r.status for r in _post_rows(app, post_id)] == ["submitted"]


def _second_channel(app, world, clock) -> None:
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="second", kind="log", config={},
                            created_at=clock.now()))


def test_the_reconciler_counts_a_young_claimed_row_of_a_removed_target_in_flight_not_young(app, client, world, clock):
    _second_channel(app, world, clock)
    post_id = _approved_post(client, world, local_time="2026-06-01T08:00", targets=("main", "second"))  # due now
    [row] = [r for r in _post_rows(app, post_id) if r.target_key == "second"]
    assert _in(app, lambda s: lifecycle.claim(s, row.id, now=clock.now(), actor=JOB)).ok
    edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"targets": ["main"]})
    assert edit.status_code == 200, edit.json
    summary = _reconcile(app)  # the row is younger than the age gate, and being sent
    assert (summary["skip_in_flight"], summary["skip_young"]) == (1, 0)
    assert [r.status for r in _post_rows(app, post_id) if r.target_key == "second"] == ["submitted"]


def test_the_reconciler_leaves_a_persons_row_on_a_target_removed_from_its_post(app, client, world, clock):
    """Post now's row is a person's (origin ``person``): removing its target from the post does not withdraw it."""
    _second_channel(app, world, clock)
    post_id = _approved_post(client, world, local_time="2026-06-01T10:00", targets=("main", "second"))
    assert client.post(f"/api/v1/posts/{post_id}/post-now", headers=world.auth("marketer")).status_code == 200
    edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"targets": ["main"]})
    assert edit.status_code == 200, edit.json
    clock.advance(minutes=3)  # past the age gate
    summary = _reconcile(app)
    assert summary["skip_not_ours"] >= 1
    second = [(r.status, r.origin) for r in _post_rows(app, post_id) if r.target_key == "second"]
    assert ("queued", "person") in second
