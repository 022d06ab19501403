"""Helpers for the drip tests: campaigns, contacts and enrollments written through the domain operations,
passes of the clock, and rows read back."""

from datetime import timedelta

from sqlalchemy import func, select

from models.accounts.tables import Workspace
from models.actions.tables import ScheduledAction
from models.channels.outbox import OutboxEntry
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.drips import operations as ops
from models.drips.sending import SendingContext
from models.drips.tables import Campaign, Contact, Enrollment, Send

BASE_URL = "https://tickwork.example"
MARKETER = Actor(label="user:marketer@test")
TWO_STEPS = [{"delay": "PT0S", "subject": "Welcome {{ contact.first_name }}", "body": "Hello {{ contact.name }}"},
             {"delay": "P2D", "subject": "Day two", "body": "Still here, {{ contact.first_name }}?"}]


def context(app, actor: Actor = MARKETER) -> SendingContext:
    rt = runtime()
    return SendingContext(secret_box=rt.secret_box, base_url=app.config.get("TICKWORK_BASE_URL"), policy=rt.policy,
                          actor=actor)


def campaign(app, workspace_id: int, *, steps=None, name="Welcome", channel="main", window=None, on_failure="exit",
             activate=True) -> int:
    with app.app_context(), write_session() as session:
        made = ops.create_campaign(session, workspace_id, name=name, channel=channel, steps=steps or TWO_STEPS,
                                   send_window=window, on_failure=on_failure, actor=MARKETER, now=runtime().now())
        if activate:
            ops.activate_campaign(session, workspace_id, made.id, base_url=BASE_URL, actor=MARKETER,
                                  now=runtime().now())
        return made.id


def contacts(app, workspace_id: int, count: int, *, prefix="person", zone=None, phone=False, **fields) -> list[int]:
    """``count`` contacts, in one transaction."""
    with app.app_context(), write_session() as session:
        return [ops.create_contact(session, workspace_id, email=f"{prefix}{n}@example.com",
                                   phone=f"+1555000{n:04d}" if phone else None, name=f"{prefix.title()} {n}",
                                   timezone=zone, actor=MARKETER, now=runtime().now(), **fields).id
                for n in range(count)]


def enroll(app, workspace_id: int, campaign_id: int, contact_ids: list[int], *, mint_now: bool = True) -> list:
    """Enroll each contact (one transaction); returns the attempts minted at once."""
    with app.app_context():
        rt = runtime()
        new_rows = []
        with write_session() as session:
            for contact_id in contact_ids:
                if mint_now:
                    new_rows += ops.enroll(session, workspace_id, campaign_id, contact_id, actor=MARKETER, now=rt.now(),
                                           ctx=context(app)).new_rows
                else:  # left for drip-advance to mint
                    made = session.get(Campaign, campaign_id)
                    version = ops.current_version(session, campaign_id)
                    zone = session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
                    ops.insert_enrollment(session, made, version, ops.version_steps(session, version.id),
                                          session.get(Contact, contact_id), zone, actor=MARKETER, now=rt.now(),
                                          reason="enrolled")
        return new_rows


def advance(app) -> dict:
    from jobs.clock import drip_advance_once

    with app.app_context():
        return drip_advance_once()


def tick(app) -> dict:
    from jobs.clock import tick_once

    with app.app_context():
        return tick_once()


def enrollments(app, campaign_id: int) -> list[Enrollment]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(Enrollment).where(Enrollment.campaign_id == campaign_id)
                                    .order_by(Enrollment.id)))


def sends(app, enrollment_id: int | None = None) -> list[Send]:
    with app.app_context(), read_session() as session:
        query = select(Send).order_by(Send.enrollment_id, Send.step_index)
        if enrollment_id is not None:
            query = query.where(Send.enrollment_id == enrollment_id)
        return list(session.scalars(query))


def attempts(app, thing_id: str | None = None) -> list[ScheduledAction]:
    with app.app_context(), read_session() as session:
        query = select(ScheduledAction).where(ScheduledAction.origin == "drip").order_by(ScheduledAction.id)
        if thing_id is not None:
            query = query.where(ScheduledAction.thing_id == thing_id)
        return list(session.scalars(query))


def outbox_count(app) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(OutboxEntry))


def later(clock, **delta):
    clock.advance(**delta)
    return clock.now()


ONE_MINUTE = timedelta(minutes=1)
