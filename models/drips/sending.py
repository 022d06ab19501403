"""The wing's one sending path: mint a step's send and its attempt, settle it when the attempt ends, re-mint it after a pause.

A drip send never has a dispatcher of its own. Minting inserts the *send* (its dedupe key
``drip:<enrollment id>:<step index>`` is unique, so a step is minted once, whoever races)
and its *attempt*, a ``scheduled_actions`` row inserted by
:func:`models.actions.scheduling.insert_action` (origin ``drip``, ``thing_id`` = the dedupe
key, ``target_key`` = the address), which the tick, the claim, the providers, the outcome
table and the misfire policy then treat like every other row.

Settling is the playbook's optimistic advance, decided at the attempt's first terminal status:

| the attempt ends                                              | the send  | the enrollment                         |
|---------------------------------------------------------------|-----------|----------------------------------------|
| ``published`` (or a legacy duplicate of a published sibling)  | sent      | advances; the next delay counts from ``finished_at`` |
| ``failed``: permanent, content error (template), attempts exhausted | failed | exits (``send_failed``) or skips, as ``on_failure`` says |
| ``failed``: outcome unknown, worker lost                      | unknown   | advances as if sent (never re-sent)    |
| ``failed``: missed its window                                 | missed    | skips (``missed_window``) or exits, as ``on_failure`` says |
| ``cancelled`` ``exited``                                      | exited    | exits with the reason (if it has not already) |
| ``cancelled`` by a person                                     | skipped   | skips the step (``cancelled_by_person``) |
| ``cancelled`` ``paused``                                      | held      | waits; a resume (or the next pass, once active) re-mints it |

A step whose channel needs an address the contact lacks is minted and settled at once as
skipped (``no_address``), without an attempt.

Every function here works inside the caller's write transaction and takes its rows in
batches; :mod:`models.drips.advance` drives them from the clock, and
:mod:`models.drips.operations` from people (enrolling mints a step due now at once).
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, literal_column, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.actions import lifecycle
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action, insert_actions
from models.actions.tables import CancelKind, FailureCode, Origin, ScheduledAction, Status
from models.channels.tables import Channel
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.secrets_box import SecretBox
from models.drips import enrollments as moves
from models.drips.checks import MAX_STEPS, action_type_for, address_kind
from models.drips.schedule import contact_zone, into_window, plan_step, window_of
from models.drips.tables import (
    Campaign,
    CampaignStatus,
    Contact,
    ContactStatus,
    Enrollment,
    EnrollmentStatus,
    OnFailure,
    Send,
    SendStatus,
    Step,
    dedupe_key_of,
)
from models.drips.templates import TemplateProblem, render, template_context
from models.drips.unsubscribe import list_unsubscribe_headers, unsubscribe_url

DEFAULT_OPT_OUT_LINE = "Reply STOP to unsubscribe."


@dataclass(frozen=True)
class SendingContext:
    """What minting needs besides the database: the key for links, the public address, the policy, who acts."""

    secret_box: SecretBox
    base_url: str | None
    policy: Policy
    actor: Actor


@dataclass
class Sent:
    """What a batch did: the attempts it inserted (to hand to the queue) and its counts."""

    new_rows: list[ScheduledAction] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    errors: list[dict] = field(default_factory=list)  # rows left as they were: stored data that cannot be used
    moved_on: set[int] = field(default_factory=set)  # enrollments advanced as their step settled at mint

    def add(self, other: "Sent") -> None:
        self.new_rows.extend(other.new_rows)
        self.counts.update(other.counts)
        self.errors.extend(other.errors)
        self.moved_on |= other.moved_on

    def error(self, kind: str, ident: int, exc: Exception) -> None:
        """Record a row skipped because its stored data cannot be used (a delay, a window): the pass goes on."""
        self.counts["errors"] += 1
        self.errors.append({kind: ident, "error": f"{type(exc).__name__}: {exc}"})


class Lookup:
    """Campaigns, steps, channels, zones and contacts a batch needs, each read once in its transaction."""

    def __init__(self, session: Session):
        self.session = session
        self._campaigns: dict[int, Campaign] = {}
        self._steps: dict[int, list[Step]] = {}
        self._channels: dict[int, Channel] = {}
        self._zones: dict[int, str | None] = {}
        self._contacts: dict[int, Contact] = {}

    def campaign(self, campaign_id: int) -> Campaign:
        if campaign_id not in self._campaigns:
            self._campaigns[campaign_id] = self.session.get(Campaign, campaign_id)
        return self._campaigns[campaign_id]

    def steps(self, version_id: int) -> list[Step]:
        if version_id not in self._steps:
            self._steps[version_id] = list(self.session.scalars(
                select(Step).where(Step.version_id == version_id).order_by(Step.position)))
        return self._steps[version_id]

    def channel(self, channel_id: int) -> Channel:
        if channel_id not in self._channels:
            self._channels[channel_id] = self.session.get(Channel, channel_id)
        return self._channels[channel_id]

    def workspace_zone(self, workspace_id: int) -> str | None:
        if workspace_id not in self._zones:
            self._zones[workspace_id] = self.session.scalar(select(Workspace.timezone)
                                                            .where(Workspace.id == workspace_id))
        return self._zones[workspace_id]

    def contacts(self, contact_ids) -> None:
        wanted = [ident for ident in set(contact_ids) if ident not in self._contacts]
        if wanted:
            for contact in self.session.scalars(select(Contact).where(Contact.id.in_(wanted))):
                self._contacts[contact.id] = contact

    def contact(self, contact_id: int) -> Contact:
        self.contacts([contact_id])
        return self._contacts[contact_id]

    def zone_of(self, contact: Contact) -> tuple[str, str | None]:
        return contact_zone(contact.timezone, self.workspace_zone(contact.workspace_id))

    def step_channel(self, campaign: Campaign, step: Step) -> Channel:
        return self.channel(step.channel_id or campaign.channel_id)


class _Undo(Exception):
    """Roll one enrollment's savepoint back: someone else minted or moved it first."""


