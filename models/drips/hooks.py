"""What drips tell the floors below them, registered at start-up (see :mod:`models.core.hooks`).

| hook            | drips register                                                                  |
|-----------------|---------------------------------------------------------------------------------|
| pre-send check  | origin ``drip``: an attempt whose contact unsubscribed or bounced, whose enrollment ended, or whose campaign was archived is cancelled ``exited``; one whose campaign is paused, ``paused`` |
| change rule     | origin ``drip``: a reschedule answers 409 ``follows_enrollment``; a retry too, unless the enrollment still waits on this attempt |
| gauges          | enrollments by state (waiting for their time, sending, completed, exited)       |
| zone change     | enrollments of contacts who use the workspace's zone are retimed                 |
| calendar source | each campaign's planned (not yet minted) sends, one entry per campaign and day   |
"""

from datetime import date, datetime, time, timedelta

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from models.actions.tables import CancelKind, Origin, ScheduledAction
from models.core.errors import Conflict
from models.core.hooks import CalendarEntry, Gauge, Hooks, Stop
from models.core.moves import Actor
from models.core.policy import Policy
from models.drips.operations import retime_waiting
from models.drips.tables import (
    Campaign,
    CampaignStatus,
    Contact,
    ContactStatus,
    Enrollment,
    EnrollmentStatus,
    Send,
    SendStatus,
    enrollment_of,
)
from models.timing.wall_time import resolve_wall_time, to_local


def register(hooks: Hooks) -> None:
    """Put the drips' parts on every hook they answer."""
    hooks.add_pre_send_check(Origin.DRIP.value, stop_when_the_enrollment_ended)
    hooks.add_change_rule(Origin.DRIP.value, follows_enrollment)
    hooks.add_gauge(Gauge("tickwork_drip_enrollments", "Drip enrollments by state, all workspaces",
                          enrollments_by_state, label="state"))
    hooks.add_zone_change("drips", retime_workspace_zone)
    hooks.add_calendar_source(planned_sends)


def _shared(query, session: Session):
    """A share lock on what ``query`` reads (PostgreSQL; SQLite's writer lock is already held)."""
    return query.with_for_update(read=True) if session.get_bind().dialect.name == "postgresql" else query


def stop_when_the_enrollment_ended(session: Session, rows: list[ScheduledAction], now: datetime) -> dict[int, Stop]:
    """The exits, re-checked in the claim's transaction, just before each send.

    Read with share locks in a fixed order (campaigns, contacts, enrollments), the order in
    which archives, unsubscribes and removals take theirs: each of those lands wholly before
    this claim (and the attempt is stopped) or waits for it (and finds it in flight).
    """
    wanted = {row.id: enrollment_of(row.thing_id) for row in rows}
    enrollment_ids = sorted({key[0] for key in wanted.values() if key})
    if not enrollment_ids:
        return {}
    links = {ident: (campaign_id, contact_id) for ident, campaign_id, contact_id in session.execute(
        select(Enrollment.id, Enrollment.campaign_id, Enrollment.contact_id).where(Enrollment.id.in_(enrollment_ids)))}
    campaigns = dict(session.execute(_shared(select(Campaign.id, Campaign.status).where(
        Campaign.id.in_(sorted({c for c, _ in links.values()}))).order_by(Campaign.id), session)).all())
    contacts = dict(session.execute(_shared(select(Contact.id, Contact.status).where(
        Contact.id.in_(sorted({c for _, c in links.values()}))).order_by(Contact.id), session)).all())
    enrollments = {ident: (status, reason) for ident, status, reason in session.execute(_shared(
        select(Enrollment.id, Enrollment.status, Enrollment.exit_reason).where(Enrollment.id.in_(enrollment_ids))
        .order_by(Enrollment.id), session))}
    stopped = {}
    for row in rows:
        key = wanted[row.id]
        if key is None or key[0] not in enrollments:
            stopped[row.id] = Stop("not sent: it belongs to no drip enrollment", cancel_kind=CancelKind.EXITED.value)
            continue
        campaign_id, contact_id = links[key[0]]
        status, exit_reason = enrollments[key[0]]
        contact_status = contacts.get(contact_id)
        if contact_status == ContactStatus.UNSUBSCRIBED.value:
            stopped[row.id] = Stop("not sent: the contact unsubscribed", cancel_kind=CancelKind.EXITED.value)
        elif contact_status == ContactStatus.BOUNCED.value:
            stopped[row.id] = Stop("not sent: the contact's email hard-bounced", cancel_kind=CancelKind.EXITED.value)
        elif status != EnrollmentStatus.ACTIVE.value:
            stopped[row.id] = Stop(f"not sent: the enrollment {status}" + (f" ({exit_reason})" if exit_reason else ""),
                                   cancel_kind=CancelKind.EXITED.value)
        elif campaigns.get(campaign_id) == CampaignStatus.ARCHIVED.value:
            stopped[row.id] = Stop("not sent: the campaign was archived", cancel_kind=CancelKind.EXITED.value)
        elif campaigns.get(campaign_id) == CampaignStatus.PAUSED.value:
            stopped[row.id] = Stop("held: the campaign is paused", cancel_kind=CancelKind.PAUSED.value)
    return stopped


