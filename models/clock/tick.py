"""The scheduler tick: recover, sweep misfires, then hand every due row to a dispatcher.

One pass, in this order, each step in short transactions of its own:

1. **Recovery.** A row left ``submitted`` longer than ``policy.recovery_timeout`` belongs
   to a dead worker: it becomes ``failed`` (``worker_lost``; outcome unknown). It is never
   re-sent; an operator decides. A row whose provider can be asked what became of the send
   (Bluesky, Postmark) is asked first and settled by the answer (:mod:`models.clock.settling`).
2. **Misfire.** A queued row later than its action type allows (measured from
   ``next_attempt_at`` when set, else ``publish_at``; for a row its channel's limit holds
   back, without the time held) becomes ``failed`` (``missed_window``) without a send.
   Holds of rows that have moved on are cleared. Rows whose wing decides lateness itself (a
   recurring rule's misfire policy, ``Hooks.lateness_decided``) are left to its pre-send check.
3. **Drain.** Due rows (``queued``, ``publish_at <= now``, ``next_attempt_at`` empty or
   past) in ``(publish_at, id)`` order, ``policy.tick_batch_size`` at a time, each batch
   handed to the dispatcher, until none is due or ``policy.tick_budget`` is spent (a
   fan-out stops there so ticks never pile up; an inline pass, ``tickwork tick`` in
   immediate mode, drains everything due). The batches walk forward by a keyset cursor,
   so rows a queue has not reached yet are not handed over twice in one pass.
4. **Ahead.** Rows falling due before the next tick are handed over with their due time
   (``eta``), so they fire on time although the tick runs once a minute. A dispatcher
   that runs inline (immediate mode) takes only what is due now.
5. **Rollup.** The minutes that ended since the last rollup (a minute's grace for work
   still committing), and the hours they finish, are summed up into the summary: firing
   lateness, throughput, the backlog each tick found, the clock jobs' runs
   (:mod:`models.clock.rollup`); the health page draws its charts from them.

The tick decides nothing about sending: the claim in :mod:`models.dispatch` does, so
overlapping ticks, restarted consumers and several consumers never send a row twice.

Calling it: ``run_tick(clock=..., policy=..., dispatcher=...)`` from any code with an app
context (or an ``engine``); :class:`InlineDispatcher` runs every dispatch in the calling
process, which is what ``tickwork tick`` does in immediate mode and what tests use::

    from models.clock.tick import InlineDispatcher, run_tick
    from models.clock.dispatch import DispatchContext
    rt = runtime()
    summary = run_tick(clock=rt.clock, policy=rt.policy, dispatcher=InlineDispatcher(DispatchContext.of(rt)))
"""

import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from sqlalchemy import and_, func, not_, or_, select, union_all
from sqlalchemy.engine import Engine

from models.actions import lifecycle
from models.actions.tables import ActionHold, FailureCode, ScheduledAction, Status, queued_and_due_by
from models.core.keyset import after as keyset_after
from models.channels.tables import Channel
from models.clock import rollup, settling
from models.clock.runs import HAND_OVER_TAKEN, run_recorded
from models.clock.tables import ClockRun
from models.core.database import read_session, write_session
from models.clock.dispatch import DispatchContext, _delivery_with, chunks, dispatch_actions, is_late, late_message
from models.clock.pacing import current_hold_join, forget_stale_holds
from models.core.hooks import Hooks
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.secrets_box import SecretBox
from models.timing.clock import Clock

TICK = "tick"
RECOVER = "recover"
_SWEEP_BATCH = 200


class Dispatcher(Protocol):
    """Where the tick hands rows: a queue (fan-out) or this process (inline).

    A queue may also offer ``mark_handed(clock_run_id)``: queue a marker behind the tasks just
    handed over, which records on the run (:func:`models.clock.runs.mark_hand_over_taken`) when a
    consumer takes it, that is once every task before it has been taken.
    """

    inline: bool

    def dispatch_now(self, action_ids: list[int], clock_run_id: int) -> Counter:
        """Hand over rows that are due; returns per-outcome counts (or ``{"queued": n}``)."""

    def dispatch_at(self, due: list[tuple[int, datetime]], clock_run_id: int) -> None:
        """Hand over rows due before the next tick, each with its due time."""