def _address(channel: Channel, contact: Contact) -> str | None:
    return contact.email if address_kind(channel) == "email" else contact.phone


def build_payload(campaign: Campaign, step: Step, channel: Channel, contact: Contact, address: str,
                  enrollment_id: int, ctx: SendingContext) -> dict:
    """The attempt's payload: the step rendered for this contact, with the unsubscribe link or opt-out line.

    Raises :class:`TemplateProblem` when a template does not render for this contact.
    """
    email = address_kind(channel) == "email"
    link = unsubscribe_url(ctx.base_url, ctx.secret_box, contact.workspace_id, contact.id) if email else None
    context = template_context(contact, campaign_name=campaign.name, step_number=step.position + 1,
                               unsubscribe_url=link)
    body = render(step.body, context)
    payload = {"to": address, "drip": {"campaign_id": campaign.id, "enrollment_id": enrollment_id,
                                       "step": step.position}}
    if email:
        payload["subject"] = render(step.subject, context).strip() if step.subject else ""
        if link not in body:
            body = f"{body.rstrip()}\n\n--\nUnsubscribe: {link}\n"
        payload["headers"] = list_unsubscribe_headers(link, (channel.config or {}).get("unsubscribe_mailbox"))
    else:
        opt_out = (channel.config or {}).get("opt_out_line") or DEFAULT_OPT_OUT_LINE
        if not body.rstrip().endswith(opt_out):
            body = f"{body.rstrip()}\n{opt_out}"
    payload["body"] = body
    return payload


# -- minting -------------------------------------------------------------------------------


@dataclass
class _Plan:
    """One enrollment's mint, worked out before anything is written."""

    enrollment: Enrollment
    campaign: Campaign
    step: Step
    channel: Channel
    address: str
    payload: dict
    publish_at: datetime

    @property
    def dedupe_key(self) -> str:
        return dedupe_key_of(self.enrollment.id, self.step.position)


_ONE_BY_ONE = object()  # an enrollment whose mint settles at once, or exits it: minted on its own


