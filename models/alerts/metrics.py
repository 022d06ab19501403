"""The numbers the alert rules look at, for ``/metrics``: what ``docs/ops/prometheus-rules.yml`` alerts on.

Each reading is bounded (recent events through the ``at`` index, active rows through the
partial indexes, holds, heartbeats), so a scrape costs the same however long the history is.
Channels are labelled ``<workspace>/<channel>``.
"""

import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.actions.tables import ACTIVE_STATUSES, ActionEvent, ActionHold, ScheduledAction, Status
from models.alerts.rules import QUEUES, UNKNOWN_CODES, _p95, _queue_of
from models.alerts.tables import OPEN_STATES, Alert
from models.channels.tables import Channel
from models.clock.heartbeats import HEARTBEAT_INTERVAL
from models.clock.tables import ConsumerHeartbeat
from models.works.tables import ScheduleStatus, WorkSchedule

RECENT = timedelta(minutes=10)
UNKNOWN_WINDOW = timedelta(hours=24)
EVENTS_READ_AT_MOST = 20_000


@dataclass
class Family:
    """One metric: its name, help, label names and a value per label tuple."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    values: dict[tuple, float] = field(default_factory=dict)


def _channel_labels(session: Session) -> dict[int, str]:
    return {channel_id: f"{workspace}/{name}" for channel_id, name, workspace in session.execute(
        select(Channel.id, Channel.name, Workspace.name).join(Workspace, Workspace.id == Channel.workspace_id))}


def alert_metrics(session: Session, now: datetime, *, job_periods: dict[str, timedelta],
                  database_path: str | None = None) -> list[Family]:
    channels = _channel_labels(session)
    workspaces = dict(session.execute(select(Workspace.id, Workspace.name)).all())
    families = []

    periods = Family("tickwork_clock_job_period_seconds", "How often each clock job is meant to start", ("kind",))
    periods.values = {(kind,): period.total_seconds() for kind, period in job_periods.items()}
    families.append(periods)

    alive = Family("tickwork_queue_consumers_alive", "Consumers of each queue with a recent heartbeat", ("queue",))
    alive.values = {(queue,): 0 for queue in QUEUES}
    for name, in session.execute(select(ConsumerHeartbeat.name).where(
            ConsumerHeartbeat.beat_at >= now - 3 * HEARTBEAT_INTERVAL)):
        alive.values[(_queue_of(name),)] += 1
    families.append(alive)

    active = Family("tickwork_actions_active", "Queued and submitted actions, by status and channel",
                    ("status", "channel"))
    for status, channel_id, count in session.execute(
            select(ScheduledAction.status, ScheduledAction.channel_id, func.count())
            .where(ScheduledAction.status.in_(ACTIVE_STATUSES))
            .group_by(ScheduledAction.status, ScheduledAction.channel_id)):
        active.values[(status, channels.get(channel_id, str(channel_id)))] = count
    families.append(active)

    events = session.execute(
        select(ActionEvent.at, ActionEvent.to_status, ScheduledAction.channel_id, ScheduledAction.failure_code,
               ScheduledAction.publish_at, ScheduledAction.next_attempt_at)
        .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
        .where(ActionEvent.at >= now - RECENT,
               ActionEvent.to_status.in_((Status.PUBLISHED.value, Status.FAILED.value, Status.SUBMITTED.value)))
        .order_by(ActionEvent.at.desc()).limit(EVENTS_READ_AT_MOST)
    ).all()
    sends = Family("tickwork_channel_sends_10m", "Sends that ended in the last 10 minutes, by channel and outcome",
                   ("channel", "outcome"))
    outcomes = Counter()
    delays = []
    for at, to_status, channel_id, code, publish_at, retry_at in events:
        if to_status == Status.SUBMITTED.value:
            delays.append(max((at - (retry_at or publish_at)).total_seconds(), 0.0))
            continue
        outcome = "published" if to_status == Status.PUBLISHED.value else (code or "failed")
        outcomes[(channels.get(channel_id, str(channel_id)), outcome)] += 1
    sends.values = dict(outcomes)
    families.append(sends)
    p95 = Family("tickwork_claim_lateness_p95_10m_seconds", "The p95 of claim lateness over the last 10 minutes")
    p95.values = {(): _p95(delays) if delays else 0.0}
    families.append(p95)

    held = Family("tickwork_channel_held_rows", "Rows a channel's rate, concurrency or pause holds back", ("channel",))
    held_for = Family("tickwork_channel_held_seconds", "How long ago the oldest row a channel holds back was due",
                      ("channel",))
    for channel_id, count, oldest in session.execute(
            select(ActionHold.channel_id, func.count(), func.min(ScheduledAction.publish_at))
            .join(ScheduledAction, ScheduledAction.id == ActionHold.action_id).group_by(ActionHold.channel_id)):
        label = channels.get(channel_id, str(channel_id))
        held.values[(label,)] = count
        held_for.values[(label,)] = max((now - oldest).total_seconds(), 0.0) if oldest else 0.0
    families += [held, held_for]

    unknown = Family("tickwork_outcome_unknown_rows", "Rows failed as outcome unknown or worker lost in the last "
                     "24 hours, still failed: a person must decide", ("workspace",))
    unknown.values = {(name,): 0 for name in workspaces.values()}
    for workspace_id, count in session.execute(
            select(ScheduledAction.workspace_id, func.count(func.distinct(ScheduledAction.id)))
            .join(ActionEvent, ActionEvent.action_id == ScheduledAction.id)
            .where(ActionEvent.to_status == Status.FAILED.value, ActionEvent.at >= now - UNKNOWN_WINDOW,
                   ScheduledAction.status == Status.FAILED.value, ScheduledAction.failure_code.in_(UNKNOWN_CODES))
            .group_by(ScheduledAction.workspace_id)):
        unknown.values[(workspaces.get(workspace_id, str(workspace_id)),)] = count
    families.append(unknown)

    paused = Family("tickwork_works_auto_paused", "Work schedules paused by their failures", ("workspace",))
    paused.values = {(name,): 0 for name in workspaces.values()}
    for workspace_id, count in session.execute(
            select(WorkSchedule.workspace_id, func.count()).where(
                WorkSchedule.status == ScheduleStatus.PAUSED.value,
                WorkSchedule.failure_count >= WorkSchedule.max_failure_before_pause)
            .group_by(WorkSchedule.workspace_id)):
        paused.values[(workspaces.get(workspace_id, str(workspace_id)),)] = count
    families.append(paused)

    firing = Family("tickwork_alerts_open", "Open alerts, by rule and state", ("rule", "state"))
    for rule, state, count in session.execute(select(Alert.rule, Alert.state, func.count())
                                              .where(Alert.state.in_(OPEN_STATES)).group_by(Alert.rule, Alert.state)):
        firing.values[(rule, state)] = count
    families.append(firing)

    if database_path:
        usage = shutil.disk_usage(Path(database_path).resolve().parent)
        disk = Family("tickwork_database_disk_used_ratio", "How full the disk holding the SQLite database is (0 to 1)")
        disk.values = {(): (usage.total - usage.free) / usage.total if usage.total else 0.0}
        families.append(disk)
    return families


def by_label(families: list[Family]) -> dict[str, dict]:
    """The families by name (for tests and the health page)."""
    grouped = defaultdict(dict)
    for family in families:
        grouped[family.name] = family.values
    return dict(grouped)
