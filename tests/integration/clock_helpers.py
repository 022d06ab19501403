"""Helpers shared by the clock's tests: rows due now, ticks inline, reading rows back."""

import time
from datetime import timedelta

from sqlalchemy import insert, select

from models.actions.tables import ActionEvent, Origin, ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.actions.scheduling import NewAction, insert_action
from models.core.runtime import runtime


def add_actions(app, workspace_id: int, count: int = 1, *, action_type: str = "publish_post", channel: str = "main",
                due_in: timedelta = timedelta(0), payload: dict | None = None, spacing: timedelta = timedelta(0),
                thing_prefix: str | None = None) -> list[int]:
    """Insert ``count`` queued rows due at now + ``due_in`` (+ i × spacing); returns their ids."""
    with app.app_context():
        now = runtime().now()
        ids = []
        with write_session() as session:
            chan = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == channel))
            for i in range(count):
                new = NewAction(action_type=action_type, channel=chan, target_key=f"target-{i}",
                                payload=payload if payload is not None else {"body": f"hello {i}", "to": "+15555550100"},
                                publish_at=now + due_in + spacing * i,
                                thing_id=f"{thing_prefix}-{i}" if thing_prefix else None)
                row = insert_action(session, workspace_id, new, now=now, actor=Actor(label="test"),
                                    origin=Origin.PERSON)
                ids.append(row.id)
        return ids


def rows(app, ids=None) -> dict[int, ScheduledAction]:
    with app.app_context(), read_session() as session:
        query = select(ScheduledAction).order_by(ScheduledAction.id)
        if ids is not None:
            query = query.where(ScheduledAction.id.in_(list(ids)))
        return {row.id: row for row in session.scalars(query)}


def row(app, action_id: int) -> ScheduledAction:
    return rows(app, [action_id])[action_id]


def events(app, action_id: int) -> list[ActionEvent]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ActionEvent).where(ActionEvent.action_id == action_id).order_by(ActionEvent.id)))


def tick(app, **kwargs) -> dict:
    from jobs.clock import tick_once

    with app.app_context():
        return tick_once(**kwargs)


def make_channel(app, kind: str = "log", config: dict | None = None, secret: str | None = None,
                 name: str = "main", workspace: str = "Acme") -> int:
    """A workspace with one channel and no people (hashing passwords is slow); returns the workspace id."""
    from models.accounts.tables import Workspace

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            ws = session.scalar(select(Workspace).where(Workspace.name == workspace))
            if ws is None:
                ws = Workspace(name=workspace, timezone="America/New_York", created_at=rt.now())
                session.add(ws)
                session.flush()
            channel = Channel(workspace_id=ws.id, name=name, kind=kind, config=config or {}, created_at=rt.now())
            channel.set_secret(rt.secret_box, secret)
            session.add(channel)
            return ws.id


def publish_a_legacy_sibling_of(app, action_id: int) -> None:
    """A published row for the same thing and target, as an older version could have left beside a queued one."""
    queued = row(app, action_id)
    with app.app_context(), write_session() as session:
        values = {c: getattr(queued, c) for c in ("workspace_id", "action_type", "thing_id", "target_key",
                                                   "channel_id", "payload", "publish_at", "origin",
                                                   "created_at", "updated_at")}
        session.execute(insert(ScheduledAction).values(**values, status="published", attempt_count=1))


def channel_needs_reconnecting(app, channel_id: int) -> bool:
    """Whether the channel is marked "reconnect needed" (its token was refused and nothing can renew it)."""
    with app.app_context(), read_session() as session:
        return session.get(Channel, channel_id).reconnect_needed_since is not None


def give_a_new_secret(app, channel_id: int) -> None:
    """What an admin typing the channel's secret again does to "reconnect needed": it clears it."""
    from models.channels.connections import forget_connection

    with app.app_context(), write_session() as session:
        forget_connection(session.get(Channel, channel_id))


def wait_until(predicate, timeout: float, what: str):
    """Poll ``predicate`` every tenth of a second until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
