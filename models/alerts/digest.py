"""The daily digest: the alerts a member chose not to receive at once, sent once a day through the engine.

A member named on an alert destination who takes a rule as ``digest`` gets none of its
messages as they happen (:func:`models.alerts.delivery.deliver` skips them); instead, the
first alerts pass of each day in the workspace's zone sends them, through each destination
that names them, one message listing every such alert fired the day before. Its keys
follow the brief's pattern (``thing_id = alert-digest:<user id>:<local date>``,
``target_key`` the recipient), and a digest that already has a row under its key, in any
status, is not minted again: at most one a day per member and destination.
"""

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Membership, Workspace
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import Origin, ScheduledAction
from models.alerts.delivery import ACTION_TYPE, alert_url
from models.alerts.tables import Alert, AlertDelivery, AlertDestination, AlertPreference
from models.channels.tables import Channel
from models.core.moves import Actor
from models.timing.wall_time import resolve_wall_time

MAX_LISTED = 50


def digest_key(user_id: int, day) -> str:
    return f"alert-digest:{user_id}:{day.isoformat()}"


def _zone(workspace: Workspace):
    try:
        return ZoneInfo(workspace.timezone)
    except Exception:  # a zone stored behind the app's back must not stop the pass: UTC then
        return ZoneInfo("UTC")


def send_digests(session: Session, *, now: datetime, actor: Actor, base_url: str | None = None) -> list[ScheduledAction]:
    """Mint yesterday's digest (in each workspace's zone) for every member who takes some rule as digest."""
    minted = []
    choices = session.execute(select(AlertPreference.workspace_id, AlertPreference.user_id, AlertPreference.rule)
                              .where(AlertPreference.delivery == AlertDelivery.DIGEST.value)).all()
    wanted: dict[tuple[int, int], set[str]] = {}
    for workspace_id, user_id, rule in choices:
        wanted.setdefault((workspace_id, user_id), set()).add(rule)
    for (workspace_id, user_id), rules in sorted(wanted.items()):
        if session.scalar(select(Membership.id).where(Membership.workspace_id == workspace_id,
                                                      Membership.user_id == user_id)) is None:
            continue  # they left the workspace: its alerts are no longer theirs
        workspace = session.get(Workspace, workspace_id)
        zone = _zone(workspace)
        yesterday = now.astimezone(zone).date() - timedelta(days=1)
        start = resolve_wall_time(yesterday, time(0), zone.key).instant
        end = resolve_wall_time(yesterday + timedelta(days=1), time(0), zone.key).instant
        fired = list(session.scalars(select(Alert).where(
            Alert.rule.in_(sorted(rules)), Alert.fired_at >= start, Alert.fired_at < end,
            (Alert.workspace_id == workspace_id) | Alert.workspace_id.is_(None)).order_by(Alert.id)))
        if not fired:
            continue
        key = digest_key(user_id, yesterday)
        for destination, channel in session.execute(
                select(AlertDestination, Channel).join(Channel, Channel.id == AlertDestination.channel_id)
                .where(AlertDestination.workspace_id == workspace_id, AlertDestination.user_id == user_id)):
            if session.scalar(select(ScheduledAction.id).where(
                    ScheduledAction.workspace_id == workspace_id, ScheduledAction.action_type == ACTION_TYPE,
                    ScheduledAction.thing_id == key, ScheduledAction.target_key == destination.recipient)):
                continue  # this day's digest was minted already, whatever became of it
            title = f"[Tickwork] Daily alert digest for {yesterday:%d %b %Y}: {len(fired)} alert{'s' * (len(fired) > 1)}"
            lines = [f"#{alert.id} {alert.rule} ({alert.subject}): {(alert.figures or {}).get('title', '')}, "
                     f"{alert.state}" + (f" {alert_url(alert, base_url)}" if base_url else "")
                     for alert in fired[:MAX_LISTED]]
            text = "\n".join(lines)
            new = NewAction(action_type=ACTION_TYPE, channel=channel, target_key=destination.recipient, publish_at=now,
                            thing_id=key, payload={
                                "subject": title, "text": text, "body": text, "status": f"{title}\n{text}"[:480],
                                "to": destination.recipient,
                                "digest": {"day": yesterday.isoformat(), "alerts": [
                                    {"id": a.id, "rule": a.rule, "subject": a.subject, "state": a.state}
                                    for a in fired[:MAX_LISTED]]}})
            try:
                minted.append(insert_action(session, workspace_id, new, now=now, actor=actor, origin=Origin.SYSTEM,
                                            reason="daily alert digest"))
            except (DuplicateActiveAction, PublishGuardViolation):
                continue  # a concurrent pass minted it a moment ago
    return minted