def _plan(lookup: Lookup, enrollment: Enrollment, now: datetime, ctx: SendingContext, done: Sent):
    """A :class:`_Plan`, ``_ONE_BY_ONE``, or None when the enrollment waits (its campaign, the base URL)."""
    campaign = lookup.campaign(enrollment.campaign_id)
    if campaign.status != CampaignStatus.ACTIVE.value:
        done.counts["skip_campaign_" + campaign.status] += 1
        return None
    contact = lookup.contact(enrollment.contact_id)
    steps = lookup.steps(enrollment.version_id)
    if contact.status != ContactStatus.SUBSCRIBED.value or enrollment.current_step >= len(steps):
        return _ONE_BY_ONE
    step = steps[enrollment.current_step]
    channel = lookup.step_channel(campaign, step)
    address = _address(channel, contact)
    if address is None:
        return _ONE_BY_ONE
    if address_kind(channel) == "email" and not ctx.base_url:
        done.counts["skip_no_base_url"] += 1  # no unsubscribe link can be made: wait until there is one
        return None
    try:
        payload = build_payload(campaign, step, channel, contact, address, enrollment.id, ctx)
    except TemplateProblem:
        return _ONE_BY_ONE
    return _Plan(enrollment, campaign, step, channel, address, payload,
                 _publish_at(lookup, enrollment, campaign, step, contact, now))


def _publish_at(lookup: Lookup, enrollment: Enrollment, campaign: Campaign, step: Step, contact: Contact,
                now: datetime) -> datetime:
    """``next_send_at``; or, minted late (the clock was down), from now, and still never outside the window."""
    if enrollment.next_send_at >= now:
        return enrollment.next_send_at
    zone, _ = lookup.zone_of(contact)
    return into_window(now, window_of(step.send_window, campaign.send_window), zone).instant


def mint_due(session: Session, enrollment_ids: list[int], *, now: datetime, ctx: SendingContext,
             _depth: int = 0) -> Sent:
    """Mint the current step's send of each enrollment in ``enrollment_ids`` still waiting to be minted.

    The enrollments are read again inside this transaction. The common case is written a
    batch at a time (:func:`_mint_many`): the sends inserted with their unique dedupe keys
    (a key another process holds is skipped: ``skip_minted``), the enrollments' guarded
    ``mint`` moves, the attempts, the events. The rest (no address, a template that does not
    render, a contact who has gone, or a batch the database refused) is minted one
    enrollment at a time, each in a savepoint of its own. A step settled at once moves its
    enrollment on, and a next step already due is minted in the same call.
    """
    done = Sent()
    if not enrollment_ids:
        return done
    lookup = Lookup(session)
    fresh = list(session.scalars(
        select(Enrollment).where(Enrollment.id.in_(enrollment_ids),
                                 Enrollment.status == literal_column("'active'"),
                                 Enrollment.waiting_send_id.is_(None))
        .order_by(Enrollment.next_send_at, Enrollment.id).execution_options(populate_existing=True)))
    if len(set(enrollment_ids)) > len(fresh):
        done.counts["skip_minted"] += len(set(enrollment_ids)) - len(fresh)
    lookup.contacts(e.contact_id for e in fresh)
    plans, one_by_one = [], []
    for enrollment in fresh:
        try:
            plan = _plan(lookup, enrollment, now, ctx, done)
        except ValueError as exc:  # a stored delay or window that no longer reads: left for a person to fix
            done.error("enrollment_id", enrollment.id, exc)
            continue
        if plan is _ONE_BY_ONE:
            one_by_one.append(enrollment)
        elif plan is not None:
            plans.append(plan)
    if plans and not _mint_many(session, plans, now, ctx, done):
        one_by_one += [plan.enrollment for plan in plans]
    events: list[dict] = []
    for enrollment in one_by_one:
        mark = len(events)
        try:
            with session.begin_nested():
                _mint_one(session, lookup, enrollment, now, ctx, done, events)
        except _Undo:
            del events[mark:]
            done.counts["skip_minted"] += 1
        except ValueError as exc:
            del events[mark:]
            done.error("enrollment_id", enrollment.id, exc)
    moves.record_events(session, events)
    moved_on = [e.id for e in fresh if e.id in done.moved_on]
    if moved_on and _depth < MAX_STEPS:
        due = list(session.scalars(select(Enrollment.id).where(
            Enrollment.id.in_(moved_on), Enrollment.status == literal_column("'active'"),
            Enrollment.waiting_send_id.is_(None), Enrollment.next_send_at <= ctx.policy.due_soon_horizon(now))))
        done.moved_on.clear()
        done.add(mint_due(session, due, now=now, ctx=ctx, _depth=_depth + 1))
    return done


