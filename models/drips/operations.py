"""What people do to drips: write and steer campaigns, keep contacts, enroll them, remove them, unsubscribe them.

These are what both shells call. Each takes a session inside a write transaction
(``models.core.database.write_session``), the workspace id, the actor and ``now``; each raises
:mod:`models.core.errors` types and changes nothing when it does. A campaign's pause, resume
and archive move the campaign here; what they set off across many enrollments (cancelling
queued attempts, minting held ones again, exiting enrollments) runs in batches of its own
transactions (:func:`models.drips.advance.follow_campaign`), which the shells call right
after, and which every drip-advance pass repeats, so an interrupted follow-up is finished by
the clock.

| who      | may                                                                                  |
|----------|--------------------------------------------------------------------------------------|
| marketer | create and edit campaigns and contacts, enroll, activate, pause and resume, unsubscribe a contact |
| ops      | also archive campaigns, remove enrollments, and cancel a drip attempt (skips its step) |
| admin    | also retry a drip attempt, while its enrollment still waits on it                    |
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.accounts.permissions import Permission, can, refusal
from models.accounts.tables import Role, Workspace
from models.actions.tables import CancelKind, ScheduledAction
from models.channels.tables import Channel
from models.core.errors import Conflict, Forbidden, InvalidInput
from models.core.moves import Actor
from models.drips import campaigns as campaign_moves
from models.drips import contacts as contact_moves
from models.drips import enrollments as moves
from models.drips.checks import (
    StepSpec,
    address_kind,
    check_attributes,
    check_channel,
    check_email,
    check_name,
    check_on_failure,
    check_phone,
    check_steps,
    check_window,
    check_zone,
    MAX_CONTACT_NAME,
)
from models.drips.reading import current_version, get_campaign, get_contact, get_enrollment, version_steps
from models.drips.schedule import contact_zone, plan_step, window_of
from models.drips.sending import SendingContext, Sent, cancel_queued_attempts, mint_due
from models.drips.templates import check_template_fields, template_references
from models.drips.tables import (
    Campaign,
    CampaignStatus,
    CampaignVersion,
    Contact,
    ContactStatus,
    Enrollment,
    EnrollmentStatus,
    OnFailure,
    Send,
    SendStatus,
    Step,
)


@dataclass
class DripChange:
    """What an operation left: the row it acted on, the attempts it inserted (to announce), and a note."""

    subject: Any
    new_rows: list[ScheduledAction] = field(default_factory=list)
    note: str | None = None
    counts: dict = field(default_factory=dict)


def _require(role: Role | None, needed: Permission, what: str) -> None:
    if role is not None and not can(role, needed):
        raise Forbidden(refusal(needed, what))


def _conflict_state(kind: str, ident: int, status: str, what: str) -> Conflict:
    return Conflict(f"{kind} #{ident} is {status}; {what}", code="wrong_state", status_now=status)


# -- campaigns ---------------------------------------------------------------------------------


def _insert_steps(session: Session, version_id: int, specs: list[StepSpec], now: datetime) -> None:
    for position, spec in enumerate(specs):
        session.add(Step(version_id=version_id, position=position, delay=spec.delay, subject=spec.subject,
                         body=spec.body, channel_id=spec.channel_id, send_window=spec.send_window, created_at=now,
                         updated_at=now))
    session.flush()


def _name_taken(session: Session, workspace_id: int, name: str, but: int | None = None) -> bool:
    query = select(Campaign.id).where(Campaign.workspace_id == workspace_id, Campaign.name == name)
    if but is not None:
        query = query.where(Campaign.id != but)
    return session.scalar(query) is not None


def create_campaign(session: Session, workspace_id: int, *, name, channel, steps, send_window=None,
                    on_failure=OnFailure.EXIT.value, actor: Actor, now: datetime) -> Campaign:
    """A draft campaign with its first version of steps, everything checked first."""
    name = check_name(name)
    default = check_channel(session, workspace_id, channel, "channel")
    window = check_window(send_window)
    on_failure = check_on_failure(on_failure)
    specs = check_steps(session, workspace_id, steps, default)
    if any(spec.id is not None for spec in specs):
        raise InvalidInput("a new campaign's steps have no ids yet", field="steps", code="unknown_step")
    if _name_taken(session, workspace_id, name):
        raise Conflict(f"a campaign named {name!r} already exists", field="name", code="campaign_exists")
    campaign = Campaign(workspace_id=workspace_id, name=name, channel_id=default.id,
                        status=CampaignStatus.DRAFT.value, send_window=window, on_failure=on_failure,
                        created_by_id=actor.user_id, created_at=now, updated_at=now)
    try:
        with session.begin_nested():
            session.add(campaign)
            session.flush()
    except IntegrityError:  # another request took the name between our look and this write
        raise Conflict(f"a campaign named {name!r} already exists", field="name", code="campaign_exists") from None
    campaign_moves.record_creation(session, campaign, now=now, actor=actor)
    version = CampaignVersion(campaign_id=campaign.id, number=1, created_at=now)
    session.add(version)
    session.flush()
    _insert_steps(session, version.id, specs, now)
    return campaign


CAMPAIGN_FIELDS = {"name", "channel", "send_window", "on_failure", "steps"}


def update_campaign(session: Session, workspace_id: int, campaign_id: int, *, changes: dict, actor: Actor,
                    now: datetime) -> DripChange:
    """Change a campaign's name, channel, window, ``on_failure`` or steps; fields left out keep their value.

    A draft's steps are replaced as given. Once the campaign has been active, steps may change
    content, delay, window and channel in place (send each step with its ``id``, in order);
    inserting, removing or reordering makes a new version, which new enrollments start on while
    the others finish on theirs (a step without an id beside steps with theirs is a new one:
    :func:`steps_restructured`). Enrollments waiting for a step whose delay or window changed
    are retimed at once.
    """
    campaign = get_campaign(session, workspace_id, campaign_id, lock=True)
    if campaign.status == CampaignStatus.ARCHIVED.value:
        raise _conflict_state("campaign", campaign.id, campaign.status, "it can no longer be edited")
    note = None
    retime = False
    if "name" in changes:
        name = check_name(changes["name"])
        if _name_taken(session, workspace_id, name, but=campaign.id):
            raise Conflict(f"a campaign named {name!r} already exists", field="name", code="campaign_exists")
        campaign.name = name
    if "channel" in changes:
        campaign.channel_id = check_channel(session, workspace_id, changes["channel"], "channel").id
    if "on_failure" in changes:
        campaign.on_failure = check_on_failure(changes["on_failure"])
    if "send_window" in changes:
        window = check_window(changes["send_window"])
        retime = retime or window != campaign.send_window
        campaign.send_window = window
    if "steps" in changes:
        default = session.get(Channel, campaign.channel_id)
        specs = check_steps(session, workspace_id, changes["steps"], default)
        version = current_version(session, campaign.id)
        current = version_steps(session, version.id)
        check_step_ids(specs, current, version.number)
        structural = steps_restructured([step.id for step in current], [spec.id for spec in specs])
        if structural and campaign.status == CampaignStatus.DRAFT.value:
            session.execute(delete(Step).where(Step.version_id == version.id))
            session.flush()
            _insert_steps(session, version.id, specs, now)
        elif structural:
            version = CampaignVersion(campaign_id=campaign.id, number=version.number + 1, created_at=now)
            session.add(version)
            session.flush()
            _insert_steps(session, version.id, specs, now)
            note = (f"The steps were inserted, removed or reordered: version {version.number} is what new "
                    "enrollments start on; enrollments already under way finish on theirs.")
        else:
            for spec, step in zip(specs, current):
                retime = retime or spec.delay != step.delay or spec.send_window != step.send_window
                step.delay, step.subject, step.body = spec.delay, spec.subject, spec.body
                step.channel_id, step.send_window, step.updated_at = spec.channel_id, spec.send_window, now
    campaign.updated_at = now
    session.flush()
    retimed = retime_waiting(session, campaign_id=campaign.id, now=now) if retime else 0
    if "steps" in changes:
        note = " ".join(([note] if note else []) + attribute_warnings(session, campaign.id, specs)) or None
    return DripChange(campaign, note=note, counts={"retimed": retimed})


def check_step_ids(specs: list[StepSpec], current: list[Step], version_number: int) -> None:
    """Refuse (422 naming the step) an id that is not a step of the current version, or that comes twice."""
    known = {step.id: index for index, step in enumerate(current)}
    seen: dict[int, int] = {}
    for index, spec in enumerate(specs):
        if spec.id is None:
            continue
        if spec.id not in known:
            raise InvalidInput(f"steps[{index}].id {spec.id} is not a step of this campaign's current version "
                               f"(version {version_number}); the steps may have changed since they were read",
                               field=f"steps[{index}].id", code="unknown_step")
        if spec.id in seen:
            raise InvalidInput(f"steps[{index}].id {spec.id} is steps[{seen[spec.id]}] already: a step comes once; "
                               "leave the id out of a new step", field=f"steps[{index}].id", code="duplicate_step")
        seen[spec.id] = index


def steps_restructured(current_ids: list[int], given_ids: list[int | None]) -> bool:
    """Whether saving steps with ``given_ids`` (None: a step without an id) over the current version's
    ``current_ids`` inserts, removes or reorders steps, rather than changing them in place.

    Steps sent without any id change the current ones in place, position by position. Once one
    step carries its id, a step without one is a new step: with as many steps as before, one of
    the old ones was removed, and changing it in place would swap a step for another under the
    contacts who are at it.
    """
    if len(given_ids) != len(current_ids):
        return True
    if any(ident is not None and ident != current for ident, current in zip(given_ids, current_ids)):
        return True
    return any(ident is not None for ident in given_ids) and any(ident is None for ident in given_ids)


def attribute_warnings(session: Session, campaign_id: int | None, specs) -> list[str]:
    """For each step template using ``attributes.X`` without ``default``: how many contacts enrolled in
    the campaign now lack X (they would leave at that step as ``send_failed``). Nothing is refused."""
    needed: dict[str, list[str]] = {}
    for index, spec in enumerate(specs):
        for part in ("subject", "body"):
            source = getattr(spec, part)
            for name in template_references(source).attributes if source else ():
                needed.setdefault(name, []).append(f"step {index + 1}'s {part}")
    if not needed or campaign_id is None:
        return []
    held = list(session.scalars(select(Contact.attributes).join(Enrollment, Enrollment.contact_id == Contact.id).where(
        Enrollment.campaign_id == campaign_id, Enrollment.status == EnrollmentStatus.ACTIVE.value)))
    warnings = []
    for name, places in needed.items():
        lacking = sum(1 for attributes in held if (attributes or {}).get(name) in (None, ""))
        if lacking:
            warnings.append(f"{' and '.join(places)} use attributes.{name}, which {lacking} of the {len(held)} "
                            f"enrolled contacts lack: they would leave at that step. Write "
                            f"{{{{ attributes.{name} | default('…') }}}} to send them something instead.")
    return warnings


def _check_saved_templates(session: Session, campaign: Campaign) -> None:
    """A campaign saved before its templates were read for unknown names is checked again at activation."""
    version = current_version(session, campaign.id)
    for index, step in enumerate(version_steps(session, version.id)):
        for part in ("subject", "body"):
            source = getattr(step, part)
            if source:
                check_template_fields(source, f"steps[{index}].{part}")


def _email_steps_need_base_url(session: Session, campaign: Campaign, base_url: str | None) -> None:
    if base_url:
        return
    version = current_version(session, campaign.id)
    for step in version_steps(session, version.id):
        channel = session.get(Channel, step.channel_id or campaign.channel_id)
        if address_kind(channel) == "email":
            raise Conflict("this campaign sends email, and every email carries an unsubscribe link: set "
                           "TICKWORK_BASE_URL (the public https address of this Tickwork) before activating it",
                           code="base_url_missing", field="TICKWORK_BASE_URL")


def activate_campaign(session: Session, workspace_id: int, campaign_id: int, *, base_url: str | None, actor: Actor,
                      now: datetime) -> DripChange:
    """draft → active, or paused → active (resume). Activating an active campaign changes nothing."""
    campaign = get_campaign(session, workspace_id, campaign_id, lock=True)
    if campaign.status == CampaignStatus.ACTIVE.value:
        return DripChange(campaign)
    if campaign.status == CampaignStatus.ARCHIVED.value:
        raise _conflict_state("campaign", campaign.id, campaign.status, "it cannot be activated again")
    _check_saved_templates(session, campaign)
    _email_steps_need_base_url(session, campaign, base_url)
    move = campaign_moves.activate if campaign.status == CampaignStatus.DRAFT.value else campaign_moves.resume
    outcome = move(session, campaign, now=now, actor=actor)
    if not outcome.ok:
        raise _conflict_state("campaign", campaign.id, outcome.status, "it cannot be activated")
    return DripChange(campaign)


def resume_campaign(session: Session, workspace_id: int, campaign_id: int, *, base_url: str | None, actor: Actor,
                    now: datetime) -> DripChange:
    """paused → active: its held sends get a new attempt (by the follow-up). Resuming an active campaign changes nothing."""
    campaign = get_campaign(session, workspace_id, campaign_id, lock=True)
    if campaign.status not in (CampaignStatus.PAUSED.value, CampaignStatus.ACTIVE.value):
        raise _conflict_state("campaign", campaign.id, campaign.status, "only a paused campaign can be resumed")
    return activate_campaign(session, workspace_id, campaign_id, base_url=base_url, actor=actor, now=now)


def pause_campaign(session: Session, workspace_id: int, campaign_id: int, *, actor: Actor,
                   now: datetime) -> DripChange:
    """active → paused: nothing is minted any more, and its queued attempts are cancelled (by the follow-up)."""
    campaign = get_campaign(session, workspace_id, campaign_id, lock=True)
    if campaign.status == CampaignStatus.PAUSED.value:
        return DripChange(campaign)
    outcome = campaign_moves.pause(session, campaign, now=now, actor=actor)
    if not outcome.ok:
        raise _conflict_state("campaign", campaign.id, outcome.status, "only an active campaign can be paused")
    return DripChange(campaign)


def archive_campaign(session: Session, workspace_id: int, campaign_id: int, *, role: Role | None, actor: Actor,
                     now: datetime) -> DripChange:
    """Finish a campaign for good: its active enrollments exit (``archived``, by the follow-up). Ops only."""
    _require(role, Permission.OPERATE, "archive a campaign")
    campaign = get_campaign(session, workspace_id, campaign_id, lock=True)
    if campaign.status == CampaignStatus.ARCHIVED.value:
        return DripChange(campaign)
    outcome = campaign_moves.archive(session, campaign, now=now, actor=actor)
    if not outcome.ok:
        raise _conflict_state("campaign", campaign.id, outcome.status, "it cannot be archived")
    return DripChange(campaign)


# -- enrollments -------------------------------------------------------------------------------


def plan_first_step(session: Session, campaign: Campaign, steps: list[Step], contact: Contact, workspace_zone: str | None,
                    enrolled_at: datetime):
    """When a new enrollment's first step is due: its delay from ``enrolled_at``, into its window."""
    zone, zone_note = contact_zone(contact.timezone, workspace_zone)
    first = steps[0]
    return plan_step(enrolled_at, first.delay, window_of(first.send_window, campaign.send_window), zone,
                     zone_note=zone_note)


