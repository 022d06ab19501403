"""Telling a workspace that something happened to one of its works: in-app, and through the engine.

The in-app notification (the bell) is written by :mod:`models.notifications`, at most once
per key. When the workspace names a channel and a recipient in its notification settings,
the same transaction also schedules one action due now, origin ``system``, with the keys of
the brief's table (``thing_id = notification:<id>``, ``target_key`` = the recipient): the
dedupe index and the publish guard then make its send at-most-once like any action's.
The notifications floor cannot reach the engine (it sits below ``actions``), so this wing
does the sending.
"""

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import Origin, ScheduledAction
from models.channels.tables import Channel
from models.core.errors import InvalidInput
from models.core.moves import Actor
from models.notifications.inbox import notification_settings, raise_notification
from models.notifications.tables import Notification, NotificationSettings

ACTION_TYPE = "notification"
MAX_RECIPIENT = 255


@dataclass
class Notified:
    """A notification raised (or found raised already) and the actions this call scheduled for it."""

    notification: Notification
    created: bool
    actions: list[ScheduledAction] = field(default_factory=list)


def notify(session: Session, workspace_id: int, *, kind: str, title: str, body: str, dedupe_key: str,
           now: datetime, actor: Actor, subject: str | None = None) -> Notified:
    """Raise a notification once per ``dedupe_key``, and send it where the workspace's settings say."""
    raised = raise_notification(session, workspace_id, kind=kind, title=title, body=body, dedupe_key=dedupe_key,
                                subject=subject, now=now)
    notified = Notified(raised.notification, raised.created)
    if not raised.created:
        return notified
    settings = notification_settings(session, workspace_id)
    if settings is None or settings.channel_id is None or not settings.recipient:
        return notified
    channel = session.get(Channel, settings.channel_id)
    new = NewAction(action_type=ACTION_TYPE, channel=channel, target_key=settings.recipient,
                    payload={"subject": title, "text": body, "body": f"{title}: {body}", "status": f"{title}\n{body}"},
                    publish_at=now, thing_id=raised.notification.thing_id)
    try:
        row = insert_action(session, workspace_id, new, now=now, actor=actor, origin=Origin.SYSTEM,
                            reason=f"notification #{raised.notification.id}")
    except (DuplicateActiveAction, PublishGuardViolation):
        return notified  # this notification's send already exists: at most once, as its keys intend
    notified.actions.append(row)
    return notified


def save_notification_settings(session: Session, workspace_id: int, *, channel: str | None, recipient: str | None,
                               now: datetime) -> NotificationSettings:
    """Send the workspace's notifications through ``channel`` to ``recipient`` (both empty: in-app only)."""
    channel = (channel or "").strip() or None
    recipient = (recipient or "").strip() or None
    found = None
    if channel is not None and (len(channel) > 63 or "\x00" in channel):
        raise InvalidInput("no such channel in this workspace", field="channel", code="unknown_channel")
    if channel is not None:
        found = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == channel))
        if found is None:
            raise InvalidInput(f"no channel named {channel!r} in this workspace", field="channel",
                               code="unknown_channel")
        if recipient is None:
            raise InvalidInput("give the recipient the channel delivers to (an address, a number)", field="recipient",
                               code="missing")
    if recipient is not None and (len(recipient) > MAX_RECIPIENT or "\x00" in recipient):
        raise InvalidInput(f"the recipient is at most {MAX_RECIPIENT} characters", field="recipient",
                           code="too_long")
    settings = session.get(NotificationSettings, workspace_id)
    if settings is None:
        settings = NotificationSettings(workspace_id=workspace_id, updated_at=now)
        session.add(settings)
    settings.channel_id = found.id if found is not None else None
    settings.recipient = recipient if found is not None else None
    settings.updated_at = now
    session.flush()
    return settings