def _insert_ignoring_taken(session: Session):
    """``INSERT INTO drip_sends ... ON CONFLICT (dedupe_key) DO NOTHING``: a key another process holds is skipped."""
    dialect = session.get_bind().dialect.name
    build = postgresql_insert if dialect == "postgresql" else sqlite_insert
    return build(Send.__table__).on_conflict_do_nothing(index_elements=["dedupe_key"]).returning(
        Send.__table__.c.id, Send.__table__.c.dedupe_key)


def _mint_many(session: Session, plans: list[_Plan], now: datetime, ctx: SendingContext, done: Sent) -> bool:
    """Mint ``plans`` in a handful of statements, in a savepoint; False when the database refused the batch.

    1. the sends, ``ON CONFLICT (dedupe_key) DO NOTHING``: the keys we get are ours (on
       PostgreSQL a key another transaction holds makes us wait for it, then skip);
    2. each enrollment's guarded ``mint`` move; a send whose enrollment moved meanwhile is
       deleted again (it never left this transaction);
    3. the attempts (:func:`models.actions.scheduling.insert_actions`), their sends pointed at them,
       and the events.
    """
    try:
        with session.begin_nested():
            taken = dict((key, ident) for ident, key in session.execute(_insert_ignoring_taken(session), [
                dict(workspace_id=plan.enrollment.workspace_id, enrollment_id=plan.enrollment.id,
                     step_index=plan.step.position, step_id=plan.step.id, dedupe_key=plan.dedupe_key,
                     channel_id=plan.channel.id, address=plan.address, status=SendStatus.PENDING.value,
                     created_at=now, updated_at=now) for plan in plans]).all())
            ours = [plan for plan in plans if plan.dedupe_key in taken]
            if len(ours) < len(plans):
                done.counts["skip_minted"] += len(plans) - len(ours)
            if not ours:
                return True
            session.execute(moves.MINT_EACH, [
                {"enrollment_id": plan.enrollment.id, "step": plan.step.position, "send_id": taken[plan.dedupe_key],
                 "now": now} for plan in ours])
            waiting = dict(session.execute(select(Enrollment.id, Enrollment.waiting_send_id).where(
                Enrollment.id.in_([plan.enrollment.id for plan in ours]))).all())
            moved = [plan for plan in ours if waiting.get(plan.enrollment.id) == taken[plan.dedupe_key]]
            stale = [taken[plan.dedupe_key] for plan in ours if plan not in moved]
            if stale:
                session.execute(delete(Send).where(Send.id.in_(stale)))
                done.counts["skip_minted"] += len(stale)
            rows: list[ScheduledAction] = []
            for workspace_id in sorted({plan.enrollment.workspace_id for plan in moved}):
                of_workspace = [plan for plan in moved if plan.enrollment.workspace_id == workspace_id]
                rows += insert_actions(session, workspace_id, [
                    NewAction(action_type=action_type_for(plan.channel), channel=plan.channel,
                              target_key=plan.address, payload=plan.payload, publish_at=plan.publish_at,
                              thing_id=plan.dedupe_key) for plan in of_workspace],
                    now=now, actor=ctx.actor, origin=Origin.DRIP, reason="drip step minted")
            attempt_of = {row.thing_id: row.id for row in rows}
            session.execute(update(Send), [{"id": taken[plan.dedupe_key], "attempt_id": attempt_of[plan.dedupe_key]}
                                           for plan in moved])
            moves.record_events(session, [
                moves.event(plan.enrollment.id, moves.EnrollmentMove.MINT.value, None, SendStatus.PENDING.value,
                            now=now, actor=ctx.actor, reason=f"step {plan.step.position + 1} minted",
                            step=plan.step.position, send_id=taken[plan.dedupe_key]) for plan in moved])
    except (DuplicateActiveAction, PublishGuardViolation):
        return False
    done.new_rows.extend(rows)
    done.counts["minted"] += len(rows)
    return True