def follows_enrollment(session: Session, row: ScheduledAction, change: str) -> Exception | None:
    """A drip attempt follows its enrollment: never moved by hand; retried only while the enrollment waits on it."""
    key = enrollment_of(row.thing_id)
    enrollment_id = key[0] if key else None
    if change != "retry":
        return Conflict(f"action #{row.id} is a step of drip enrollment #{enrollment_id}: it follows its "
                        "enrollment's schedule and cannot be moved by hand", code="follows_enrollment",
                        enrollment_id=enrollment_id)
    # The send first, under its lock: the settling pass takes the same lock before it decides.
    query = select(Send).where(Send.dedupe_key == row.thing_id)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    send = session.scalar(query.execution_options(populate_existing=True))
    enrollment = session.get(Enrollment, enrollment_id) if enrollment_id else None
    waits = (send is not None and enrollment is not None and send.status == SendStatus.PENDING.value
             and send.attempt_id == row.id and enrollment.status == EnrollmentStatus.ACTIVE.value
             and enrollment.waiting_send_id == send.id)
    if waits:
        return None
    return Conflict(f"action #{row.id} is a step of drip enrollment #{enrollment_id}, which has moved on from it "
                    "(the step was settled when this attempt ended); it cannot be retried", code="follows_enrollment",
                    enrollment_id=enrollment_id)


def enrollments_by_state(session: Session, now: datetime) -> dict[str, float]:
    """Enrollments waiting for their time, sending (waiting on a send), completed and exited."""
    counts = {"waiting": 0.0, "sending": 0.0, "completed": 0.0, "exited": 0.0}
    for status, unminted, n in session.execute(
            select(Enrollment.status, Enrollment.waiting_send_id.is_(None), func.count())
            .group_by(Enrollment.status, Enrollment.waiting_send_id.is_(None))):
        if status == EnrollmentStatus.ACTIVE.value:
            counts["waiting" if unminted else "sending"] += n
        else:
            counts[status] += n
    return counts


def retime_workspace_zone(session: Session, workspace_id: int, now: datetime, actor: Actor,
                          policy: Policy) -> dict[str, int]:
    """After a zone change, the waiting steps of contacts who use the workspace's zone move to it."""
    return {"enrollments_retimed": retime_waiting(session, workspace_zone_of=workspace_id, now=now)}


def planned_sends(session: Session, workspace_id: int, first: date, last: date, zone: str) -> list[CalendarEntry]:
    """Each campaign's steps planned on each day (not yet minted): one entry per campaign and day."""
    days = (last - first).days + 1
    bounds = [resolve_wall_time(first + timedelta(days=n), time(0, 0), zone).instant for n in range(days + 1)]
    day = case(*[(Enrollment.next_send_at < bound, n) for n, bound in enumerate(bounds[1:])])
    rows = session.execute(
        select(Enrollment.campaign_id, Campaign.name, day.label("day"), func.count(), func.min(Enrollment.next_send_at))
        .join(Campaign, Campaign.id == Enrollment.campaign_id)
        .where(Enrollment.workspace_id == workspace_id, Enrollment.status == EnrollmentStatus.ACTIVE.value,
               Enrollment.waiting_send_id.is_(None), Enrollment.next_send_at >= bounds[0],
               Enrollment.next_send_at < bounds[-1])
        .group_by(Enrollment.campaign_id, Campaign.name, day)).all()
    entries = []
    for campaign_id, name, index, count, earliest in rows:
        if index is None:
            continue
        local = to_local(earliest, zone)
        entries.append(CalendarEntry(day=first + timedelta(days=index), at=local.time().replace(second=0, microsecond=0),
                                     title=f"{name}: {count} planned", status="planned", kind="campaign",
                                     ref=campaign_id))
    return entries
