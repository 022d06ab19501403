"""Reading drips: one campaign, contact or enrollment; pages of them; a campaign's funnel; an enrollment's timeline."""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction
from models.core.errors import NotFound
from models.drips.tables import (
    MAX_ID,
    Campaign,
    CampaignEvent,
    CampaignVersion,
    Contact,
    ContactEvent,
    Enrollment,
    EnrollmentEvent,
    EnrollmentStatus,
    Send,
    SendStatus,
    Step,
)


def _ident(value: int) -> bool:
    return isinstance(value, int) and 0 < value <= MAX_ID


def _locked(query, lock: bool, share: bool):
    """``lock`` takes the row's lock, ``share`` a share lock (PostgreSQL; SQLite's writer lock is already
    held by a write transaction); either reads the row afresh."""
    if lock or share:
        return query.with_for_update(read=share and not lock).execution_options(populate_existing=True)
    return query


def get_campaign(session: Session, workspace_id: int, campaign_id: int, *, lock: bool = False,
                 share: bool = False) -> Campaign:
    """The campaign, or :class:`NotFound` (see :func:`_locked` for ``lock`` and ``share``)."""
    if not _ident(campaign_id):
        raise NotFound(f"no campaign #{campaign_id} in this workspace")
    query = _locked(select(Campaign).where(Campaign.id == campaign_id, Campaign.workspace_id == workspace_id),
                    lock, share)
    campaign = session.scalar(query)
    if campaign is None:
        raise NotFound(f"no campaign #{campaign_id} in this workspace")
    return campaign


def list_campaigns(session: Session, workspace_id: int) -> list[Campaign]:
    """The workspace's campaigns, archived last, then by name."""
    return list(session.scalars(select(Campaign).where(Campaign.workspace_id == workspace_id)
                                .order_by(Campaign.status == "archived", Campaign.name, Campaign.id)))


def current_version(session: Session, campaign_id: int) -> CampaignVersion:
    """The version new enrollments start on: the highest."""
    return session.scalar(select(CampaignVersion).where(CampaignVersion.campaign_id == campaign_id)
                          .order_by(CampaignVersion.number.desc()).limit(1))


def version_steps(session: Session, version_id: int) -> list[Step]:
    return list(session.scalars(select(Step).where(Step.version_id == version_id).order_by(Step.position)))


def get_contact(session: Session, workspace_id: int, contact_id: int, *, lock: bool = False,
                share: bool = False) -> Contact:
    if not _ident(contact_id):
        raise NotFound(f"no contact #{contact_id} in this workspace")
    query = _locked(select(Contact).where(Contact.id == contact_id, Contact.workspace_id == workspace_id), lock, share)
    contact = session.scalar(query)
    if contact is None:
        raise NotFound(f"no contact #{contact_id} in this workspace")
    return contact


def list_contacts(session: Session, workspace_id: int, *, search: str | None = None, status: str | None = None,
                  after: int | None = None, limit: int = 50) -> list[Contact]:
    """A page of contacts by id; ``search`` matches email, phone or name."""
    query = select(Contact).where(Contact.workspace_id == workspace_id)
    if search:
        pattern = "%" + search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(or_(Contact.email.like(pattern, escape="\\"), Contact.phone.like(pattern, escape="\\"),
                                func.lower(Contact.name).like(pattern, escape="\\")))
    if status:
        query = query.where(Contact.status == status)
    if after is not None:
        query = query.where(Contact.id > after)
    return list(session.scalars(query.order_by(Contact.id).limit(limit)))


def contact_events(session: Session, contact_id: int) -> list[ContactEvent]:
    return list(session.scalars(select(ContactEvent).where(ContactEvent.contact_id == contact_id)
                                .order_by(ContactEvent.id)))


def get_enrollment(session: Session, workspace_id: int, enrollment_id: int, *, lock: bool = False) -> Enrollment:
    if not _ident(enrollment_id):
        raise NotFound(f"no enrollment #{enrollment_id} in this workspace")
    query = _locked(select(Enrollment).where(Enrollment.id == enrollment_id, Enrollment.workspace_id == workspace_id),
                    lock, False)
    enrollment = session.scalar(query)
    if enrollment is None:
        raise NotFound(f"no enrollment #{enrollment_id} in this workspace")
    return enrollment


def list_enrollments(session: Session, workspace_id: int, *, campaign_id: int | None = None,
                     contact_id: int | None = None, status: str | None = None, after: int | None = None,
                     limit: int = 50) -> list[Enrollment]:
    """A page of enrollments by id, of one campaign or one contact."""
    query = select(Enrollment).where(Enrollment.workspace_id == workspace_id)
    if campaign_id is not None:
        query = query.where(Enrollment.campaign_id == campaign_id)
    if contact_id is not None:
        query = query.where(Enrollment.contact_id == contact_id)
    if status:
        query = query.where(Enrollment.status == status)
    if after is not None:
        query = query.where(Enrollment.id > after)
    return list(session.scalars(query.order_by(Enrollment.id).limit(limit)))


def contacts_by_id(session: Session, contact_ids) -> dict[int, Contact]:
    ids = list(set(contact_ids))
    return {c.id: c for c in session.scalars(select(Contact).where(Contact.id.in_(ids)))} if ids else {}


def campaign_events(session: Session, campaign_id: int) -> list[CampaignEvent]:
    return list(session.scalars(select(CampaignEvent).where(CampaignEvent.campaign_id == campaign_id)
                                .order_by(CampaignEvent.id)))