def _mint_one(session: Session, lookup: Lookup, enrollment: Enrollment, now: datetime, ctx: SendingContext,
              done: Sent, events: list[dict]) -> None:
    campaign = lookup.campaign(enrollment.campaign_id)
    if campaign.status != CampaignStatus.ACTIVE.value:
        done.counts["skip_campaign_" + campaign.status] += 1
        return
    steps = lookup.steps(enrollment.version_id)
    contact = lookup.contact(enrollment.contact_id)
    if contact.status != ContactStatus.SUBSCRIBED.value:
        exited = moves.exit_enrollment(session, enrollment.id, exit_reason=contact.status, now=now, actor=ctx.actor,
                                       reason=f"the contact is {contact.status}", step=enrollment.current_step)
        done.counts["exited"] += exited.ok
        return
    if enrollment.current_step >= len(steps):  # a version can only grow in content, never lose steps
        raise RuntimeError(f"enrollment #{enrollment.id} is at step {enrollment.current_step} of {len(steps)}")
    step = steps[enrollment.current_step]
    channel = lookup.step_channel(campaign, step)
    address = _address(channel, contact)
    email = address_kind(channel) == "email"
    if address is not None and email and not ctx.base_url:
        done.counts["skip_no_base_url"] += 1  # no unsubscribe link can be made: wait until there is one
        return
    send = Send(workspace_id=enrollment.workspace_id, enrollment_id=enrollment.id, step_index=step.position,
                step_id=step.id, dedupe_key=dedupe_key_of(enrollment.id, step.position), channel_id=channel.id,
                address=address, status=SendStatus.PENDING.value, created_at=now, updated_at=now)
    session.add(send)
    try:
        session.flush()
    except IntegrityError:
        raise _Undo() from None  # the dedupe key: this step was minted already
    minted = moves.mint(session, enrollment.id, step=step.position, send_id=send.id, now=now, actor=ctx.actor,
                        reason=f"step {step.position + 1} minted", record=False)
    if not minted.ok:
        raise _Undo()
    events.append(moves.record_send(send, now=now, actor=ctx.actor, reason=f"step {step.position + 1} minted"))
    if address is None:
        moves.record_events(session, [events.pop()])  # before the settle's own events
        _settle_one(session, lookup, send, enrollment, None,
                    Verdict(SendStatus.SKIPPED, f"no_address: the contact has no {address_kind(channel)} for "
                                                f"{channel.name}"), finished_at=now, now=now, ctx=ctx, done=done)
        return
    publish_at = _publish_at(lookup, enrollment, campaign, step, contact, now)
    problem = None
    try:
        payload = build_payload(campaign, step, channel, contact, address, enrollment.id, ctx)
    except TemplateProblem as exc:
        problem = exc.message
        payload = {"to": address, "error": problem, "drip": {"campaign_id": campaign.id,
                                                              "enrollment_id": enrollment.id, "step": step.position}}
    new = NewAction(action_type=action_type_for(channel), channel=channel, target_key=address, payload=payload,
                    publish_at=publish_at, thing_id=send.dedupe_key)
    try:
        row = insert_action(session, enrollment.workspace_id, new, now=now, actor=ctx.actor, origin=Origin.DRIP,
                            reason=f"step {step.position + 1} of campaign #{campaign.id}")
    except (DuplicateActiveAction, PublishGuardViolation):
        raise _Undo() from None
    session.execute(update(Send).where(Send.id == send.id).values(attempt_id=row.id))
    send.attempt_id = row.id
    if problem is not None:
        moves.record_events(session, [events.pop()])
        lifecycle.miss(session, row.id, code=FailureCode.CONTENT_ERROR, message=problem, now=now, actor=ctx.actor)
        _settle_one(session, lookup, send, enrollment, row.id,
                    Verdict(SendStatus.FAILED, f"send_failed: {problem}", go_on=False, failure="send_failed"),
                    finished_at=now, now=now, ctx=ctx, done=done)
        return
    done.new_rows.append(row)
    done.counts["minted"] += 1