class InlineDispatcher:
    """Dispatch the due rows here and now, a chunk after another; nothing is scheduled ahead."""

    inline = True

    def __init__(self, context: DispatchContext):
        self.context = context

    def dispatch_now(self, action_ids: list[int], clock_run_id: int) -> Counter:
        counts: Counter = Counter()
        for chunk in chunks(action_ids, self.context.policy.dispatch_chunk):
            counts.update(result.label for result in dispatch_actions(chunk, self.context, clock_run_id=clock_run_id))
        return counts

    def dispatch_at(self, due, clock_run_id) -> None:
        raise RuntimeError("an inline dispatcher never schedules ahead")


def _after(cursor: tuple[datetime, int] | None):
    return True if cursor is None else keyset_after((ScheduledAction.publish_at, ScheduledAction.id), cursor)


def due_batch(session, now: datetime, *, after: tuple[datetime, int] | None, limit: int) -> list[tuple[int, datetime]]:
    """The next ``limit`` due rows after the cursor, in ``(publish_at, id)`` order: (id, publish_at).

    After a cursor ``(x, y)`` the rows are read as two ranges of the queued index, those due at ``x`` with an id
    above ``y`` and those due after ``x``, not as one ``publish_at > x OR (publish_at = x AND id > y)``: with that
    condition both databases walk the index from ``x``'s first row, so in a backlog due at one instant (a campaign
    to a million contacts) each batch read again every row handed before it, and a tick's hand-over grew with
    the square of the backlog.
    """
    order = (ScheduledAction.publish_at, ScheduledAction.id)
    due = select(ScheduledAction.id, ScheduledAction.publish_at).where(queued_and_due_by(now))
    if after is None:
        rows = session.execute(due.order_by(*order).limit(limit)).all()
    else:
        at, ident = after
        same = due.where(ScheduledAction.publish_at == at, ScheduledAction.id > ident).order_by(*order).limit(limit)
        later = due.where(ScheduledAction.publish_at > at).order_by(*order).limit(limit)
        both = union_all(select(same.subquery()), select(later.subquery())).subquery()
        rows = session.execute(select(both.c.id, both.c.publish_at).order_by(both.c.publish_at, both.c.id)
                               .limit(limit)).all()
    return [(row.id, row.publish_at) for row in rows]


def _late_clause(now: datetime, policy: Policy):
    """Later than the row's type allows, from its lateness anchor: a current hold's ``late_from``, else
    ``next_attempt_at``, else ``publish_at`` (the query outer-joins the row's current hold)."""
    anchor = func.coalesce(ActionHold.late_from, ScheduledAction.next_attempt_at, ScheduledAction.publish_at)
    typed = list(policy.max_lateness.items())
    clauses = [and_(ScheduledAction.action_type == kind, anchor < now - allowed) for kind, allowed in typed]
    others = anchor < now - policy.default_max_lateness
    if typed:
        others = and_(not_(ScheduledAction.action_type.in_([kind for kind, _ in typed])), others)
    clauses.append(others)
    return or_(*clauses)


def sweep_misfires(*, now: datetime, policy: Policy, actor: Actor, engine: Engine | None = None,
                   exempt_origins: Iterable[str] = ()) -> int:
    """Fail every queued row later than its window (``missed_window``); returns how many.

    Holds of rows that have moved on are cleared first, so the ones left are current. Rows of
    ``exempt_origins`` are left to their wing's pre-send check, which decides their lateness.
    """
    with write_session(engine) as session:
        forget_stale_holds(session)
    missed = 0
    cursor = None
    exempt = sorted(exempt_origins)
    while True:
        with read_session(engine) as session:
            candidates = session.execute(
                select(ScheduledAction, ActionHold.late_from)
                .outerjoin(ActionHold, current_hold_join())
                .where(ScheduledAction.status == Status.QUEUED.value, ScheduledAction.publish_at <= now,
                       _late_clause(now, policy), _after(cursor),
                       *([ScheduledAction.origin.not_in(exempt)] if exempt else []))
                .order_by(ScheduledAction.publish_at, ScheduledAction.id)
                .limit(_SWEEP_BATCH)
            ).all()
        if not candidates:
            return missed
        cursor = (candidates[-1][0].publish_at, candidates[-1][0].id)
        with write_session(engine) as session:
            for row, late_from in candidates:
                if not is_late(row, now, policy, late_from):
                    continue
                moved = lifecycle.miss(session, row.id, code=FailureCode.MISSED_WINDOW,
                                       message=late_message(row, now, policy, late_from), now=now, actor=actor)
                missed += moved.ok
        if len(candidates) < _SWEEP_BATCH:
            return missed


