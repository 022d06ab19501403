"""Raising a notification (at most once per key), reading a member's inbox, and marking it read."""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.core.errors import NotFound
from models.notifications.tables import Notification, NotificationRead, NotificationSettings


@dataclass(frozen=True)
class Raised:
    """A notification, and whether this call created it (False: its key was raised before)."""

    notification: Notification
    created: bool


def raise_notification(session: Session, workspace_id: int, *, kind: str, title: str, body: str,
                       dedupe_key: str, now: datetime, subject: str | None = None) -> Raised:
    """Write a notification unless one with ``dedupe_key`` exists in the workspace; the unique index decides."""
    existing = _by_key(session, workspace_id, dedupe_key)
    if existing is not None:
        return Raised(existing, False)
    notification = Notification(workspace_id=workspace_id, kind=kind, title=title[:200], body=body,
                                subject=subject, dedupe_key=dedupe_key[:128], created_at=now)
    try:
        with session.begin_nested():
            session.add(notification)
            session.flush()
    except IntegrityError:  # raised by a concurrent transaction between our look and this write
        return Raised(_by_key(session, workspace_id, dedupe_key), False)
    return Raised(notification, True)


def _by_key(session: Session, workspace_id: int, dedupe_key: str) -> Notification | None:
    return session.scalar(select(Notification).where(Notification.workspace_id == workspace_id,
                                                     Notification.dedupe_key == dedupe_key[:128]))


def _unread(workspace_id: int, user_id: int):
    read = select(NotificationRead.id).where(NotificationRead.notification_id == Notification.id,
                                             NotificationRead.user_id == user_id)
    return and_(Notification.workspace_id == workspace_id, ~read.exists())


def unread_count(session: Session, workspace_id: int, user_id: int) -> int:
    """What the bell shows: notifications of the workspace this member has not read."""
    return session.scalar(select(func.count()).select_from(Notification).where(_unread(workspace_id, user_id)))


@dataclass(frozen=True)
class InboxItem:
    notification: Notification
    read: bool


def inbox(session: Session, workspace_id: int, user_id: int, *, limit: int = 100) -> list[InboxItem]:
    """The workspace's latest notifications, newest first, each marked read or not for this member."""
    read_ids = select(NotificationRead.notification_id).where(NotificationRead.user_id == user_id)
    rows = session.execute(
        select(Notification, Notification.id.in_(read_ids))
        .where(Notification.workspace_id == workspace_id)
        .order_by(Notification.id.desc()).limit(limit)
    ).all()
    return [InboxItem(notification, bool(read)) for notification, read in rows]


def mark_read(session: Session, workspace_id: int, user_id: int, *, now: datetime,
              notification_id: int | None = None) -> int:
    """Mark one notification (or, without an id, every one) read for this member; returns how many changed."""
    query = select(Notification.id).where(_unread(workspace_id, user_id))
    if notification_id is not None:
        if session.scalar(select(Notification.id).where(Notification.id == notification_id,
                                                        Notification.workspace_id == workspace_id)) is None:
            raise NotFound(f"no notification #{notification_id} in this workspace")
        query = query.where(Notification.id == notification_id)
    marked = 0
    for unread_id in list(session.scalars(query)):
        try:
            with session.begin_nested():
                session.add(NotificationRead(notification_id=unread_id, user_id=user_id, read_at=now))
                session.flush()
            marked += 1
        except IntegrityError:  # marked read by the same member in another tab meanwhile
            continue
    return marked


def notification_settings(session: Session, workspace_id: int) -> NotificationSettings | None:
    """Where the workspace's notifications also go, if anywhere."""
    return session.get(NotificationSettings, workspace_id)