# -- settling ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What an ended attempt means for its send and its enrollment."""

    status: SendStatus | None  # None: not settled (held, or re-minted)
    reason: str
    go_on: bool = True  # advance (or complete); False: on_failure decides, or the enrollment exits
    failure: str | None = None  # the exit reason when on_failure says exit
    exits: bool = False  # the enrollment exits whatever on_failure says
    hold: bool = False


def verdict(attempt: ScheduledAction) -> Verdict:
    """The table in this module's docstring, for one attempt in a terminal status."""
    if attempt.status == Status.PUBLISHED.value:
        return Verdict(SendStatus.SENT, "sent" + (f" ({attempt.provider_id})" if attempt.provider_id else ""))
    if attempt.status == Status.FAILED.value:
        code = attempt.failure_code
        if code in (FailureCode.OUTCOME_UNKNOWN.value, FailureCode.WORKER_LOST.value):
            return Verdict(SendStatus.UNKNOWN, f"outcome unknown, counted as sent: {attempt.last_error or code}")
        if code == FailureCode.DUPLICATE_OF_PUBLISHED.value:
            return Verdict(SendStatus.SENT, "a sibling attempt was already published")
        if code == FailureCode.MISSED_WINDOW.value:
            return Verdict(SendStatus.MISSED, f"missed_window: {attempt.last_error or 'too late to send'}",
                           go_on=False, failure="missed_window")
        return Verdict(SendStatus.FAILED, f"send_failed: {attempt.last_error or code}", go_on=False,
                       failure="send_failed")
    kind = attempt.cancel_kind
    if kind == CancelKind.EXITED.value:
        return Verdict(SendStatus.EXITED, "cancelled: the enrollment ended", go_on=False, exits=True)
    if kind == CancelKind.PAUSED.value:
        return Verdict(None, "held by a pause", hold=True)
    if kind == CancelKind.PERSON.value:
        return Verdict(SendStatus.SKIPPED, "cancelled_by_person")
    return Verdict(SendStatus.SKIPPED, f"cancelled ({kind})")


_TERMINAL = (Status.PUBLISHED.value, Status.FAILED.value, Status.CANCELLED.value)


def settle_ended(session: Session, send_ids: list[int], *, now: datetime, ctx: SendingContext) -> Sent:
    """Settle each pending send of ``send_ids`` whose attempt has ended, by :func:`verdict`.

    The sends are locked first (PostgreSQL; SQLite's writer lock is held), then their attempts
    read afresh: an admin's retry that requeued an attempt meanwhile (it locks the send
    first too) is seen, and that send waits for the attempt's next end.
    """
    done = Sent()
    if not send_ids:
        return done
    query = (select(Send).where(Send.id.in_(send_ids), Send.status == literal_column("'pending'"))
             .order_by(Send.id).execution_options(populate_existing=True))
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    sends = list(session.scalars(query))
    attempts = {row.id: row for row in session.scalars(
        select(ScheduledAction).where(ScheduledAction.id.in_([s.attempt_id for s in sends if s.attempt_id])))}
    enrollments = {e.id: e for e in session.scalars(
        select(Enrollment).where(Enrollment.id.in_([s.enrollment_id for s in sends])))}
    lookup = Lookup(session)
    lookup.contacts(e.contact_id for e in enrollments.values())
    for send in sends:
        attempt = attempts.get(send.attempt_id)
        if attempt is None or attempt.status not in _TERMINAL:
            done.counts["skip_not_ended"] += 1
            continue
        enrollment = enrollments[send.enrollment_id]
        said = verdict(attempt)
        if said.hold:
            campaign = lookup.campaign(enrollment.campaign_id)
            if campaign.status == CampaignStatus.PAUSED.value:
                held = moves.hold_send(session, send, attempt_id=attempt.id, reason=said.reason, now=now,
                                       actor=ctx.actor)
                done.counts["held"] += held.ok
            else:
                done.add(remint(session, [send.id], now=now, ctx=ctx))
            continue
        try:
            with session.begin_nested():
                _settle_one(session, lookup, send, enrollment, attempt.id, said,
                            finished_at=attempt.finished_at or now, now=now, ctx=ctx, done=done)
        except ValueError as exc:  # the next step's stored delay or window no longer reads
            done.error("send_id", send.id, exc)
    return done