def check_takes_enrollments(campaign: Campaign) -> None:
    """Refuse (409) a campaign that is not active or paused: a draft is activated first, an archive is over."""
    if campaign.status not in (CampaignStatus.ACTIVE.value, CampaignStatus.PAUSED.value):
        what = "activate it first" if campaign.status == CampaignStatus.DRAFT.value else "it takes no enrollments"
        raise _conflict_state("campaign", campaign.id, campaign.status, what)


def check_enrollable(campaign: Campaign, contact: Contact, reaches: frozenset[str] | None = None) -> None:
    """Refuse (409) a campaign that takes no enrollments, or a contact who may not be sent to; and
    (422 ``no_address_for_channel``) a contact with none of the addresses ``reaches`` names."""
    check_takes_enrollments(campaign)
    if contact.status != ContactStatus.SUBSCRIBED.value:
        raise Conflict(f"contact #{contact.id} is {contact.status}; they are never sent to again",
                       code=contact.status, field="contact_id")
    if reaches is not None and not contact_reached(reaches, email=contact.email, phone=contact.phone):
        raise InvalidInput(f"contact #{contact.id} has no {' or '.join(sorted(reaches))}, which every step of "
                           f"campaign #{campaign.id} sends to", field="contact_id", code="no_address_for_channel")


