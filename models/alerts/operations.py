"""What people do with alerts: acknowledge, silence, choose destinations, set a workspace's rules, choose theirs.

Both shells call these; each raises :mod:`models.core.errors` for bad input and changes
nothing then. Ops acknowledge and silence; admins choose destinations and rule settings;
every member chooses which alerts they receive at once and which in the daily digest.
"""

from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from models.accounts.tables import Membership, User
from models.alerts import lifecycle
from models.alerts.rules import RULES, WORKSPACE_RULES, RuleSettings, apply_settings
from models.alerts.tables import (
    INSTANCE, Alert, AlertDelivery, AlertDestination, AlertPreference, AlertRuleSetting, workspace_scope,
)
from models.channels.tables import Channel
from models.core.errors import Conflict, InvalidInput, NotFound

MAX_RECIPIENT = 255


def visible(workspace_id: int):
    """Alerts a workspace's members see: its own and the instance's."""
    return or_(Alert.scope == workspace_scope(workspace_id), Alert.scope == INSTANCE)


def get_alert(session: Session, workspace_id: int, alert_id: int) -> Alert:
    alert = session.scalar(select(Alert).where(Alert.id == alert_id, visible(workspace_id)))
    if alert is None:
        raise NotFound(f"no alert #{alert_id} in this workspace")
    return alert


def list_alerts(session: Session, workspace_id: int, *, open_only: bool = False, limit: int = 200) -> list[Alert]:
    """The workspace's alerts and the instance's, open ones first, newest first."""
    query = select(Alert).where(visible(workspace_id))
    if open_only:
        query = query.where(Alert.state != "resolved")
    return list(session.scalars(query.order_by((Alert.state == "resolved").asc(), Alert.id.desc()).limit(limit)))


def open_count(session: Session, workspace_id: int) -> int:
    """Firing alerts the workspace's members see (what the header counts)."""
    return session.scalar(select(func.count()).select_from(Alert).where(visible(workspace_id),
                                                                        Alert.state == "firing"))


def acknowledge_alert(session: Session, workspace_id: int, alert_id: int, *, user_id: int, now: datetime) -> Alert:
    """Acknowledge a firing alert: nothing more is sent about it until it resolves."""
    get_alert(session, workspace_id, alert_id)
    moved = lifecycle.acknowledge(session, alert_id, user_id=user_id, now=now)
    if not moved.ok:
        raise Conflict(f"alert #{alert_id} is {moved.status}: only a firing alert can be acknowledged",
                       code="wrong_state")
    return moved.row


def silence_alert(session: Session, workspace_id: int, alert_id: int, *, hours, user_id: int, now: datetime) -> Alert:
    """No reminder about an open alert for ``hours`` (1 to 168)."""
    get_alert(session, workspace_id, alert_id)
    try:
        hours = float(str(hours).strip())
    except ValueError:
        hours = -1
    if not 1 <= hours <= 168:
        raise InvalidInput("silence for 1 to 168 hours", field="hours")
    moved = lifecycle.silence(session, alert_id, until=now + timedelta(hours=hours), user_id=user_id, now=now)
    if not moved.ok:
        raise Conflict(f"alert #{alert_id} is {moved.status}: it can no longer be silenced", code="wrong_state")
    return moved.row


def add_destination(session: Session, workspace_id: int, *, channel: str, recipient: str, now: datetime,
                    member: str | None = None) -> AlertDestination:
    """Send the workspace's alerts through ``channel`` to ``recipient`` too; ``member`` (an email) when the
    recipient is that member, whose choice of alerts then applies."""
    user_id = None
    member = (member or "").strip()
    if member:
        user_id = session.scalar(select(User.id).join(Membership, Membership.user_id == User.id).where(
            User.email == member[:255], Membership.workspace_id == workspace_id))
        if user_id is None:
            raise InvalidInput(f"{member[:80]} is not a member of this workspace", field="member")
    channel = (channel or "").strip()
    recipient = (recipient or "").strip()
    found = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == channel[:63]))
    if found is None:
        raise InvalidInput(f"no channel named {channel[:63]!r} in this workspace", field="channel",
                           code="unknown_channel")
    if not recipient or len(recipient) > MAX_RECIPIENT or "\x00" in recipient:
        raise InvalidInput(f"give the recipient (an address, a number), at most {MAX_RECIPIENT} characters",
                           field="recipient")
    if session.scalar(select(AlertDestination.id).where(AlertDestination.workspace_id == workspace_id,
                                                       AlertDestination.channel_id == found.id,
                                                       AlertDestination.recipient == recipient)) is not None:
        raise InvalidInput(f"alerts already go to {recipient} through {channel}", field="recipient", code="duplicate")
    destination = AlertDestination(workspace_id=workspace_id, channel_id=found.id, recipient=recipient,
                                   user_id=user_id, created_at=now)
    session.add(destination)
    session.flush()
    return destination


def remove_destination(session: Session, workspace_id: int, destination_id: int) -> None:
    gone = session.execute(delete(AlertDestination).where(AlertDestination.id == destination_id,
                                                          AlertDestination.workspace_id == workspace_id)).rowcount
    if not gone:
        raise NotFound(f"no alert destination #{destination_id} in this workspace")


def save_rule_setting(session: Session, workspace_id: int, rule: str, *, values: dict, now: datetime) -> RuleSettings:
    """A workspace's own threshold, window (seconds), cooldown (seconds) or on/off for one of its rules."""
    if rule not in WORKSPACE_RULES:
        raise InvalidInput(f"no workspace alert rule {rule[:40]!r}", field="rule")
    cleaned = {}
    for key in ("threshold", "window", "cooldown"):
        raw = values.get(key)
        if raw is None or str(raw).strip() == "":
            cleaned[key] = None
            continue
        try:
            cleaned[key] = float(str(raw).strip())
        except ValueError:
            raise InvalidInput(f"{key} is a number", field=key) from None
    if "enabled" in values:
        cleaned["enabled"] = values["enabled"] in (True, "1", "on", "true", "yes")
    try:
        settings = apply_settings(RULES[rule].defaults, cleaned, rule)
    except ValueError as exc:
        field = next((key for key in ("threshold", "window", "cooldown", "enabled") if f".{key}" in str(exc)), "rule")
        raise InvalidInput(str(exc), field=field) from None
    row = session.get(AlertRuleSetting, (workspace_id, rule))
    if row is None:
        row = AlertRuleSetting(workspace_id=workspace_id, rule=rule, updated_at=now)
        session.add(row)
    row.threshold = cleaned.get("threshold")
    row.window_seconds = None if cleaned.get("window") is None else int(cleaned["window"])
    row.cooldown_seconds = None if cleaned.get("cooldown") is None else int(cleaned["cooldown"])
    row.enabled = cleaned.get("enabled", True)
    row.updated_at = now
    session.flush()
    return settings


def set_preference(session: Session, workspace_id: int, user_id: int, rule: str, delivery: str, *,
                   now: datetime) -> None:
    """A member takes ``rule``'s alerts at once (``immediate``) or only in the daily digest (``digest``)."""
    if rule not in RULES:
        raise InvalidInput(f"no alert rule {str(rule)[:40]!r}", field="rule")
    if delivery not in {member.value for member in AlertDelivery}:
        raise InvalidInput("delivery is immediate or digest", field="delivery")
    row = session.get(AlertPreference, (workspace_id, user_id, rule))
    if row is None:
        session.add(AlertPreference(workspace_id=workspace_id, user_id=user_id, rule=rule, delivery=delivery,
                                    updated_at=now))
    else:
        row.delivery = delivery
        row.updated_at = now
    session.flush()