def _settle_one(session: Session, lookup: Lookup, send: Send, enrollment: Enrollment, attempt_id: int | None,
                said: Verdict, *, finished_at: datetime, now: datetime, ctx: SendingContext, done: Sent) -> None:
    """Settle ``send`` as the verdict says and move its enrollment on: advance, complete, or exit."""
    settled = moves.settle_send(session, send, attempt_id=attempt_id, to_status=said.status, reason=said.reason,
                                finished_at=finished_at, now=now, actor=ctx.actor)
    if not settled.ok:
        done.counts["skip_settled"] += 1  # another pass settled it first
        return
    done.counts["settled_" + said.status.value] += 1
    campaign = lookup.campaign(enrollment.campaign_id)
    if said.exits:
        contact = lookup.contact(enrollment.contact_id)
        why = contact.status if contact.status != ContactStatus.SUBSCRIBED.value else (
            "archived" if campaign.status == CampaignStatus.ARCHIVED.value else "stopped")
        exited = moves.exit_enrollment(session, enrollment.id, exit_reason=why, now=now, actor=ctx.actor,
                                       reason=said.reason, step=send.step_index)
        done.counts["exited"] += exited.ok
        return
    if not said.go_on and campaign.on_failure == OnFailure.EXIT.value:
        exited = moves.exit_enrollment(session, enrollment.id, exit_reason=said.failure or "send_failed", now=now,
                                       actor=ctx.actor, reason=said.reason, step=send.step_index)
        done.counts["exited"] += exited.ok
        return
    move_on(session, lookup, enrollment, send, finished_at=finished_at, now=now, ctx=ctx, done=done,
            reason=said.reason if said.go_on else f"skipped: {said.reason}")


def move_on(session: Session, lookup: Lookup, enrollment: Enrollment, send: Send, *, finished_at: datetime,
            now: datetime, ctx: SendingContext, done: Sent, reason: str) -> None:
    """The optimistic advance: on to the next step, timed from ``finished_at``, or complete after the last."""
    steps = lookup.steps(enrollment.version_id)
    step = send.step_index
    if step + 1 >= len(steps):
        outcome = moves.complete(session, enrollment.id, step=step, send_id=send.id, now=now, actor=ctx.actor,
                                 reason=reason)
        done.counts["completed" if outcome.ok else "skip_moved"] += 1
        return
    campaign = lookup.campaign(enrollment.campaign_id)
    contact = lookup.contact(enrollment.contact_id)
    zone, zone_note = lookup.zone_of(contact)
    following = steps[step + 1]
    planned = plan_step(finished_at, following.delay, window_of(following.send_window, campaign.send_window), zone,
                        zone_note=zone_note)
    outcome = moves.advance(session, enrollment.id, step=step, send_id=send.id, anchor_at=finished_at,
                            next_send_at=planned.instant, schedule_note=planned.note,
                            held_by_window=planned.held_by_window, now=now, actor=ctx.actor, reason=reason)
    done.counts["advanced" if outcome.ok else "skip_moved"] += 1
    if outcome.ok:
        done.moved_on.add(enrollment.id)


# -- holding and re-minting --------------------------------------------------------------------