def campaign_reaches(session: Session, campaign: Campaign, steps: list) -> frozenset[str]:
    """The addresses (``email``, ``phone``) the campaign's steps deliver to, through each step's channel
    (else the campaign's)."""
    channel_ids = {step.channel_id or campaign.channel_id for step in steps} or {campaign.channel_id}
    channels = session.scalars(select(Channel).where(Channel.id.in_(channel_ids)))
    return frozenset(address_kind(channel) for channel in channels)


def contact_reached(reaches: frozenset[str], *, email: str | None, phone: str | None) -> bool:
    """Whether a contact with these addresses can be sent at least one of the campaign's steps."""
    return bool(("email" in reaches and email) or ("phone" in reaches and phone))


def insert_enrollment(session: Session, campaign: Campaign, version: CampaignVersion, steps: list[Step],
                      contact: Contact, workspace_zone: str | None, *, actor: Actor, now: datetime,
                      reason: str) -> Enrollment | None:
    """Insert an active enrollment at step 0 with its first event; None when the contact is already enrolled."""
    planned = plan_first_step(session, campaign, steps, contact, workspace_zone, now)
    enrollment = Enrollment(workspace_id=campaign.workspace_id, campaign_id=campaign.id, version_id=version.id,
                            contact_id=contact.id, status=EnrollmentStatus.ACTIVE.value, current_step=0,
                            next_send_at=planned.instant, anchor_at=now, schedule_note=planned.note,
                            held_by_window=planned.held_by_window, enrolled_at=now, created_by_id=actor.user_id,
                            updated_at=now)
    try:
        with session.begin_nested():
            session.add(enrollment)
            session.flush()
    except IntegrityError:  # one active enrollment per contact and campaign
        return None
    moves.record_enrollment(session, enrollment, now=now, actor=actor, reason=reason)
    return enrollment


