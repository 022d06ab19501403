"""``drip-advance``, the drip clock job: everything due up to now, idempotently, in short batches.

One pass, in this order, each step in batches of :data:`BATCH`, each batch one short write
transaction of its own (read first, then written under the guards):

1. **Follow campaign changes.** A paused campaign's queued attempts are cancelled (kind
   ``paused``) and their sends held; an archived campaign's active enrollments exit
   (``archived``). The shells do this right after the pause or archive; the pass finishes
   any that was interrupted.
2. **Settle** every pending send whose attempt has ended (the table in
   :mod:`models.drips.sending`): the enrollment advances, completes, skips or exits, and
   its next step is timed from the attempt's ``finished_at``.
3. **Re-mint** the held sends of active campaigns: a new attempt each, pointing back,
   timed from now into the step's window. A held send whose enrollment ended meanwhile
   (removed, unsubscribed) is settled as exited instead, whatever its campaign.
4. **Mint** the current step of every active enrollment with ``next_send_at <= now +
   tick_interval``, in ``(next_send_at, id)`` order, whose campaign is active.

Rows due before the next tick are handed to the queue with their ``eta`` as each batch
commits (``announce``, the runtime's ``announce_due``), so a 09:00 step fires at 09:00, not
09:01. Any number of passes may run at once (several consumers, a restart inside a minute):
the send's unique dedupe key and the enrollment's guarded moves let one of them win each
step and the others change nothing. The work lists come from partial indexes (due
enrollments not yet minted, pending sends, held sends), so past sends cost nothing.
"""

from collections import Counter
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import literal_column, or_, select
from sqlalchemy.engine import Engine

from models.actions.tables import CancelKind, ScheduledAction, Status
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.keyset import after as keyset_after
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.secrets_box import SecretBox
from models.drips import enrollments as moves
from models.drips.operations import end_enrollments
from models.drips.sending import SendingContext, Sent, cancel_queued_attempts, mint_due, remint, settle_ended
from models.drips.tables import Campaign, CampaignStatus, Enrollment, Send
from models.timing.clock import Clock

JOB_KIND = "drip-advance"
BATCH = 200
_TERMINAL = (Status.PUBLISHED.value, Status.FAILED.value, Status.CANCELLED.value)


def _campaign(query, campaign_id: int | None):
    return query if campaign_id is None else query.where(Campaign.id == campaign_id)


def hold_paused(session, send_ids: list[int], *, now: datetime, ctx: SendingContext) -> Counter:
    """Cancel the queued attempts of these sends (kind ``paused``) and hold the sends, in the caller's transaction."""
    counts: Counter = Counter()
    sends = list(session.scalars(select(Send).where(Send.id.in_(send_ids),
                                                    Send.status == literal_column("'pending'"))))
    cancelled = cancel_queued_attempts(session, sends, kind=CancelKind.PAUSED, reason="held: the campaign was paused",
                                       now=now, actor=ctx.actor)
    counts["cancelled_paused"] += cancelled
    paused = {row.id for row in session.scalars(select(ScheduledAction).where(
        ScheduledAction.id.in_([s.attempt_id for s in sends if s.attempt_id]),
        ScheduledAction.status == Status.CANCELLED.value, ScheduledAction.cancel_kind == CancelKind.PAUSED.value))}
    for send in sends:
        if send.attempt_id in paused:
            counts["held"] += moves.hold_send(session, send, attempt_id=send.attempt_id, reason="held by a pause",
                                              now=now, actor=ctx.actor).ok
    return counts


def _batches(find: Callable, apply: Callable, *, clock: Clock, engine: Engine | None,
             announce: Callable | None) -> Sent:
    """Read a batch of ids with ``find(session, after)``, apply it in a write transaction, until none is left."""
    total = Sent()
    after = None
    while True:
        with read_session(engine) as session:
            batch = find(session, after)
        if not batch:
            return total
        after = batch[-1][1:] if isinstance(batch[-1], tuple) else batch[-1]
        ids = [item[0] if isinstance(item, tuple) else item for item in batch]
        with write_session(engine) as session:
            done = apply(session, ids, clock.now())
        if announce and done.new_rows:
            announce(done.new_rows)
        total.add(done)
        if len(batch) < BATCH:
            return total


def follow_campaign_changes(ctx: SendingContext, *, clock: Clock, engine: Engine | None = None,
                            campaign_id: int | None = None) -> Counter:
    """Step 1: hold a paused campaign's queued sends; exit an archived campaign's active enrollments."""
    counts: Counter = Counter()

    def paused_sends(session, after):
        query = (select(Send.id).join(Enrollment, Enrollment.id == Send.enrollment_id)
                 .join(Campaign, Campaign.id == Enrollment.campaign_id)
                 .join(ScheduledAction, ScheduledAction.id == Send.attempt_id)
                 .where(Send.status == literal_column("'pending'"), Campaign.status == CampaignStatus.PAUSED.value,
                        ScheduledAction.status == Status.QUEUED.value))
        if after is not None:
            query = query.where(Send.id > after)
        return list(session.scalars(_campaign(query, campaign_id).order_by(Send.id).limit(BATCH)))

    def hold(session, ids, now):
        counts.update(hold_paused(session, ids, now=now, ctx=ctx))
        return Sent()

    _batches(paused_sends, hold, clock=clock, engine=engine, announce=None)

    def archived_enrollments(session, after):
        query = (select(Enrollment.id).join(Campaign, Campaign.id == Enrollment.campaign_id)
                 .where(Campaign.status == CampaignStatus.ARCHIVED.value, Enrollment.status == "active"))
        if after is not None:
            query = query.where(Enrollment.id > after)
        return list(session.scalars(_campaign(query, campaign_id).order_by(Enrollment.id).limit(BATCH)))

    def end(session, ids, now):
        ended = end_enrollments(session, ids, exit_reason="archived", reason="the campaign was archived",
                                actor=ctx.actor, now=now)
        counts["exited_archived"] += ended["exited"]
        counts["cancelled_exited"] += ended["cancelled"]
        return Sent()

    _batches(archived_enrollments, end, clock=clock, engine=engine, announce=None)
    return counts


