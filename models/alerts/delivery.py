"""Where an alert's messages go: the bell, the workspace's alert destinations through the engine, and the
operator's destinations directly.

Each message is sent by the transaction whose move won (:mod:`models.alerts.lifecycle`), so
at most once per state change:

- **In-app**: a notification (the bell) with the message's key as its dedupe key, in the
  alert's workspace, or in every workspace for an instance alert (the clock is everyone's).
- **Through the engine**: one scheduled action per destination, due now, origin ``system``,
  ``thing_id`` ``alert:<id>:fired:<n>`` or ``alert:<id>:resolved``, ``target_key`` the
  destination's recipient; the dedupe index and the publish guard refuse a second one.
  The payload carries every form a provider may want (``subject``, ``text``, ``body``,
  ``status``) and the alert itself as JSON (``alert``), so any channel kind (smtp, Postmark,
  webhook, Twilio, Mastodon, and a kind added later) sends it without code of its own here.
  A destination that names a member honours their choice: a rule they take as a digest is
  left to the daily digest (:mod:`models.alerts.digest`).
- **Directly** (:func:`send_direct`): the operator's destinations from settings (an SMTP relay,
  a webhook URL), for instance alerts; an alert about the engine itself is sent this way by
  every evaluator, the web processes' check too, since the queue may be what is stuck. The
  sender first wins a compare-and-set on the alert row (``direct_sent_n``/``direct_sent_at``),
  then sends through the channel providers, so through the egress policy.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Membership, Workspace
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import Origin, ScheduledAction
from models.alerts import lifecycle
from models.alerts.tables import Alert, AlertDelivery, AlertDestination, AlertPreference
from models.channels.providers import Delivery, SendContext, SendOutcome, send_alone
from models.channels.tables import Channel
from models.core.moves import Actor
from models.notifications.inbox import raise_notification

log = logging.getLogger("tickwork.alerts")

ACTION_TYPE = "alert"
FIRED, REMINDER, RESOLVED = "fired", "reminder", "resolved"
DIRECT_NOTE = "Sent directly, not through Tickwork's queue: the queue may be what is stuck."


@dataclass
class Message:
    """One message about one alert: its key, its words, and the alert as data."""

    key: str
    title: str
    text: str
    alert: dict

    def payload(self, *, to: str | None = None) -> dict:
        payload = {"subject": self.title, "text": self.text, "body": self.text,
                   "status": f"{self.title}\n{self.text}"[:480], "alert": self.alert}
        if to:
            payload["to"] = to
        return payload


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def alert_url(alert: Alert, base_url: str | None) -> str | None:
    return f"{base_url.rstrip('/')}/alerts/{alert.id}" if base_url else None


def message_for(alert: Alert, kind: str, *, title: str, base_url: str | None = None, direct: bool = False) -> Message:
    """The words of message ``kind`` (fired, reminder, resolved) about ``alert``."""
    if kind == RESOLVED:
        head, key = f"[Tickwork] Resolved: {title}", alert.resolved_key
    elif kind == REMINDER:
        head, key = f"[Tickwork] Still firing: {title}", alert.fired_key()
    else:
        head, key = f"[Tickwork] Alert: {title}", alert.fired_key()
    lines = [f"Rule {alert.rule}, subject {alert.subject}, fired at {_iso(alert.fired_at)}."]
    if kind == RESOLVED:
        lines.append(f"Resolved at {_iso(alert.resolved_at)}.")
    lines += [f"{name}: {value}" for name, value in sorted((alert.figures or {}).items()) if name != "top_reasons"]
    for reason in (alert.figures or {}).get("top_reasons", []):
        lines.append(f"reason: {reason['reason']} ({reason['count']})")
    url = alert_url(alert, base_url)
    if url:
        lines.append(url)
    if direct:
        lines.append(DIRECT_NOTE)
    data = {"id": alert.id, "rule": alert.rule, "subject": alert.subject, "state": alert.state,
            "scope": alert.scope, "figures": alert.figures, "fired_at": _iso(alert.fired_at),
            "resolved_at": _iso(alert.resolved_at), "message": kind, "n": alert.notified_n, "url": url}
    return Message(key=key, title=head[:200], text="\n".join(lines), alert=data)


@dataclass
class Sent:
    """What one move's messages became: notifications raised and actions scheduled."""

    notifications: int = 0
    actions: list[ScheduledAction] = field(default_factory=list)