def enroll(session: Session, workspace_id: int, campaign_id: int, contact_id, *, actor: Actor, now: datetime,
           ctx: SendingContext) -> DripChange:
    """Enroll a contact; a first step due before the next tick is minted at once (announce ``new_rows``)."""
    if not isinstance(contact_id, int) or isinstance(contact_id, bool):
        raise InvalidInput("contact_id must be a contact's id", field="contact_id", code="wrong_type")
    # Share locks, campaign then contact (the pre-send check's order): an archive or an unsubscribe
    # lands wholly before this enrollment (and refuses it) or after (and ends it).
    campaign = get_campaign(session, workspace_id, campaign_id, share=True)
    contact = get_contact(session, workspace_id, contact_id, share=True)
    version = current_version(session, campaign.id)
    steps = version_steps(session, version.id)
    check_enrollable(campaign, contact, campaign_reaches(session, campaign, steps))
    zone = session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
    enrollment = insert_enrollment(session, campaign, version, steps, contact, zone, actor=actor, now=now,
                                   reason="enrolled")
    if enrollment is None:
        raise Conflict(f"contact #{contact.id} is already enrolled in campaign #{campaign.id}",
                       code="already_enrolled", field="contact_id")
    sent = Sent()
    if campaign.status == CampaignStatus.ACTIVE.value and enrollment.next_send_at <= ctx.policy.due_soon_horizon(now):
        sent = mint_due(session, [enrollment.id], now=now, ctx=ctx)
        session.refresh(enrollment)
    return DripChange(enrollment, new_rows=sent.new_rows, note=enrollment.schedule_note, counts=dict(sent.counts))