def settle_pass(ctx: SendingContext, *, clock: Clock, engine: Engine | None = None,
                announce: Callable | None = None) -> Sent:
    """Step 2: settle every pending send whose attempt has ended."""

    def ended(session, after):
        query = (select(Send.id).join(ScheduledAction, ScheduledAction.id == Send.attempt_id)
                 .where(Send.status == literal_column("'pending'"), ScheduledAction.status.in_(_TERMINAL)))
        if after is not None:
            query = query.where(Send.id > after)
        return list(session.scalars(query.order_by(Send.id).limit(BATCH)))

    return _batches(ended, lambda session, ids, now: settle_ended(session, ids, now=now, ctx=ctx), clock=clock,
                    engine=engine, announce=announce)


def remint_pass(ctx: SendingContext, *, clock: Clock, engine: Engine | None = None, announce: Callable | None = None,
                campaign_id: int | None = None) -> Sent:
    """Step 3: a new attempt for every held send of an active campaign; a held send whose enrollment ended is settled."""

    def held(session, after):
        query = (select(Send.id).join(Enrollment, Enrollment.id == Send.enrollment_id)
                 .join(Campaign, Campaign.id == Enrollment.campaign_id)
                 .where(Send.status == literal_column("'held'"),
                        or_(Campaign.status == CampaignStatus.ACTIVE.value, Enrollment.status != "active")))
        if after is not None:
            query = query.where(Send.id > after)
        return list(session.scalars(_campaign(query, campaign_id).order_by(Send.id).limit(BATCH)))

    return _batches(held, lambda session, ids, now: remint(session, ids, now=now, ctx=ctx), clock=clock,
                    engine=engine, announce=announce)


def mint_pass(ctx: SendingContext, *, clock: Clock, engine: Engine | None = None,
              announce: Callable | None = None) -> Sent:
    """Step 4: mint the current step of every enrollment due before the next tick, in (next_send_at, id) order."""
    horizon = ctx.policy.due_soon_horizon(clock.now())

    def due(session, after):
        query = (select(Enrollment.id, Enrollment.next_send_at, Enrollment.id)
                 .join(Campaign, Campaign.id == Enrollment.campaign_id)
                 # Literal predicates, so SQLite sees its partial index (ix_drip_enrollments_due) applies.
                 .where(Enrollment.status == literal_column("'active'"), Enrollment.waiting_send_id.is_(None),
                        Enrollment.next_send_at <= horizon, Campaign.status == CampaignStatus.ACTIVE.value))
        if after is not None:
            query = query.where(keyset_after((Enrollment.next_send_at, Enrollment.id), after))
        return [tuple(row) for row in session.execute(
            query.order_by(Enrollment.next_send_at, Enrollment.id).limit(BATCH))]

    return _batches(due, lambda session, ids, now: mint_due(session, ids, now=now, ctx=ctx), clock=clock,
                    engine=engine, announce=announce)


def advance_pass(clock_run_id: int | None, *, clock: Clock, policy: Policy, secret_box: SecretBox,
                 base_url: str | None, engine: Engine | None = None, announce: Callable | None = None) -> dict:
    """The body of one drip-advance pass (see the module docstring); returns its summary."""
    ctx = SendingContext(secret_box=secret_box, base_url=base_url, policy=policy,
                         actor=Actor.job(JOB_KIND, clock_run_id))
    counts = follow_campaign_changes(ctx, clock=clock, engine=engine)
    done = Sent()
    for step in (settle_pass, remint_pass, mint_pass):
        done.add(step(ctx, clock=clock, engine=engine, announce=announce))
    counts.update(done.counts)
    summary = {key: counts[key] for key in sorted(counts)}
    summary["minted"] = counts["minted"]
    summary["settled"] = sum(n for key, n in counts.items() if key.startswith("settled_"))
    summary["errors"] = done.errors[:20]
    return summary


def run_drip_advance(*, clock: Clock, policy: Policy, secret_box: SecretBox, base_url: str | None,
                     engine: Engine | None = None, announce: Callable | None = None) -> dict:
    """One drip-advance pass, recorded as a ``drip-advance`` clock run; returns its summary."""
    return run_recorded(JOB_KIND, lambda run_id: advance_pass(run_id, clock=clock, policy=policy,
                                                              secret_box=secret_box, base_url=base_url,
                                                              engine=engine, announce=announce),
                        clock=clock, engine=engine)


def follow_campaign(campaign_id: int, *, clock: Clock, policy: Policy, secret_box: SecretBox, base_url: str | None,
                    actor: Actor, engine: Engine | None = None, announce: Callable | None = None) -> dict:
    """What a pause, resume or archive of ``campaign_id`` sets off, now, in batches (the shells call it after the move)."""
    ctx = SendingContext(secret_box=secret_box, base_url=base_url, policy=policy, actor=actor)
    counts = follow_campaign_changes(ctx, clock=clock, engine=engine, campaign_id=campaign_id)
    counts.update(remint_pass(ctx, clock=clock, engine=engine, announce=announce, campaign_id=campaign_id).counts)
    return dict(counts)
