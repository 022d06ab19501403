"""The publish guard (invariant 6): no active row beside a published sibling, enforced by the database."""

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from models.actions import lifecycle
from models.actions.tables import CancelKind, FailureCode, ScheduledAction
from models.core.database import write_session
from models.actions.guard import PublishGuardViolation, classify_integrity_error
from models.core.moves import Actor
from tests.factories import add_action

JOB = Actor.job("test")


def _publish(app, action_id, at):
    with app.app_context(), write_session() as session:
        claimed = lifecycle.claim(session, action_id, now=at, actor=JOB)
        assert claimed.ok
        assert lifecycle.publish(session, action_id, claim_token=claimed.row.claim_token, provider_id="p",
                                 now=at, actor=JOB).ok


def _count(app):
    with app.app_context(), write_session() as session:
        return session.scalar(select(func.count()).select_from(ScheduledAction))


def test_inserting_an_active_row_beside_a_published_sibling_is_refused(app, world, clock):
    first = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    _publish(app, first, clock.now())
    with pytest.raises(PublishGuardViolation):
        add_action(app, world, thing_id="post-1")
    assert _count(app) == 1


def test_updating_a_row_back_to_active_beside_a_published_sibling_is_refused_by_the_database(app, world, clock):
    """Even a raw UPDATE that bypasses the lifecycle cannot revive a sibling of a published row."""
    sibling = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    with app.app_context(), write_session() as session:
        assert lifecycle.cancel(session, sibling, kind=CancelKind.PERSON, now=clock.now(), actor=JOB,
                                workspace_id=world.workspace_id).ok
    published = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    _publish(app, published, clock.now())
    with app.app_context():
        with pytest.raises(IntegrityError) as caught:
            with write_session() as session:
                session.execute(update(ScheduledAction).where(ScheduledAction.id == sibling)
                                .values(status="queued", cancel_kind=None))
        assert isinstance(classify_integrity_error(caught.value), PublishGuardViolation)
        with write_session() as session:
            assert session.get(ScheduledAction, sibling).status == "cancelled"


def test_a_retry_beside_a_published_sibling_surfaces_as_the_typed_guard_error(app, world, clock):
    failed = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    with app.app_context(), write_session() as session:
        claimed = lifecycle.claim(session, failed, now=clock.now(), actor=JOB)
        lifecycle.fail(session, failed, claim_token=claimed.row.claim_token, code=FailureCode.PERMANENT,
                       message="bad token", now=clock.now(), actor=JOB)
    published = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    _publish(app, published, clock.now())
    with app.app_context():
        with pytest.raises(PublishGuardViolation):
            with write_session() as session:
                lifecycle.retry(session, failed, now=clock.now(), actor=JOB, workspace_id=world.workspace_id)
        with write_session() as session:
            assert session.get(ScheduledAction, failed).status == "failed"


def test_legacy_duplicate_published_rows_can_still_exist(app, world, clock):
    """History may hold two published rows for one key (redelivery, reposts); the guard leaves it be."""
    first = add_action(app, world, thing_id="post-1", publish_at=clock.now())
    _publish(app, first, clock.now())
    with app.app_context(), write_session() as session:
        row = session.get(ScheduledAction, first)
        columns = {c.key: getattr(row, c.key) for c in ScheduledAction.__table__.columns if c.key != "id"}
        columns.update(provider_id="redelivered")
        session.execute(insert(ScheduledAction).values(**columns))
        session.execute(update(ScheduledAction).where(ScheduledAction.id == first).values(provider_id="p2"))
    assert _count(app) == 2


def test_the_guard_ignores_rows_without_a_thing(app, world, clock):
    first = add_action(app, world, thing_id=None, publish_at=clock.now())
    _publish(app, first, clock.now())
    add_action(app, world, thing_id=None)  # ad-hoc rows dedupe by the request's Idempotency-Key instead
    assert _count(app) == 2
