"""Helpers shared by the recurring rules' tests: make rules through the API, read their rows back.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

from sqlalchemy import select

from models.actions.tables import ScheduledAction
from models.core.database import read_session
from models.recurring.tables import RecurringSchedule


def make_rule(client, world, role="marketer", expect=201, **fields) -> dict:
    """A rule through the API (daily at 09:00 from 2026-06-01 unless told otherwise); returns its JSON."""
    body = {"action_type": "send_email", "channel": "main", "target_key": "list@example.test",
            "payload": {"subject": "Daily digest {{ occurrence.local_date }}"}, "rrule": "FREQ=DAILY",
            "starts_local": "2026-06-01T09:00"}
    body.update(fields)
    answer = client.post("/api/v1/recurring", headers=world.auth(role), json=body)
    assert answer.status_code == expect, answer.json
    return answer.json


def call(client, world, rule_id, verb, role="marketer", expect=200, **body):
    answer = client.post(f"/api/v1/recurring/{rule_id}/{verb}", headers=world.auth(role), json=body or None)
    assert answer.status_code == expect, answer.json
    return answer.json


def patch(client, world, rule_id, role="marketer", expect=200, **body):
    answer = client.patch(f"/api/v1/recurring/{rule_id}", headers=world.auth(role), json=body)
    assert answer.status_code == expect, answer.json
    return answer.json


def rule_rows(app, rule_id, *, statuses=None) -> list[ScheduledAction]:
    """The rows minted from (or for) rule ``rule_id``, in (publish_at, id) order."""
    with app.app_context(), read_session() as session:
        query = select(ScheduledAction).where(ScheduledAction.thing_id.like(f"rule:{rule_id}:%"))
        if statuses:
            query = query.where(ScheduledAction.status.in_(statuses))
        return list(session.scalars(query.order_by(ScheduledAction.publish_at, ScheduledAction.id)))


def queued(app, rule_id) -> list[ScheduledAction]:
    return rule_rows(app, rule_id, statuses=["queued"])


def stored_rule(app, rule_id) -> RecurringSchedule:
    with app.app_context(), read_session() as session:
        return session.get(RecurringSchedule, rule_id)


def expand(app) -> dict:
    from jobs.clock import expand_once

    with app.app_context():
        return expand_once()