def recover_lost_workers(*, now: datetime, policy: Policy, actor: Actor, engine: Engine | None = None,
                         secret_box: SecretBox | None = None, hooks: Hooks | None = None) -> int:
    """Fail every row left ``submitted`` past the recovery timeout (``worker_lost``); returns how many.

    The cut-off rides on each guarded UPDATE, so a worker that finishes meanwhile keeps
    its result; a worker that finishes later with a success still publishes (its claim
    token matches). With the ``secret_box``, rows of channels whose provider can be asked
    what became of a send are asked first and settled by the answer instead
    (:func:`models.clock.settling.settle_in_doubt`); they count as recovered.
    """
    cutoff = now - policy.recovery_timeout
    recovered = 0
    asked_kinds: list[str] = []
    if secret_box is not None:
        asked_kinds = settling.settling_kinds()
        settled = settling.settle_in_doubt(now=now, cutoff=cutoff, policy=policy, actor=actor, secret_box=secret_box,
                                           delivery_of=_delivery_with, engine=engine, hooks=hooks)
        recovered += settled["published"] + settled["requeued"] + settled["failed"]
    while True:
        with read_session(engine) as session:
            stuck = list(session.execute(
                select(ScheduledAction.id, ScheduledAction.submitted_at)
                .where(ScheduledAction.status == Status.SUBMITTED.value, ScheduledAction.submitted_at <= cutoff,
                       *([ScheduledAction.channel_id.not_in(select(Channel.id).where(Channel.kind.in_(asked_kinds)))]
                         if asked_kinds else []))
                .order_by(ScheduledAction.submitted_at, ScheduledAction.id)
                .limit(_SWEEP_BATCH)
            ).all())
        if not stuck:
            return recovered
        moved_here = 0
        with write_session(engine) as session:
            for row in stuck:
                moved = lifecycle.fail(
                    session, row.id, code=FailureCode.WORKER_LOST, submitted_before=cutoff, now=now, actor=actor,
                    message=(f"worker lost; outcome unknown: submitted at {row.submitted_at:%Y-%m-%d %H:%M:%S}Z "
                             f"and no result within {int(policy.recovery_timeout.total_seconds())}s"),
                )
                moved_here += moved.ok
        recovered += moved_here
        if len(stuck) < _SWEEP_BATCH or moved_here == 0:
            return recovered


def due_ahead(session, now: datetime, horizon: datetime) -> Iterable[tuple[int, datetime]]:
    """Queued rows falling due in (now, horizon]: (id, due time), in (publish_at, id) order."""
    rows = session.execute(
        select(ScheduledAction.id, ScheduledAction.publish_at, ScheduledAction.next_attempt_at)
        .where(queued_and_due_by(horizon), not_(queued_and_due_by(now)))
        .order_by(ScheduledAction.publish_at, ScheduledAction.id)
    ).all()
    return [(row.id, max(row.publish_at, row.next_attempt_at or row.publish_at)) for row in rows]


def earlier_hand_over(session, clock_run_id: int, now: datetime, policy: Policy
                      ) -> tuple[tuple[datetime, int], int] | None:
    """Where to go on from: the cursor of the latest tick whose hand-over's marker a consumer has not taken yet,
    and that marker's run; None when the queue has caught up (or the marker is older than the recovery timeout)."""
    last = session.execute(
        select(ClockRun.summary).where(ClockRun.kind == TICK, ClockRun.id < clock_run_id,
                                       ClockRun.finished_at.is_not(None), ClockRun.started_at >= now - policy.recovery_timeout)
        .order_by(ClockRun.started_at.desc(), ClockRun.id.desc()).limit(1)).scalar()
    if not last or not last.get("handed_through") or not last.get("hand_over_run"):
        return None
    marker = session.scalar(select(ClockRun.summary).where(ClockRun.id == last["hand_over_run"],
                                                          ClockRun.started_at >= now - policy.recovery_timeout))
    if not marker or marker.get(HAND_OVER_TAKEN, True):
        return None
    at, ident = last["handed_through"]
    return (datetime.fromisoformat(at), int(ident)), int(last["hand_over_run"])