def remove_enrollment(session: Session, workspace_id: int, enrollment_id: int, *, role: Role | None, actor: Actor,
                      now: datetime) -> DripChange:
    """Exit an enrollment (``removed``), never delete it; its queued attempt is cancelled at once. Ops only."""
    _require(role, Permission.OPERATE, "remove an enrollment")
    enrollment = get_enrollment(session, workspace_id, enrollment_id, lock=True)
    if enrollment.status != EnrollmentStatus.ACTIVE.value:
        if enrollment.status == EnrollmentStatus.EXITED.value and enrollment.exit_reason == "removed":
            return DripChange(enrollment)
        raise _conflict_state("enrollment", enrollment.id, enrollment.status, "it can no longer be removed")
    counts = end_enrollments(session, [enrollment.id], exit_reason="removed", reason=f"removed by {actor.label}",
                              actor=actor, now=now)
    session.refresh(enrollment)
    return DripChange(enrollment, counts=counts)


def end_enrollments(session: Session, enrollment_ids: list[int], *, exit_reason: str, reason: str, actor: Actor,
                    now: datetime) -> dict:
    """Exit each active enrollment of ``enrollment_ids`` and cancel its queued attempts (kind ``exited``)."""
    exited = 0
    for enrollment_id in enrollment_ids:
        exited += moves.exit_enrollment(session, enrollment_id, exit_reason=exit_reason, now=now, actor=actor,
                                        reason=reason).ok
    sends = list(session.scalars(select(Send).where(Send.enrollment_id.in_(enrollment_ids),
                                                    Send.status == SendStatus.PENDING.value)))
    cancelled = cancel_queued_attempts(session, sends, kind=CancelKind.EXITED, reason=f"not sent: {reason}", now=now,
                                       actor=actor)
    return {"exited": exited, "cancelled": cancelled}