def remint(session: Session, send_ids: list[int], *, now: datetime, ctx: SendingContext) -> Sent:
    """Give each held send of ``send_ids`` (or a pending one whose attempt was paused) a new attempt.

    The new attempt carries the old one's rendered payload and points back to it
    (``rescheduled_from``); it is timed from now into the step's window. A send whose
    enrollment ended meanwhile is settled as exited instead; one whose campaign is still
    paused is left held.
    """
    done = Sent()
    if not send_ids:
        return done
    query = (select(Send).where(Send.id.in_(send_ids), Send.status.in_([SendStatus.HELD.value,
                                                                         SendStatus.PENDING.value]))
             .order_by(Send.id).execution_options(populate_existing=True))
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    sends = list(session.scalars(query))
    attempts = {row.id: row for row in session.scalars(
        select(ScheduledAction).where(ScheduledAction.id.in_([s.attempt_id for s in sends if s.attempt_id])))}
    enrollments = {e.id: e for e in session.scalars(
        select(Enrollment).where(Enrollment.id.in_([s.enrollment_id for s in sends])))}
    lookup = Lookup(session)
    lookup.contacts(e.contact_id for e in enrollments.values())
    for send in sends:
        old = attempts.get(send.attempt_id)
        if old is None or old.status != Status.CANCELLED.value or old.cancel_kind != CancelKind.PAUSED.value:
            done.counts["skip_not_held"] += 1
            continue
        enrollment = enrollments[send.enrollment_id]
        campaign = lookup.campaign(enrollment.campaign_id)
        contact = lookup.contact(enrollment.contact_id)
        if enrollment.status != EnrollmentStatus.ACTIVE.value or contact.status != ContactStatus.SUBSCRIBED.value:
            _settle_one(session, lookup, send, enrollment, old.id,
                        Verdict(SendStatus.EXITED, "cancelled: the enrollment ended", go_on=False, exits=True),
                        finished_at=old.finished_at or now, now=now, ctx=ctx, done=done)
            continue
        if campaign.status != CampaignStatus.ACTIVE.value:
            done.counts["skip_still_paused"] += 1
            continue
        zone, _ = lookup.zone_of(contact)
        step = lookup.steps(enrollment.version_id)[send.step_index]
        publish_at = into_window(now, window_of(step.send_window, campaign.send_window), zone).instant
        channel = lookup.channel(old.channel_id)
        new = NewAction(action_type=old.action_type, channel=channel, target_key=old.target_key,
                        payload=old.payload, publish_at=publish_at, thing_id=old.thing_id)
        try:
            with session.begin_nested():
                row = insert_action(session, old.workspace_id, new, now=now, actor=ctx.actor, origin=Origin.DRIP,
                                    rescheduled_from_id=old.id, reason=f"resumed: replaces #{old.id}")
                moved = moves.remint_send(session, send, old_attempt_id=old.id, new_attempt_id=row.id,
                                          reason=f"resumed as #{row.id}", now=now, actor=ctx.actor)
                if not moved.ok:
                    raise _Undo()
        except (_Undo, DuplicateActiveAction, PublishGuardViolation):
            done.counts["skip_reminted"] += 1
            continue
        done.new_rows.append(row)
        done.counts["reminted"] += 1
    return done


def cancel_queued_attempts(session: Session, sends: list[Send], *, kind: CancelKind, reason: str, now: datetime,
                           actor: Actor) -> int:
    """Cancel the queued attempts of ``sends`` (those being sent finish; the pre-send check stops any later claim)."""
    cancelled = 0
    attempt_ids = [send.attempt_id for send in sends if send.attempt_id is not None]
    if not attempt_ids:
        return 0
    queued = session.execute(select(ScheduledAction.id, ScheduledAction.workspace_id).where(
        ScheduledAction.id.in_(attempt_ids), ScheduledAction.status == literal_column("'queued'"))).all()
    for attempt_id, workspace_id in queued:
        outcome = lifecycle.cancel(session, attempt_id, kind=kind, now=now, actor=actor, workspace_id=workspace_id,
                                   reason=reason)
        cancelled += outcome.ok
    return cancelled