def tick_pass(clock_run_id: int, *, clock: Clock, policy: Policy, dispatcher: Dispatcher, engine: Engine | None = None,
              hooks: Hooks | None = None, secret_box: SecretBox | None = None) -> dict:
    """The body of one tick (see the module docstring); returns its summary."""
    actor = Actor.job(TICK, clock_run_id)
    with read_session(engine) as session:
        backlog_at_start, _ = rollup.backlog(session, clock.now())
    recovered = recover_lost_workers(now=clock.now(), policy=policy, actor=actor, engine=engine, secret_box=secret_box,
                                     hooks=hooks)
    missed = sweep_misfires(now=clock.now(), policy=policy, actor=actor, engine=engine,
                            exempt_origins=hooks.lateness_decided if hooks else ())
    started = time.monotonic()
    budget = policy.tick_budget.total_seconds()
    outcomes: Counter = Counter()
    due = batches = 0
    cursor = None
    marker_run = None
    marks = not dispatcher.inline and hasattr(dispatcher, "mark_handed")
    if marks:
        with read_session(engine) as session:
            earlier = earlier_hand_over(session, clock_run_id, clock.now(), policy)
        if earlier is not None:
            cursor, marker_run = earlier
    resumed_after = cursor
    budget_spent = False
    while True:
        now = clock.now()
        with read_session(engine) as session:
            batch = due_batch(session, now, after=cursor, limit=policy.tick_batch_size)
        if not batch:
            break
        batches += 1
        due += len(batch)
        cursor = (batch[-1][1], batch[-1][0])
        outcomes.update(dispatcher.dispatch_now([ident for ident, _ in batch], clock_run_id))
        if len(batch) < policy.tick_batch_size:
            break
        if not dispatcher.inline and time.monotonic() - started >= budget:
            budget_spent = True
            break
    if marks and due:
        dispatcher.mark_handed(clock_run_id)
        marker_run = clock_run_id
    ahead = 0
    if not dispatcher.inline and not budget_spent:
        now = clock.now()
        with read_session(engine) as session:
            upcoming = list(due_ahead(session, now, policy.due_soon_horizon(now)))
        if upcoming:
            dispatcher.dispatch_at(upcoming, clock_run_id)
        ahead = len(upcoming)
    dispatched = sum(outcomes.values()) if dispatcher.inline else due
    rolled = rollup.record_rollups(clock_run_id, now=clock.now(), tick_kind=TICK, engine=engine)
    return {
        "due": due,
        "dispatched": dispatched,
        "scheduled_ahead": ahead,
        "missed": missed + sum(n for label, n in outcomes.items() if label.startswith("missed")),
        "recovered": recovered,
        "batches": batches,
        "budget_spent": budget_spent,
        "mode": "inline" if dispatcher.inline else "queue",
        # Where this hand-over ended and whose marker says the queue has taken it (see the module docstring).
        "handed_through": [cursor[0].isoformat(), cursor[1]] if cursor else None,
        "hand_over_run": marker_run,
        "resumed_after": [resumed_after[0].isoformat(), resumed_after[1]] if resumed_after else None,
        **({HAND_OVER_TAKEN: False} if marker_run == clock_run_id else {}),
        "outcomes": dict(sorted(outcomes.items())),
        "backlog": backlog_at_start,
        **rolled,
    }


def run_tick(*, clock: Clock, policy: Policy, dispatcher: Dispatcher, engine: Engine | None = None,
             hooks: Hooks | None = None, secret_box: SecretBox | None = None) -> dict:
    """Run one tick now, recorded as a ``tick`` clock run; returns its summary (with ``clock_run_id``).

    ``hooks`` tells the misfire sweep which origins' lateness their wing decides.
    """
    return run_recorded(
        TICK,
        lambda run_id: tick_pass(run_id, clock=clock, policy=policy, dispatcher=dispatcher, engine=engine,
                                 hooks=hooks, secret_box=secret_box),
        clock=clock,
        engine=engine,
    )


def run_recovery(*, clock: Clock, policy: Policy, engine: Engine | None = None,
                 secret_box: SecretBox | None = None, hooks: Hooks | None = None) -> dict:
    """Only dead-worker recovery, recorded as a ``recover`` clock run (the tick also does it first)."""
    return run_recorded(
        RECOVER,
        lambda run_id: {"recovered": recover_lost_workers(now=clock.now(), policy=policy,
                                                          actor=Actor.job(RECOVER, run_id), engine=engine,
                                                          secret_box=secret_box, hooks=hooks)},
        clock=clock,
        engine=engine,
    )