def deliver(session: Session, alert: Alert, message: Message, *, now: datetime, actor: Actor) -> Sent:
    """Send ``message`` in-app and through every alert destination of the alert's workspace, in this transaction."""
    sent = Sent()
    workspaces = ([alert.workspace_id] if alert.workspace_id is not None
                  else list(session.scalars(select(Workspace.id).order_by(Workspace.id))))
    for workspace_id in workspaces:
        raised = raise_notification(session, workspace_id, kind="alert", title=message.title, body=message.text,
                                    dedupe_key=message.key, subject=f"alert:{alert.id}", now=now)
        sent.notifications += raised.created
    if alert.workspace_id is None:
        return sent  # the operator's destinations are sent to directly, by send_direct
    for destination, channel in destinations(session, alert.workspace_id):
        if destination.user_id is not None and takes_as_digest(session, alert.workspace_id, destination.user_id,
                                                                 alert.rule):
            continue
        new = NewAction(action_type=ACTION_TYPE, channel=channel, target_key=destination.recipient,
                        payload=message.payload(to=destination.recipient), publish_at=now, thing_id=message.key)
        try:
            sent.actions.append(insert_action(session, alert.workspace_id, new, now=now, actor=actor,
                                              origin=Origin.SYSTEM, reason=f"alert #{alert.id}"))
        except (DuplicateActiveAction, PublishGuardViolation):
            continue  # this message already went, or is going, to this recipient: at most once
    return sent


def destinations(session: Session, workspace_id: int) -> list[tuple[AlertDestination, Channel]]:
    """The workspace's alert destinations; one that names a person who has left the workspace is skipped."""
    members = select(Membership.id).where(Membership.workspace_id == workspace_id,
                                          Membership.user_id == AlertDestination.user_id)
    return [(destination, channel) for destination, channel in session.execute(
        select(AlertDestination, Channel).join(Channel, Channel.id == AlertDestination.channel_id)
        .where(AlertDestination.workspace_id == workspace_id,
               AlertDestination.user_id.is_(None) | members.exists())
        .order_by(AlertDestination.id))]


def takes_as_digest(session: Session, workspace_id: int, user_id: int, rule: str) -> bool:
    preference = session.get(AlertPreference, (workspace_id, user_id, rule))
    return preference is not None and preference.delivery == AlertDelivery.DIGEST.value


# -- the direct send -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectDestination:
    """One of the operator's destinations: a channel kind's settings, without a channel row."""

    kind: str  # "smtp" or "webhook" (any provider kind works)
    config: dict
    recipient: str
    secret: str | None = None


def send_direct(alert: Alert, message: Message, destinations_: list[DirectDestination], *, now: datetime,
                timeout: float, http) -> list[str]:
    """Send ``message`` to each destination through its provider (so through the egress policy); the errors."""
    errors = []
    for destination in destinations_:
        delivery = Delivery(action_id=None, workspace_id=alert.workspace_id or 0, channel_id=0,
                            channel_name="alerts", action_type=ACTION_TYPE, target_key=destination.recipient,
                            payload=message.payload(to=destination.recipient), publish_at=now, attempt=1,
                            config=dict(destination.config), secret=destination.secret)
        try:
            result = send_alone(destination.kind, delivery, SendContext(now=now, timeout=timeout, http=http))
        except Exception as exc:  # a provider bug must not stop the other destinations; it is logged and recorded
            log.exception("direct alert send to %s failed", destination.kind)
            errors.append(f"{destination.kind}: {type(exc).__name__}: {exc}")
            continue
        if result.outcome is not SendOutcome.SUCCESS:
            errors.append(f"{destination.kind}: {result.outcome.value}: {result.message}")
    return errors


def direct_claims(session: Session, alert: Alert, *, now: datetime) -> str | None:
    """Take the compare-and-set for the direct message the alert is owed now, if any: its kind, else None."""
    if alert.state == "resolved":
        return RESOLVED if lifecycle.take_direct_resolved(session, alert, now=now).ok else None
    if alert.direct_sent_n is not None and alert.direct_sent_n >= alert.notified_n:
        return None
    if alert.state == "acknowledged" and alert.direct_sent_n is not None:
        return None
    if not lifecycle.take_direct_send(session, alert, now=now).ok:
        return None
    return FIRED if alert.notified_n == 0 else REMINDER
