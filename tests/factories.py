"""Rows for tests, written through the domain functions (never around them)."""

from datetime import timedelta

from sqlalchemy import select

from models.actions.tables import Origin
from models.channels.tables import Channel
from models.core.database import write_session
from models.core.moves import Actor
from models.actions.scheduling import NewAction, insert_action

SOMEONE = Actor(label="user:test")


def add_action(app, world, *, publish_at=None, thing_id=None, target_key="t1", action_type="send_email",
               payload=None, origin=Origin.PERSON, created_at=None):
    """Insert one queued action in ``world``'s workspace and return its id."""
    from models.core.runtime import runtime

    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
            row = insert_action(
                session, world.workspace_id,
                NewAction(action_type=action_type, channel=channel, target_key=target_key,
                          payload=payload or {"body": "hello"}, publish_at=publish_at or now + timedelta(minutes=5),
                          thing_id=thing_id),
                now=created_at or now, actor=SOMEONE, origin=origin,
            )
            return row.id


def add_due_actions(app, world, count, *, publish_at, action_type="send_email"):
    """Insert ``count`` due actions in one transaction; returns their ids in (publish_at, id) order."""
    from models.core.runtime import runtime

    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
            ids = []
            for index in range(count):
                row = insert_action(
                    session, world.workspace_id,
                    NewAction(action_type=action_type, channel=channel, target_key=f"t{index}",
                              payload={"n": index}, publish_at=publish_at),
                    now=now, actor=SOMEONE, origin=Origin.PERSON,
                )
                ids.append(row.id)
            return ids
