"""Helpers shared by the alert tests: passes inline, the clock's other jobs, what was sent."""

import json

from sqlalchemy import select

from models.actions.tables import ScheduledAction
from models.alerts.tables import Alert
from models.clock.runs import finish_run, start_run
from models.core.database import read_session
from models.core.runtime import runtime
from models.notifications.tables import Notification

from jobs.periodic import CLOCK_JOBS

# Every clock job but the tick and the alerts pass itself, from the jobs' one list, so a new job is counted too.
OTHER_JOBS = tuple(job.name for job in CLOCK_JOBS if job.name not in ("tick", "alerts"))


def alerts_pass(app, **kwargs) -> dict:
    from jobs.periodic import alerts_pass as one_pass

    with app.app_context():
        return one_pass(**kwargs)


def ran(app, *kinds: str) -> None:
    """Record a finished run of each clock job named, now, as the job itself records it."""
    with app.app_context():
        now = runtime().now()
        for kind in kinds:
            finish_run(start_run(kind, now=now), now=now, summary={})


def tick(app) -> dict:
    from jobs.clock import tick_once

    with app.app_context():
        return tick_once()


def alerts(app, **where) -> list[Alert]:
    with app.app_context(), read_session() as session:
        query = select(Alert).order_by(Alert.id)
        for name, value in where.items():
            query = query.where(getattr(Alert, name) == value)
        return list(session.scalars(query))


def notification_keys(app, workspace_id: int) -> list[str]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(Notification.dedupe_key).where(Notification.workspace_id == workspace_id,
                                                                          Notification.kind == "alert")
                                    .order_by(Notification.id)))


def alert_actions(app) -> list[ScheduledAction]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.action_type == "alert")
                                    .order_by(ScheduledAction.id)))


def subjects(summary: dict, key: str, rule: str) -> list[str]:
    return [item["subject"] for item in summary[key] if item["rule"] == rule]


def received_json(server) -> list[dict]:
    return [json.loads(request.get_data()) for request, _ in server.log]