# -- contacts ----------------------------------------------------------------------------------


CONTACT_FIELDS = {"email", "phone", "name", "timezone", "attributes"}


def _taken(session: Session, workspace_id: int, column, value, but: int | None) -> int | None:
    if value is None:
        return None
    query = select(Contact.id).where(Contact.workspace_id == workspace_id, column == value)
    if but is not None:
        query = query.where(Contact.id != but)
    return session.scalar(query)


def _check_unique(session: Session, workspace_id: int, email: str | None, phone: str | None,
                  but: int | None = None) -> None:
    for field_name, column, value in (("email", Contact.email, email), ("phone", Contact.phone, phone)):
        other = _taken(session, workspace_id, column, value, but)
        if other is not None:
            raise Conflict(f"contact #{other} already has the {field_name} {value}", code="contact_exists",
                           field=field_name, existing_id=other)


def create_contact(session: Session, workspace_id: int, *, email=None, phone=None, name=None, timezone=None,
                   attributes=None, actor: Actor, now: datetime) -> Contact:
    """A subscribed contact with an email and/or a phone; each address once per workspace."""
    email, phone = check_email(email), check_phone(phone)
    if email is None and phone is None:
        raise InvalidInput("a contact needs an email or a phone", field="email", code="missing")
    name = check_name(name, "name", MAX_CONTACT_NAME) if name not in (None, "") else ""
    zone = check_zone(timezone)
    attributes = check_attributes(attributes)
    _check_unique(session, workspace_id, email, phone)
    contact = Contact(workspace_id=workspace_id, email=email, phone=phone, name=name, timezone=zone,
                      attributes=attributes, status=ContactStatus.SUBSCRIBED.value, created_by_id=actor.user_id,
                      created_at=now, updated_at=now)
    try:
        with session.begin_nested():
            session.add(contact)
            session.flush()
    except IntegrityError:
        raise Conflict("a contact with this email or phone already exists", code="contact_exists",
                       field="email") from None
    contact_moves.record_creation(session, contact, now=now, actor=actor)
    return contact


def update_contact(session: Session, workspace_id: int, contact_id: int, *, changes: dict, actor: Actor,
                   now: datetime) -> DripChange:
    """Change a contact's addresses, name, zone or attributes; a new zone retimes their waiting steps."""
    contact = get_contact(session, workspace_id, contact_id, lock=True)
    email = check_email(changes["email"]) if "email" in changes else contact.email
    phone = check_phone(changes["phone"]) if "phone" in changes else contact.phone
    if email is None and phone is None:
        raise InvalidInput("a contact needs an email or a phone", field="email", code="missing")
    _check_unique(session, workspace_id, email if email != contact.email else None,
                  phone if phone != contact.phone else None, but=contact.id)
    contact.email, contact.phone = email, phone
    if "name" in changes:
        contact.name = check_name(changes["name"], "name", MAX_CONTACT_NAME) if changes["name"] not in (None, "") else ""
    zone_changed = False
    if "timezone" in changes:
        zone = check_zone(changes["timezone"])
        zone_changed = zone != contact.timezone
        contact.timezone = zone
    if "attributes" in changes:
        contact.attributes = check_attributes(changes["attributes"])
    contact.updated_at = now
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise Conflict("another contact has this email or phone", code="contact_exists", field="email") from None
    retimed = retime_waiting(session, contact_id=contact.id, now=now) if zone_changed else 0
    return DripChange(contact, counts={"retimed": retimed})


def stop_sending_to(session: Session, contact: Contact, *, exit_reason: str, actor: Actor, now: datetime) -> dict:
    """End every active enrollment of ``contact`` and cancel their queued attempts at once."""
    active = list(session.scalars(select(Enrollment.id).where(Enrollment.contact_id == contact.id,
                                                              Enrollment.status == EnrollmentStatus.ACTIVE.value)
                                  .order_by(Enrollment.id)))
    if not active:
        return {"exited": 0, "cancelled": 0}
    return end_enrollments(session, active, exit_reason=exit_reason,
                            reason=f"the contact {'unsubscribed' if exit_reason == 'unsubscribed' else exit_reason}",
                            actor=actor, now=now)


