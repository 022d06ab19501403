"""Creating workspaces, adding members and saving channels: one domain function each, which the
dashboard, the command line and the demo all call; every refusal is typed and writes nothing."""

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from models.accounts.members import add_member, find_user
from models.accounts.tables import Membership, User, Workspace
from models.accounts.workspaces import create_workspace, find_workspace
from models.actions.tables import ScheduledAction, queued_and_due_by
from models.channels.operations import save_channel
from models.channels.reading import channel_names
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.keyset import after
from models.core.runtime import runtime
from tests.factories import add_action


def _count(app, model, *where):
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model).where(*where))


def test_create_workspace_checks_its_name_and_zone_and_refuses_a_taken_name(app, world):
    with app.app_context(), write_session() as session:
        made = create_workspace(session, name="  Hooli ", zone="Europe/Berlin", now=runtime().now())
        assert (made.name, made.timezone, made.plan) == ("Hooli", "Europe/Berlin", "free")
    for name, zone, error, field in (("Hooli", "Europe/Paris", Conflict, "name"), ("Other", "Mars/Base", InvalidInput,
                                     "timezone"), ("", "Europe/Paris", InvalidInput, "name")):
        with pytest.raises(error) as refused, app.app_context(), write_session() as session:
            create_workspace(session, name=name, zone=zone, now=runtime().now())
        assert refused.value.field == field
    assert _count(app, Workspace) == 2  # Acme and Hooli
    with app.app_context(), read_session() as session:
        assert find_workspace(session, "Hooli").id == made.id
        with pytest.raises(NotFound):
            find_workspace(session, "Nowhere")


def test_add_member_creates_the_person_once_and_refuses_a_second_membership(app, world):
    with app.app_context(), write_session() as session:
        first = add_member(session, world.workspace_id, email=" New@Acme.test ", role="ops",
                           password="long enough", now=runtime().now())
        assert (first.user.email, first.role) == ("new@acme.test", "ops")
    for kwargs, error, field in (
        (dict(email="new@acme.test", role="ops", password=None), Conflict, "email"),
        (dict(email="not-an-email", role="ops", password="long enough"), InvalidInput, "email"),
        (dict(email="other@acme.test", role="owner", password="long enough"), InvalidInput, "role"),
        (dict(email="other@acme.test", role="ops", password="short"), InvalidInput, "password"),
        (dict(email="other@acme.test", role="ops", password=None), InvalidInput, "password"),
    ):
        with pytest.raises(error) as refused, app.app_context(), write_session() as session:
            add_member(session, world.workspace_id, now=runtime().now(), **kwargs)
        assert refused.value.field == field
    assert _count(app, User, User.email == "other@acme.test") == 0
    assert _count(app, Membership, Membership.workspace_id == world.workspace_id) == 4
    with app.app_context(), read_session() as session:
        assert find_user(session, "NEW@acme.test").id == first.user_id


def test_save_channel_adds_edits_and_refuses_a_name_the_workspace_already_has(app, world):
    rt_args = {}
    with app.app_context():
        rt_args = dict(box=runtime().secret_box, now=runtime().now())
        with write_session() as session:
            hook = save_channel(session, world.workspace_id, name="hook", kind="webhook",
                                config={"url": "https://example.test/hook"}, secret="shh", **rt_args)
            hook_id = hook.id
        with write_session() as session:
            save_channel(session, world.workspace_id, channel_id=hook_id, name="hook2", kind="webhook",
                         config={"url": "https://example.test/hook", "rate": "5/s"}, **rt_args)
        with read_session() as session:
            saved = session.get(Channel, hook_id)
            assert (saved.name, saved.config["url"], saved.secret(rt_args["box"])) == (
                "hook2", "https://example.test/hook", "shh")  # same destination, no secret given: the old one is kept
            assert channel_names(session, world.workspace_id) == {saved.id: "hook2", **{
                c.id: c.name for c in session.scalars(select(Channel).where(Channel.name == "main"))}}
    for kwargs, error, field in (
        (dict(name="main", kind="log", config={}), Conflict, "name"),
        (dict(name="hook2", kind="log", config={}, channel_id=None), Conflict, "name"),
        (dict(name="bad name!", kind="log", config={}), InvalidInput, "name"),
        (dict(name="x", kind="pigeon", config={}), InvalidInput, "kind"),
        (dict(name="x", kind="webhook", config={"url": "ftp://x"}), InvalidInput, "url"),
        (dict(name="x", kind="log", config={f"k{n}": n for n in range(21)}), InvalidInput, "settings"),
    ):
        with pytest.raises(error) as refused, app.app_context(), write_session() as session:
            save_channel(session, world.workspace_id, **{"channel_id": hook_id, **kwargs, **rt_args})
        assert refused.value.field == field
    assert _count(app, Channel) == 2


def test_the_keyset_condition_pages_through_ties_in_publish_at_then_id_order(app, world, clock):
    at = clock.now() + timedelta(hours=1)
    ids = [add_action(app, world, publish_at=at + timedelta(minutes=minute), target_key=f"t{n}")
           for n, minute in enumerate((5, 0, 5, 0, 5))]
    expected = sorted(ids, key=lambda ident: (at + timedelta(minutes=(5, 0, 5, 0, 5)[ids.index(ident)]), ident))
    seen, cursor = [], None
    with app.app_context(), read_session() as session:
        while True:
            query = select(ScheduledAction.id, ScheduledAction.publish_at).order_by(
                ScheduledAction.publish_at, ScheduledAction.id).limit(2)
            if cursor:
                query = query.where(after((ScheduledAction.publish_at, ScheduledAction.id), cursor))
            page = session.execute(query).all()
            if not page:
                break
            seen += [ident for ident, _ in page]
            cursor = (page[-1].publish_at, page[-1].id)
        backwards = session.scalars(select(ScheduledAction.id).where(
            after((ScheduledAction.publish_at, ScheduledAction.id), (at + timedelta(minutes=5), expected[-1]),
                  descending=True)).order_by(ScheduledAction.publish_at.desc(), ScheduledAction.id.desc())).all()
    assert seen == expected
    assert backwards == list(reversed(expected[:-1]))


def test_due_means_publish_at_and_any_next_attempt_have_both_passed(app, world, clock):
    now = clock.now()
    due = add_action(app, world, publish_at=now - timedelta(minutes=1), target_key="due")
    later = add_action(app, world, publish_at=now + timedelta(minutes=1), target_key="later")
    backing_off = add_action(app, world, publish_at=now - timedelta(minutes=1), target_key="backing-off")
    with app.app_context(), write_session() as session:
        session.get(ScheduledAction, backing_off).next_attempt_at = now + timedelta(seconds=30)
    with app.app_context(), read_session() as session:
        found = set(session.scalars(select(ScheduledAction.id).where(queued_and_due_by(now))))
        in_a_minute = set(session.scalars(select(ScheduledAction.id).where(
            queued_and_due_by(now + timedelta(minutes=1)))))
    assert found == {due} and in_a_minute == {due, later, backing_off}
    assert datetime(2026, 1, 1, tzinfo=timezone.utc) < now  # the frozen clock, not the host's