@dataclass
class StepFunnel:
    """How far a campaign's enrollments got at one step (across versions, by step index)."""

    index: int
    enrolled: int = 0  # reached this step
    scheduled: int = 0  # waiting for its time
    waiting_for_window: int = 0  # waiting, pushed into a send window
    sending: int = 0  # minted: its attempt is queued or being sent
    held: int = 0  # paused
    sends: Counter = field(default_factory=Counter)  # settled sends by status: sent, unknown, failed, ...
    exited: Counter = field(default_factory=Counter)  # enrollments that exited here, by reason

    @property
    def sent(self) -> int:
        return self.sends[SendStatus.SENT.value]

    @property
    def outcome_unknown(self) -> int:
        return self.sends[SendStatus.UNKNOWN.value]


def funnel(session: Session, campaign_id: int, step_count: int) -> list[StepFunnel]:
    """Per step: enrolled, waiting (for their time or their window), sending, sent, outcome unknown, exited by reason.

    Two grouped counts (enrollments by where they are, sends by step and status), whatever
    the campaign's size.
    """
    sends = session.execute(
        select(Send.step_index, Send.status, func.count()).join(Enrollment, Enrollment.id == Send.enrollment_id)
        .where(Enrollment.campaign_id == campaign_id).group_by(Send.step_index, Send.status)).all()
    where = session.execute(
        select(Enrollment.current_step, Enrollment.status, Enrollment.exit_reason, Enrollment.held_by_window,
               Enrollment.waiting_send_id.is_(None), func.count())
        .where(Enrollment.campaign_id == campaign_id)
        .group_by(Enrollment.current_step, Enrollment.status, Enrollment.exit_reason, Enrollment.held_by_window,
                  Enrollment.waiting_send_id.is_(None))).all()
    # Older versions may have had more steps than the current one: show every index reached.
    top = max([step_count - 1] + [index for index, *_ in sends]
              + [s - (status == EnrollmentStatus.COMPLETED.value) for s, status, *_ in where])
    steps = [StepFunnel(index) for index in range(max(top + 1, 1))]
    reached: Counter = Counter()
    for step, status, reason, windowed, unminted, count in where:
        if status == EnrollmentStatus.COMPLETED.value:
            reached[max(step - 1, 0)] += count  # past its last step
            continue
        last = step
        reached[last] += count
        if status == EnrollmentStatus.EXITED.value:
            steps[last].exited[reason or "exited"] += count
        elif unminted:
            if windowed:
                steps[last].waiting_for_window += count
            else:
                steps[last].scheduled += count
    for index, status, count in sends:
        steps[index].sends[status] += count
        if status == SendStatus.PENDING.value:
            steps[index].sending += count
        elif status == SendStatus.HELD.value:
            steps[index].held += count
    # An enrollment that reached step i has reached every step before it.
    running = 0
    for index in range(len(steps) - 1, -1, -1):
        running += reached[index]
        steps[index].enrolled = running
    return steps


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    kind: str  # "enrollment" or "attempt"
    what: str
    actor: str
    reason: str | None
    step: int | None = None
    send_id: int | None = None
    action_id: int | None = None


def enrollment_sends(session: Session, enrollment_id: int) -> list[Send]:
    return list(session.scalars(select(Send).where(Send.enrollment_id == enrollment_id)
                                .order_by(Send.step_index, Send.id)))


DRIP_ACTION_TYPES = ("send_email", "send_sms")


def attempts_of(session: Session, workspace_id: int, sends: list[Send]) -> dict[int, ScheduledAction]:
    """Every attempt of ``sends`` (the current ones and those they replaced), by id: an indexed lookup by key."""
    keys = [send.dedupe_key for send in sends]
    if not keys:
        return {}
    return {row.id: row for row in session.scalars(
        select(ScheduledAction).where(ScheduledAction.workspace_id == workspace_id,
                                      ScheduledAction.action_type.in_(DRIP_ACTION_TYPES),
                                      ScheduledAction.thing_id.in_(keys)).order_by(ScheduledAction.id))}


def enrollment_timeline(session: Session, enrollment: Enrollment) -> list[TimelineEntry]:
    """The enrollment's moves, its sends' moves and every attempt's status changes, in time order."""
    entries = [
        TimelineEntry(e.at, "enrollment", f"{e.move}: {e.from_status or 'new'} → {e.to_status}", e.actor, e.reason,
                      step=e.step, send_id=e.send_id)
        for e in session.scalars(select(EnrollmentEvent).where(EnrollmentEvent.enrollment_id == enrollment.id)
                                 .order_by(EnrollmentEvent.id))
    ]
    sends = enrollment_sends(session, enrollment.id)
    step_of = {send.dedupe_key: send.step_index for send in sends}
    attempts = attempts_of(session, enrollment.workspace_id, sends)
    if attempts:
        for event in session.scalars(select(ActionEvent).where(ActionEvent.action_id.in_(list(attempts)))
                                     .order_by(ActionEvent.id)):
            entries.append(TimelineEntry(
                event.at, "attempt", f"action #{event.action_id}: {event.from_status or 'new'} → {event.to_status}",
                event.actor, event.reason, step=step_of.get(attempts[event.action_id].thing_id),
                action_id=event.action_id))
    # Within one instant: the enrollment and its mint, then the attempt's moves, then what its end settled.
    first = ("enroll: ", "mint: ")
    return sorted(entries, key=lambda entry: (entry.at, 1 if entry.kind == "attempt" else
                                              0 if entry.what.startswith(first) else 2))


def active_at_steps(session: Session, version_id: int) -> Counter:
    """How many active enrollments of one version are at each of its steps, by step index."""
    return Counter(dict(session.execute(
        select(Enrollment.current_step, func.count()).where(Enrollment.version_id == version_id,
                                                            Enrollment.status == EnrollmentStatus.ACTIVE.value)
        .group_by(Enrollment.current_step)).all()))