def unsubscribe_contact(session: Session, workspace_id: int, contact_id: int, *, actor: Actor, now: datetime,
                        reason: str) -> DripChange:
    """The contact is never sent to again: their enrollments exit and queued attempts are cancelled now.

    Unsubscribing an unsubscribed contact changes nothing and is not an error.
    """
    contact = get_contact(session, workspace_id, contact_id, lock=True)
    if contact.status == ContactStatus.UNSUBSCRIBED.value:
        return DripChange(contact, counts={"exited": 0, "cancelled": 0})
    outcome = contact_moves.unsubscribe(session, contact, now=now, actor=actor, reason=reason)
    if not outcome.ok:
        raise _conflict_state("contact", contact.id, outcome.status, "it cannot be unsubscribed")
    counts = stop_sending_to(session, contact, exit_reason="unsubscribed", actor=actor, now=now)
    return DripChange(contact, counts=counts)


def bounce_contact(session: Session, contact: Contact, *, actor: Actor, now: datetime, reason: str) -> DripChange:
    """A hard bounce of their email: the contact is never sent to again, like an unsubscribe."""
    session.refresh(contact, with_for_update=True)
    if contact.status != ContactStatus.SUBSCRIBED.value:
        return DripChange(contact, counts={"exited": 0, "cancelled": 0})
    outcome = contact_moves.bounce(session, contact, now=now, actor=actor, reason=reason)
    if not outcome.ok:
        return DripChange(contact, counts={"exited": 0, "cancelled": 0})
    return DripChange(contact, counts=stop_sending_to(session, contact, exit_reason="bounced", actor=actor, now=now))


# -- retiming ----------------------------------------------------------------------------------


def retime_waiting(session: Session, *, now: datetime, campaign_id: int | None = None,
                   contact_id: int | None = None, workspace_zone_of: int | None = None) -> int:
    """Recompute ``next_send_at`` of active enrollments whose current step is not minted yet; returns how many moved.

    Of one campaign (a delay or a window changed), one contact (their zone changed), or every
    contact of workspace ``workspace_zone_of`` who has no zone of their own (the workspace's
    zone changed). The step's delay still counts from the same anchor; only the zone or the
    window that turn it into an instant changed.
    """
    query = (select(Enrollment, Contact.timezone, Workspace.timezone)
             .join(Contact, Contact.id == Enrollment.contact_id)
             .join(Workspace, Workspace.id == Enrollment.workspace_id)
             .where(Enrollment.status == EnrollmentStatus.ACTIVE.value, Enrollment.waiting_send_id.is_(None)))
    if campaign_id is not None:
        query = query.where(Enrollment.campaign_id == campaign_id)
    if contact_id is not None:
        query = query.where(Enrollment.contact_id == contact_id)
    if workspace_zone_of is not None:
        query = query.where(Enrollment.workspace_id == workspace_zone_of, Contact.timezone.is_(None))
    moved = 0
    steps: dict[int, list[Step]] = {}
    campaigns: dict[int, Campaign] = {}
    for enrollment, own_zone, workspace_zone in session.execute(query).all():
        if enrollment.version_id not in steps:
            steps[enrollment.version_id] = version_steps(session, enrollment.version_id)
        if enrollment.campaign_id not in campaigns:
            campaigns[enrollment.campaign_id] = session.get(Campaign, enrollment.campaign_id)
        step = steps[enrollment.version_id][enrollment.current_step]
        campaign = campaigns[enrollment.campaign_id]
        zone, zone_note = contact_zone(own_zone, workspace_zone)
        planned = plan_step(enrollment.anchor_at, step.delay, window_of(step.send_window, campaign.send_window),
                            zone, zone_note=zone_note)
        if planned.instant == enrollment.next_send_at and planned.note == enrollment.schedule_note:
            continue
        moved += moves.reschedule(session, enrollment.id, step=enrollment.current_step,
                                  next_send_at=planned.instant, schedule_note=planned.note,
                                  held_by_window=planned.held_by_window, now=now)
    return moved
