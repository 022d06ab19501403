"""Claim due rows and send them: the dispatch worker's whole job, minus the queue.

A queue task carries a chunk of row ids (``policy.dispatch_chunk``, 500); one look reads them
all (the columns a claim and the wings' checks need, not the payload) and each of their channels
once, and each row then goes one of three ways::

    a provider that calls out over HTTP (webhook, postmark, twilio, mastodon) on a channel with no
    concurrency cap, in batches:
      1. take as many of the process's sending slots (``SendSlots``, ``policy.sends_in_flight``)
         as are free, up to the rows left (at least MIN_BATCH while sends of this chunk are out).
         Then one short write transaction for the batch: ask the pre-send checks the wings
         registered for its rows' origins (models.core.hooks; a check that says stop cancels
         the row instead of claiming it, so nothing ever moves submitted → cancelled); read the
         batch's channels' pauses; a row of a channel under a limit or paused is admitted alone
         (models.clock.pacing): no room holds it (queued → queued, due again when there is
         room, not an attempt), room gives it a slot; a late row is failed as missed_window
         (re-read under the write lock; time spent held by its channel's limit does not count;
         a wing whose check decides lateness itself, as a recurring rule's misfire policy does,
         judges its rows instead); the rest are claimed in one statement
         (``lifecycle.claim_batch``: queued → submitted, attempt + 1, a token of its own for
         each row). A claim refused for attempts → failed attempts_exhausted; a claim the
         publish guard refuses (a legacy duplicate) → failed duplicate_of_published.
      2. no transaction: every claimed row's request starts at once on a sending thread (it
         holds a slot); a row given a slot a moment ahead waits for it, and a row whose
         request starts more than RECHECK_AFTER after its claim reads its token again first:
         a row recovery declared lost meanwhile is not sent.
      3. one short write transaction for the outcomes that have come back, ``MIN_BATCH`` or
         so at a time (a dispatch with rows left and free slots claims first; with none it
         waits up to ``GATHER`` for answers): ``publish_batch``
         for the successes, the lifecycle's moves for the rest; a Retry-After also pauses the
         channel for every row; each row's slot is given back once its outcome is committed.

    a provider that keeps a session (smtp), or a channel with a concurrency cap, in lanes:
      the same pre-send checks, admission and claim for each row alone, just before its own
      send, then its outcome in a transaction of its own. One lane per connection for SMTP (a
      chunk's rows of one channel over one or two connections, ``CONNECTIONS_PER_CHUNK``, at
      least ten messages each) and at most as many lanes as a capped channel's cap, so the
      chunk itself never knocks on a full cap.

    a local provider (log), the chunk's rows together, in one write transaction:
      the same pre-send checks and misses, every on-time row claimed in one statement, the
      deliveries in one write, and the outcomes in one: the outbox entry and the published
      status commit together or not at all.

What a worker killed at any moment leaves in doubt ("worker lost; outcome unknown" once
recovery runs) is the rows it had claimed and not yet recorded: for rows that call out, at
most its slots (``sends_in_flight``) at once, every one of them with its request started or
about to start; a local chunk's transaction is all or nothing, so none. docs/architecture.md
("What a kill leaves in doubt") goes through each point.

| provider outcome        | the row                                                                 |
|-------------------------|-------------------------------------------------------------------------|
| success                 | published, with the provider's id; in the same transaction the wings mint what follows it (``Hooks.published``: a thread's next item), handed to the queue with it |
| not sent / retry later  | reverted to queued, next attempt backed off (Retry-After honoured, and the channel paused for everyone until then); failed attempts_exhausted once the budget is spent |
| permanent               | failed permanent, with the provider's words                             |
| unknown                 | asked of a provider that can be asked (models.clock.settling) first; then failed outcome_unknown, or retried with the same key if the provider honours one, or left submitted for recovery to ask again if the provider's answers lag |
| no room on the channel  | (before any claim) held: still queued, due when the channel has room; not an attempt, not lateness |
| channel needs reconnecting | (before any claim) failed reconnect_needed (``lifecycle.strand``): not an attempt, never sent |
| permanent, token refused as expired or revoked (``reconnect_needed``) | a channel with a refresh token: reverted like retry later (the channel paused ``RENEWAL_WAIT``), its token counted expired so the next refresh pass renews it; else failed reconnect_needed, and the channel marked "reconnect needed" in the same transaction |

Only the worker whose claim flipped the row talks to the provider, so a row is handed to
a provider at most once per claim, and a claim happens at most ``max_attempts`` times.
"""

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_, bindparam, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from models.actions import lifecycle
from models.actions.tables import ActionHold, CancelKind, FailureCode, ScheduledAction, Status
from models.timing.backoff import backoff_delay
from models.timing.clock import Clock
from models.channels.limits import limits_for
from models.channels.connections import RENEWAL_WAIT, mark_reconnect_needed, reconnect_message, renew_soon
from models.channels.tables import Channel, ChannelThrottle
from models.clock import pacing, settling
from models.core.database import read_session, write_session
from models.actions.guard import PublishGuardViolation
from models.core.moves import Actor, Refusal
from models.core.hooks import Hooks
from models.core.ids import ids_in
from models.core.policy import Policy
from models.core.runtime import Runtime
from models.channels.providers.http import channel_client
from models.channels.providers import Delivery, SendContext, SendOutcome, SendResult, is_local, provider_for
from models.core.secrets_box import SecretBox, SecretUnreadable
from models.media.sending import with_media

log = logging.getLogger("tickwork.dispatch")


class DispatchOutcome:
    """What one dispatch did to its row (the keys of a tick's per-outcome counts)."""

    PUBLISHED = "published"
    REVERTED = "reverted"  # back to queued, to be tried again
    FAILED = "failed"  # reason: the failure code
    MISSED = "missed"  # failed before any claim: reason missed_window / duplicate_of_published / attempts_exhausted / reconnect_needed
    SKIPPED = "skipped"  # nothing done: reason not_found / cancelled / submitted / published / failed / not_due / draining
    HELD = "held"  # still queued, due again when its channel has room: reason rate / concurrency / paused
    ASKING = "asking"  # still submitted, outcome unknown: its provider is asked again by recovery (models.clock.settling)
    STOPPED = "stopped"  # cancelled instead of claimed: a wing's pre-send check said no (reason: the cancel kind)
    ERROR = "error"  # not touched: the database refused its delivery; still queued for the next tick


# The reason of a row skipped because its process is stopping: still queued, for the next tick.
DRAINING = "draining"


@dataclass(frozen=True)
class DispatchResult:
    action_id: int
    outcome: str
    reason: str | None = None
    retry_at: datetime | None = None  # for a reverted or held row: when it is due again
    # For a published row: the rows its wing minted in the publish's transaction (the next item of a
    # thread), as (id, due at), for the shell to hand to the queue once committed.
    follow_ups: tuple[tuple[int, datetime], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.outcome}:{self.reason}" if self.reason else self.outcome


@dataclass(frozen=True)
class DispatchContext:
    """The collaborators a dispatch needs; the shells build it from the app's runtime.

    ``pool`` runs the lanes of rows that call out side by side (the consumer's sending
    threads); without one they run one after another in the calling thread. A pool's
    threads have no app context, so a context with a pool needs its ``engine``.
    ``draining`` says the process is stopping: a row not yet claimed is left queued for the
    next tick (skipped, reason ``draining``), so a stop waits only for the sends in flight.
    """

    clock: Clock
    policy: Policy
    secret_box: SecretBox
    engine: Engine | None = None
    hooks: Hooks = field(default_factory=Hooks)  # the wings' pre-send checks
    pool: Executor | None = None
    sleep: Callable[[float], None] = time.sleep  # how a lane waits for its channel's slot
    draining: Callable[[], bool] = lambda: False
    # The process's sends in flight, shared by every dispatch it runs (see SendSlots); with a
    # pool and none given, this dispatch alone counts against ``policy.sends_in_flight``.
    slots: "SendSlots | None" = None

    @classmethod
    def of(cls, runtime: Runtime, engine: Engine | None = None, pool: Executor | None = None,
           draining: Callable[[], bool] | None = None, slots: "SendSlots | None" = None) -> "DispatchContext":
        """The context of the app whose runtime this is."""
        if pool is not None and engine is None:
            raise ValueError("a dispatch with a pool of sending threads needs the engine: its threads have no app context")
        return cls(clock=runtime.clock, policy=runtime.policy, secret_box=runtime.secret_box, engine=engine,
                   hooks=runtime.hooks, pool=pool, draining=draining or (lambda: False), slots=slots)


class SendSlots:
    """The sends a consumer process may have in flight at once (``policy.sends_in_flight``), across its dispatches.

    A batch of rows that call out is claimed only once it holds a slot for each of its rows,
    so every row it claims starts its request at once; a slot is given back when the row's
    outcome is committed (or when the row was not claimed after all). So at any moment the
    rows a process has claimed and not yet recorded, the rows a kill would leave in doubt,
    number at most its slots.
    """

    def __init__(self, size: int):
        self.size = size
        self._free = size
        self._changed = threading.Condition()

    def take(self, wanted: int, *, at_least: int = 1, block: bool) -> int:
        """Up to ``wanted`` free slots, or none while fewer than ``at_least`` are free (with ``block``, waiting
        until they are); how many were taken."""
        at_least = max(1, min(at_least, wanted, self.size))
        with self._changed:
            while block and self._free < at_least:
                self._changed.wait()
            if self._free < at_least:
                return 0
            taken = min(wanted, self._free)
            self._free -= taken
            return taken

    def give(self, count: int) -> None:
        if count:
            with self._changed:
                self._free += count
                self._changed.notify_all()

    @property
    def free(self) -> int:
        return self._free



def is_late(action: ScheduledAction, now: datetime, policy: Policy, late_from: datetime | None = None) -> bool:
    """Later than its action type allows, measured from the next attempt when set, else publish_at.

    A row its channel holds back (``late_from``, from its current hold) is measured from
    there instead: the time it waited for the channel is not lateness.
    """
    return now - (late_from or action.due_at) > policy.lateness_allowed(action.action_type)


def late_message(action: ScheduledAction, now: datetime, policy: Policy, late_from: datetime | None = None) -> str:
    late = now - (late_from or action.due_at)
    allowed = policy.lateness_allowed(action.action_type)
    held = " (not counting the time its channel held it back)" if late_from else ""
    return (f"missed its window: {_duration(late)} late{held}, {action.action_type} may be at most "
            f"{_duration(allowed)} late")


def _duration(delta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def chunks(items: list, size: int) -> list[list]:
    """``items`` in lists of at most ``size``, in order: one dispatch task's worth each."""
    return [items[start:start + size] for start in range(0, len(items), size)]


# The columns the look reads: what the claim, the lateness test and the wings' pre-send checks
# read of a row. Its payload comes back with its claim; its history columns are not needed.
_LOOK_COLUMNS = tuple(ScheduledAction.__table__.c[name] for name in (
    "id", "workspace_id", "created_by_id", "action_type", "thing_id", "target_key", "channel_id", "publish_at",
    "status", "failure_code", "attempt_count", "next_attempt_at", "origin", "rescheduled_from_id",
    "recurring_schedule_id"))


_LOOK_NAMES = tuple(column.name for column in _LOOK_COLUMNS) + ("late_from",)


class LookedRow:
    """A row as the chunk's look read it (the columns of :data:`_LOOK_COLUMNS` as attributes, and ``due_at``).

    A plain result row underneath, not an ORM object: a chunk of hundreds is read many times a
    second. The wings' pre-send checks and the lateness test read it as they read a row.
    """

    def __init__(self, values):
        # By position: a row's ``_mapping`` builds a view of its keys for every row, a tenth of the look.
        self.__dict__.update(zip(_LOOK_NAMES, values))

    @property
    def due_at(self) -> datetime:
        """The instant lateness is measured from: the next attempt when set, else publish_at."""
        return self.next_attempt_at or self.publish_at


@dataclass
class _Looked:
    """A row as the chunk's look found it, with its channel and what limits it."""

    row: ScheduledAction | LookedRow
    channel: Channel
    late_from: datetime | None  # from the row's current hold, if it is held


def _look(action_ids: list[int], context: DispatchContext) -> dict[int, _Looked]:
    """The chunk's rows, their current holds and (once each) their channels, in two queries outside any write."""
    with read_session(context.engine) as session:
        found = [(LookedRow(values), values.late_from) for values in session.execute(_LOOK, {"action_ids": action_ids})]
        channel_ids = sorted({row.channel_id for row, _ in found})
        channels = {channel.id: channel for channel in session.scalars(_CHANNELS, {"channel_ids": channel_ids})}
        session.expunge_all()
    return {row.id: _Looked(row, channels[row.channel_id], late_from) for row, late_from in found}


def dispatch_actions(action_ids: list[int], context: DispatchContext, *,
                     clock_run_id: int | None = None) -> list[DispatchResult]:
    """Dispatch a chunk of rows (one queue task's worth); one result per id, in order.

    One look at all of them first. Rows whose channel delivers into our own database go
    through :func:`deliver_locally` together; the others are claimed in batches as sending
    slots free up and sent side by side (see the module docstring).
    """
    actor = Actor.job("dispatch", clock_run_id)
    ids = list(dict.fromkeys(action_ids))
    found = _look(ids, context)
    results: dict[int, DispatchResult] = {}
    local: list[tuple[LookedRow, Channel]] = []
    remote: list[_Looked] = []
    for action_id in ids:
        looked = found.get(action_id)
        if looked is None:
            results[action_id] = DispatchResult(action_id, DispatchOutcome.SKIPPED, "not_found")
        elif looked.row.status != Status.QUEUED.value:
            results[action_id] = DispatchResult(action_id, DispatchOutcome.SKIPPED, looked.row.status)
        elif context.draining():
            results[action_id] = DispatchResult(action_id, DispatchOutcome.SKIPPED, DRAINING)
        elif is_local(looked.channel.kind):
            local.append((looked.row, looked.channel))
        else:
            remote.append(looked)
    if local:
        results.update(_deliver_locally_or_row_by_row(local, context, actor))
    if remote:
        results.update(_send_remote(remote, context, actor))
    return [results[action_id] for action_id in ids]


def dispatch_action(action_id: int, context: DispatchContext, *, clock_run_id: int | None = None) -> DispatchResult:
    """Claim ``action_id`` and send it through its channel's provider; see the module docstring."""
    return dispatch_actions([action_id], context, clock_run_id=clock_run_id)[0]


# A chunk's messages for one SMTP channel go over at most this many connections, each
# carrying at least MESSAGES_PER_CONNECTION of them (a channel's concurrency cap bounds it too).
CONNECTIONS_PER_CHUNK = 2
MESSAGES_PER_CONNECTION = 10


def lanes_of(rows: list[_Looked]) -> list[list[_Looked]]:
    """The lanes a chunk's rows that call out are sent in.

    A channel whose provider keeps a session (SMTP) sends its rows over one or two
    connections, each carrying its share one message after another; a channel with a
    concurrency cap gets at most that many lanes, its rows dealt out in turn, so the chunk
    itself never knocks on a full cap; any other row has a lane of its own.
    """
    per_channel: dict[int, int] = {}
    for looked in rows:
        per_channel[looked.channel.id] = per_channel.get(looked.channel.id, 0) + 1
    lanes: list[list[_Looked]] = []
    shared: dict[int, list[list[_Looked]]] = {}
    dealt: dict[int, int] = {}
    for looked in rows:
        channel = looked.channel
        cap = limits_for(channel.kind, channel.config).concurrency
        if _keeps_a_session(channel.kind):
            width = min(CONNECTIONS_PER_CHUNK, -(-per_channel[channel.id] // MESSAGES_PER_CONNECTION), cap or 1000)
        else:
            width = cap
        if width is None:
            lanes.append([looked])
            continue
        mine = shared.setdefault(channel.id, [])
        turn = dealt.get(channel.id, 0)
        dealt[channel.id] = turn + 1
        if len(mine) < width:
            mine.append([])
            lanes.append(mine[-1])
        mine[turn % width].append(looked)
    return lanes


def _keeps_a_session(kind: str) -> bool:
    try:
        return hasattr(provider_for(kind), "open_session")
    except LookupError:
        return False


def _send_in_lanes(rows: list[_Looked], context: DispatchContext, actor: Actor,
                   kits: "dict[int, _Kit] | None" = None) -> dict[int, DispatchResult]:
    """Every lane to its end, side by side on the pool when there is one; a lane that raised raises here after the others finished."""
    lanes = lanes_of(rows)
    kits = kits or _kits(rows, context)
    if context.pool is None or len(lanes) < 2:
        results: dict[int, DispatchResult] = {}
        for lane in lanes:
            results.update(_send_lane(lane, context, actor, kits[lane[0].channel.id]))
        return results
    slots = context.slots or SendSlots(context.policy.sends_in_flight)
    futures = []
    for lane in lanes:  # a lane holds one of the process's sending slots while it runs
        slots.take(1, block=True)
        future = context.pool.submit(_send_lane, lane, context, actor, kits[lane[0].channel.id])
        future.add_done_callback(lambda _done: slots.give(1))
        futures.append(future)
    results, failure = {}, None
    for future in futures:
        try:
            results.update(future.result())
        except Exception as exc:  # re-raised once every lane is done, so none is abandoned half way
            failure = failure or exc
    if failure is not None:
        raise failure
    return results


def _send_lane(lane: list[_Looked], context: DispatchContext, actor: Actor,
               kit: "_Kit | None" = None) -> dict[int, DispatchResult]:
    """One lane: its rows one after another, through one provider session (``kit``: what the chunk read of its channel)."""
    kit = kit or _kits(lane[:1], context)[lane[0].channel.id]
    provider = kit.provider
    session = provider.open_session() if provider is not None and hasattr(provider, "open_session") else None
    results = {}
    try:
        for looked in lane:
            results[looked.row.id] = _dispatch_one(looked, kit.limits, context, actor, provider=session or provider,
                                                   http=kit.http, kit=kit)
    finally:
        if session is not None:
            session.close()
    return results


def _dispatch_one(looked: _Looked, limits, context: DispatchContext, actor: Actor, *, provider, http,
                  kit: "_Kit | None" = None) -> DispatchResult:
    """Admit (or hold), claim, send and record one row that calls out, from the chunk's look at it."""
    row, channel = looked.row, looked.channel
    if context.draining():  # checked before each claim: a stop waits for the sends in flight, not for the lane
        return DispatchResult(row.id, DispatchOutcome.SKIPPED, DRAINING)
    slot = None
    with write_session(context.engine) as session:
        now = context.clock.now()
        stopped = _stop_in(session, [row], context, now, actor, channels=[channel])
        if stopped:
            return stopped[row.id]
        gate = None
        # Read in the claim's transaction, not in the look: a pause another row's 429 set a
        # moment ago holds this row too.
        paused_until = session.scalar(_PAUSE_OF, {"channel_id": channel.id})
        if pacing.needs_admission(limits, paused_until, now):
            gate = lambda: pacing.admit(session, channel, limits, context.clock, in_line=looked.late_from is not None)  # noqa: E731
        claimed = _claim_in(session, row, now, context.policy, actor, late_from=looked.late_from, gate=gate,
                            channel=channel, hooks=context.hooks)
        if isinstance(claimed, DispatchResult):
            return claimed
        claimed, slot = claimed
    if slot is not None:
        _wait_for_slot(slot, channel, limits, context)
    if kit is None:
        result = send(claimed, channel, context, provider=provider, http=http)
    elif provider is None:
        result = SendResult(SendOutcome.NOT_SENT, f"no provider for channel kind {channel.kind!r}")
    elif kit.unreadable is not None:
        result = SendResult(SendOutcome.NOT_SENT, kit.unreadable)
    else:  # the channel's secret as the chunk decrypted it, once
        result = _call(provider, _delivery_with(claimed, channel, kit.secret), channel, context, http=http)
    return record_outcome(claimed, channel.kind, result, context, actor)


def _wait_for_slot(slot: datetime, channel: Channel, limits, context: DispatchContext) -> None:
    """Sleep until ``slot``; a slot the claim's commit overran by more than ``pacing.LATE_START`` is traded
    for the channel's next one (a slow commit on a busy box must not bunch sends at the provider)."""
    for _ in range(3):  # each retake is one short write; a box this slow sends at the last slot it got
        if limits.rate is None or context.clock.now() - slot <= pacing.LATE_START:
            break
        with write_session(context.engine) as session:
            slot = pacing.retake(session, channel.id, limits, context.clock)
    wait = (slot - context.clock.now()).total_seconds()
    if wait > 0:
        context.sleep(wait)


# A batch claim covers at most this many rows, however many slots are free: one write
# transaction's worth of claims and events.
MAX_BATCH = 64
# While some of its sends are out, a dispatch claims again only once this many slots are free
# (or as many rows as it has left), and with nothing to claim, having seen one outcome come back,
# it waits up to GATHER seconds for as many (or all its sends out), so claims and outcomes are
# committed a handful at a time, not one by one: the requests take far longer than the commits
# (20 ms against 1), so slots idle a moment rather than the consumer's CPU going to one
# transaction per row. Half the default sends in flight: 2,000 webhooks took 250 transactions
# instead of 530 with 8.
MIN_BATCH = 16
GATHER = 0.05
# A request that starts this long after its row's claim committed (it waited for its channel's
# slot, or for a sending thread) re-reads the row's token first. Recovery declares lost only rows
# claimed longer ago than the recovery timeout, so one that starts sooner cannot have been.
RECHECK_AFTER = 1.0


@dataclass
class _Kit:
    """What a chunk's rows of one channel share, read or built once per chunk: its limits, its provider,
    its pooled HTTP client and its decrypted secret (or why it cannot be read)."""

    channel: Channel
    limits: object
    provider: object | None
    http: object
    secret: str | None = None
    unreadable: str | None = None


def _kits(rows: list[_Looked], context: DispatchContext) -> dict[int, _Kit]:
    kits: dict[int, _Kit] = {}
    for looked in rows:
        channel = looked.channel
        if channel.id in kits:
            continue
        limits = limits_for(channel.kind, channel.config)
        try:
            provider = provider_for(channel.kind)
        except LookupError:
            provider = None
        kit = _Kit(channel, limits, provider, channel_client(channel.id, limits.concurrency or context.policy.sends_in_flight))
        try:
            kit.secret = channel.secret(context.secret_box)
        except SecretUnreadable as exc:
            kit.unreadable = str(exc)
        kits[channel.id] = kit
    return kits


def _in_lanes(looked: _Looked, kit: _Kit) -> bool:
    """Whether a row goes in a lane (a provider session, or a channel's concurrency cap) rather than a batch."""
    return kit.limits.concurrency is not None or _keeps_a_session(looked.channel.kind)


def _send_remote(rows: list[_Looked], context: DispatchContext, actor: Actor) -> dict[int, DispatchResult]:
    """The chunk's rows that call out: first the lanes (sessions, capped channels), then the rest in batches."""
    kits = _kits(rows, context)
    laned = [looked for looked in rows if _in_lanes(looked, kits[looked.channel.id])]
    batched = [looked for looked in rows if not _in_lanes(looked, kits[looked.channel.id])]
    results: dict[int, DispatchResult] = {}
    if laned:
        results.update(_send_in_lanes(laned, context, actor, kits))
    if batched:
        results.update(_send_in_batches(batched, kits, context, actor))
    return results


class _Inline:
    """A pool of no threads: each send runs in the calling thread, one at a time."""

    def submit(self, fn, *args):
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed back through the future, as a pool would
            future.set_exception(exc)
        return future


def _send_in_batches(rows: list[_Looked], kits: dict[int, _Kit], context: DispatchContext,
                     actor: Actor) -> dict[int, DispatchResult]:
    """Claim rows in batches of the sending slots free, start each batch's requests at once, record outcomes in groups.

    Each row is claimed with a token of its own once a slot is held for it, so its request
    starts as soon as the claim commits; the sending thread re-checks the token just before
    the request (a row recovery declared lost meanwhile is not sent). Outcomes are
    committed together, as many as have come back whenever this thread looks, and each
    frees its slot only once committed. Without a pool the batch is one row: claimed, sent
    and recorded before the next is claimed.
    """
    results: dict[int, DispatchResult] = {}
    if not rows:
        return results
    if context.pool is None:
        pool, slots = _Inline(), SendSlots(1)
    else:
        pool, slots = context.pool, context.slots or SendSlots(context.policy.sends_in_flight)
    pending = deque(rows)
    running: dict[Future, tuple] = {}
    failure: BaseException | None = None
    try:
        while pending or running:
            finished = [future for future in running if future.done()]
            enough = min(len(pending), MIN_BATCH)
            may_claim = pending and slots.free >= enough and failure is None
            if running and not may_claim and len(finished) < min(MIN_BATCH, len(running)):
                # Nothing to claim now: wait for a handful of outcomes rather than commit one or two at a time.
                finished = _gather(running)
            elif may_claim and len(finished) < MIN_BATCH:
                finished = []  # claim first; these outcomes are recorded with the next ones
            if finished:
                done = [(running.pop(future), future) for future in finished]
                try:
                    results.update(_record_sent(done, context, actor))
                finally:  # recorded, or left in doubt by a database that refused it: the slots are free again
                    slots.give(len(done))
                continue
            if not pending:
                continue
            if failure is not None or context.draining():
                results.update((looked.row.id, DispatchResult(looked.row.id, DispatchOutcome.SKIPPED, DRAINING))
                               for looked in pending)
                pending.clear()
                continue
            taken = slots.take(min(len(pending), MAX_BATCH), at_least=enough, block=not running)
            if not taken:
                continue
            if context.draining():  # the stop came while this dispatch waited for its slots: claim nothing more
                slots.give(taken)
                continue
            batch = [pending.popleft() for _ in range(taken)]
            try:
                claimed, decided = _claim_for_sending(batch, context, actor)
            except BaseException as exc:  # the batch changed nothing; the sends already out are still recorded
                slots.give(taken)
                failure = exc
                for looked in batch:
                    pending.appendleft(looked)
                continue
            results.update(decided)
            slots.give(taken - len(claimed))
            committed = time.monotonic()
            for looked, action, slot in claimed:
                kit = kits[looked.channel.id]
                running[pool.submit(_send_claimed, action, kit, slot, committed, context)] = (looked, action, kit)
    finally:
        if running:  # an error above: let the sends out finish and record them before raising
            done = [(running.pop(future), future) for future in list(wait(list(running)).done)]
            try:
                results.update(_record_sent(done, context, actor))
            finally:
                slots.give(len(done))
    if failure is not None:
        raise failure
    return results


def _gather(running: dict) -> list[Future]:
    """Wait for one send to come back, then up to GATHER more for MIN_BATCH of them (or all): the outcomes to record."""
    wait(list(running), return_when=FIRST_COMPLETED)
    deadline = time.monotonic() + GATHER
    while True:
        finished = [future for future in running if future.done()]
        left = deadline - time.monotonic()
        if len(finished) >= min(MIN_BATCH, len(running)) or left <= 0:
            return finished
        wait([future for future in running if not future.done()], timeout=min(left, 0.005),
             return_when=FIRST_COMPLETED)


def _claim_for_sending(batch: list[_Looked], context: DispatchContext, actor: Actor):
    """One write transaction for a batch: the pre-send checks, then for each row a miss, a hold or a claim.

    Rows of a channel under a limit or a pause are admitted one by one (``pacing.admit``, in
    this transaction); the others that are on time are claimed in one statement, each with a
    token of its own. Returns ``[(looked, claimed row, slot)]`` and the results of the rows
    not claimed.
    """
    decided: dict[int, DispatchResult] = {}
    claimed: list[tuple[_Looked, object, datetime | None]] = []
    policy, hooks = context.policy, context.hooks
    with write_session(context.engine) as session:
        now = context.clock.now()
        decided.update(_stop_in(session, [looked.row for looked in batch], context, now, actor,
                                channels=[looked.channel for looked in batch]))
        batch = [looked for looked in batch if looked.row.id not in decided]
        # Read in the claim's transaction, not in the look: a pause another row's 429 set a
        # moment ago holds these rows too.
        pauses = dict(session.execute(_PAUSES_OF, {"channel_ids": sorted({looked.channel.id for looked in batch})}).all())
        gated, plain, gated_ids = [], [], set()
        for looked in batch:
            limits = limits_for(looked.channel.kind, looked.channel.config)
            if pacing.needs_admission(limits, pauses.get(looked.channel.id), now):
                gated.append((looked, limits))
                gated_ids.add(looked.row.id)
            else:
                plain.append((looked, limits))
        if plain and session.connection().dialect.name == "postgresql":
            mine = set(session.scalars(_LOCK_QUEUED, {"action_ids": [looked.row.id for looked, _ in plain]}))
            decided.update((looked.row.id, DispatchResult(looked.row.id, DispatchOutcome.SKIPPED, "busy"))
                           for looked, _ in plain if looked.row.id not in mine)
            plain = [(looked, limits) for looked, limits in plain if looked.row.id in mine]
        on_time = [looked.row.id for looked, _ in plain
                   if not (hooks.lateness_applies(looked.row.origin) and is_late(looked.row, now, policy, looked.late_from))]
        try:
            flipped = {row.id: row for row in lifecycle.claim_batch(session, on_time, now=now, actor=actor,
                                                                    max_attempts=policy.max_attempts)}
        except PublishGuardViolation:
            flipped = {}  # a legacy duplicate among them: the one-by-one claims below find it
        for looked, limits in plain + gated:
            row = looked.row
            if row.id in flipped:
                claimed.append((looked, flipped[row.id], None))
                continue
            gate = None
            if row.id in gated_ids:
                gate = (lambda looked=looked, limits=limits:  # noqa: E731
                        pacing.admit(session, looked.channel, limits, context.clock, in_line=looked.late_from is not None))
            one = _claim_in(session, row, now, policy, actor, late_from=looked.late_from, gate=gate,
                            channel=looked.channel, hooks=hooks)
            if isinstance(one, DispatchResult):
                decided[row.id] = one
            else:
                claimed.append((looked, one[0], one[1]))
    return claimed, decided


def recheck_after(policy: Policy) -> float:
    """Seconds after its claim's commit from which a request re-reads its row's token before it starts."""
    return min(RECHECK_AFTER, policy.recovery_timeout.total_seconds() / 10)


def _send_claimed(action, kit: _Kit, slot: datetime | None, committed: float,
                  context: DispatchContext) -> SendResult | None:
    """In a sending thread: wait for the row's slot if it has one, re-check its claim if it waited, then send.

    None means the claim was no longer this worker's when its request was about to start
    (recovery declared it lost meanwhile): nothing was sent.
    """
    if slot is not None:
        _wait_for_slot(slot, kit.channel, kit.limits, context)
    if time.monotonic() - committed >= recheck_after(context.policy):
        try:
            with read_session(context.engine) as session:
                mine = session.scalar(_STILL_CLAIMED, {"action_id": action.id, "token": action.claim_token})
        except OperationalError as exc:
            return SendResult(SendOutcome.NOT_SENT, f"not sent: its claim could not be checked ({type(exc).__name__})")
        if mine is None:
            return None
    if kit.provider is None:
        return SendResult(SendOutcome.NOT_SENT, f"no provider for channel kind {kit.channel.kind!r}")
    if kit.unreadable is not None:
        return SendResult(SendOutcome.NOT_SENT, kit.unreadable)
    return _call(kit.provider, _delivery_with(action, kit.channel, kit.secret), kit.channel, context, http=kit.http)


def _record_sent(done: list[tuple[tuple, Future]], context: DispatchContext, actor: Actor) -> dict[int, DispatchResult]:
    """The outcomes of sends that came back, committed together (successes in one batch); see :func:`record_outcome`."""
    results: dict[int, DispatchResult] = {}
    outcomes = []
    for (looked, action, kit), future in done:
        try:
            result = future.result()
        except Exception as exc:  # a fault outside the provider call: we cannot tell whether it sent
            log.exception("action %s: its send failed unexpectedly", action.id)
            result = SendResult(SendOutcome.UNKNOWN, f"the send failed unexpectedly: {type(exc).__name__}: {exc}")
        if result is None:
            log.warning("action %s: its claim was lost before its request started; not sent", action.id)
            results[action.id] = DispatchResult(action.id, DispatchOutcome.SKIPPED, "claim_lost:not_sent")
        else:
            outcomes.append((action, kit.channel.kind, result))
    if outcomes:
        results.update(_retrying(lambda session: _record_all_in(session, outcomes, context, actor), context,
                                 f"{len(outcomes)} outcome(s)"))
    return results


def _record_all_in(session, outcomes: list, context: DispatchContext, actor: Actor) -> dict[int, DispatchResult]:
    now = context.clock.now()
    results: dict[int, DispatchResult] = {}
    # A success found by asking goes through _record_in, which writes what asking found before the publish.
    successes = [(action, result) for action, _, result in outcomes
                 if result.outcome is SendOutcome.SUCCESS and not result.asked]
    published = lifecycle.publish_batch(session, [(action.id, action.claim_token, result.provider_id)
                                                  for action, result in successes], now=now, actor=actor)
    for action_id, moved in published.items():
        results[action_id] = (DispatchResult(action_id, DispatchOutcome.PUBLISHED) if moved is None
                              else _result(action_id, moved, DispatchOutcome.PUBLISHED))
    sent = [(action, result.provider_id) for action, result in successes
            if results[action.id].outcome == DispatchOutcome.PUBLISHED]
    results.update(_published_with_follow_ups(session, context.hooks, sent, now, actor))
    for action, kind, result in outcomes:
        if result.outcome is not SendOutcome.SUCCESS or result.asked:
            results[action.id] = _record_in(session, action, kind, result, context.policy, actor, now, context.hooks)
    return results


def _follow_ups(session, hooks: Hooks | None, sent: list, now: datetime, actor: Actor) -> list:
    """What the wings minted in answer to ``sent`` (``(row, provider id)`` just recorded published), in this
    transaction."""
    return hooks.published(session, sent, now, actor) if hooks is not None and sent else []


def _published(action_id: int, minted: list) -> DispatchResult:
    return DispatchResult(action_id, DispatchOutcome.PUBLISHED,
                          follow_ups=tuple((row.id, row.due_at) for row in minted))


def _published_with_follow_ups(session, hooks: Hooks | None, sent: list, now: datetime,
                               actor: Actor) -> dict[int, DispatchResult]:
    """The results of rows a batch published that a wing minted follow-ups for (the others stay as they were).

    The wings are asked row by row, so each result carries what follows its own row; rows of an
    origin no wing follows cost nothing (``Hooks.published`` looks at the origin first).
    """
    results = {}
    for pair in sent:
        minted = _follow_ups(session, hooks, [pair], now, actor)
        if minted:
            results[pair[0].id] = _published(pair[0].id, minted)
    return results


def _retrying(write: Callable, context: DispatchContext, what: str):
    """``write(session)`` in a write transaction, tried again while the database refuses it for a moment.

    The provider has answered, so the outcome is worth waiting for: a database that refuses the
    write for a moment (locked past its busy timeout, a connection killed, a server restarting)
    is tried again until the time a task may take after its provider call is spent, well before
    recovery would declare the row lost. Only then does it stay submitted, in doubt.
    """
    deadline = time.monotonic() + (context.policy.task_timeout - context.policy.provider_timeout).total_seconds()
    delay = 0.1
    while True:
        try:
            with write_session(context.engine) as session:
                return write(session)
        except OperationalError:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("%s: the database refused the write for now; trying again in %.1f s", what, delay,
                        exc_info=True)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


# The rows of a chunk and their channels in one query, built once, with the row's current
# hold (its lateness anchor, and its place in its channel's line). The look is taken
# outside the write lock (on SQLite every writer waits its turn for it): a row another
# worker already took is skipped there, and the claims re-check every row under the lock.
_LOOK = (
    select(*_LOOK_COLUMNS, ActionHold.late_from)
    .select_from(ScheduledAction)
    .outerjoin(ActionHold, pacing.current_hold_join())
    .where(ids_in(ScheduledAction.id, "action_ids"))
)
_CHANNELS = select(Channel).where(ids_in(Channel.id, "channel_ids"))
_PAUSE_OF = select(ChannelThrottle.paused_until).where(ChannelThrottle.channel_id == bindparam("channel_id"))
_PAUSES_OF = select(ChannelThrottle.channel_id, ChannelThrottle.paused_until).where(
    ids_in(ChannelThrottle.channel_id, "channel_ids"))
# The re-check a sending thread makes just before a request: is the row still claimed under its token?
_STILL_CLAIMED = select(ScheduledAction.id).where(ScheduledAction.id == bindparam("action_id"),
                                                  ScheduledAction.status == Status.SUBMITTED.value,
                                                  ScheduledAction.claim_token == bindparam("token"))
_HOLD_OF = select(ActionHold.late_from).join(ScheduledAction, and_(
    pacing.current_hold_join(), ScheduledAction.id == bindparam("action_id")))


def _stop_in(session, rows: list[ScheduledAction], context: DispatchContext, now: datetime,
             actor: Actor, channels=()) -> dict[int, DispatchResult]:
    """In the claim's write transaction: cancel (or fail as missed) the rows a wing's pre-send check stops,
    then fail as reconnect_needed (``lifecycle.strand``) the rows due on a channel, among ``channels`` as the look
    read them, whose connected account needs reconnecting: never claimed, never an attempt.

    Asked before the rows themselves are locked or claimed, so a check that reads (and
    locks) its wing's rows takes its locks in the same order as the wing's own writes.
    """
    results = {}
    workspaces = {row.id: row.workspace_id for row in rows}
    stranded = {channel.id: channel for channel in channels if channel.reconnect_needed_since is not None}
    if stranded:
        for row in rows:
            channel = stranded.get(row.channel_id)
            if channel is None:
                continue
            outcome = lifecycle.strand(session, row.id, message=reconnect_message(channel), now=now, actor=actor)
            if outcome.ok:
                results[row.id] = DispatchResult(row.id, DispatchOutcome.MISSED, FailureCode.RECONNECT_NEEDED.value)
        rows = [row for row in rows if row.id not in results]
    for action_id, stop in context.hooks.stops(session, rows, now).items():
        if stop.failure_code is not None:
            results[action_id] = _miss(session, action_id, FailureCode(stop.failure_code), stop.reason, now, actor)
            continue
        outcome = lifecycle.cancel(session, action_id, kind=CancelKind(stop.cancel_kind), now=now, actor=actor,
                                   workspace_id=workspaces[action_id], reason=stop.reason)
        results[action_id] = DispatchResult(action_id, DispatchOutcome.STOPPED if outcome.ok else DispatchOutcome.SKIPPED,
                                            stop.cancel_kind if outcome.ok else (outcome.status or outcome.reason.value))
    return results


def _claim_in(session, row: ScheduledAction, now: datetime, policy: Policy, actor: Actor, *,
              late_from: datetime | None = None, gate: Callable[[], "pacing.Admission"] | None = None,
              channel: Channel | None = None, hooks: Hooks | None = None,
              ) -> tuple[ScheduledAction, datetime | None] | DispatchResult:
    """In the caller's write transaction: miss ``row`` if it is late, hold it if ``gate`` finds no room on its
    channel, else claim it; the claimed row and its slot, or why not.

    A row whose wing decides lateness itself (``hooks.lateness_decided``) was judged by its pre-send check.
    """
    action_id = row.id
    if (hooks is None or hooks.lateness_applies(row.origin)) and is_late(row, now, policy, late_from):
        # The look may be stale (another worker may have claimed and reverted the row,
        # or an admin retried it, moving its due time): decide on the row as it is now.
        row = session.get(ScheduledAction, action_id, populate_existing=True)
        if row is None or row.status != Status.QUEUED.value:
            return DispatchResult(action_id, DispatchOutcome.SKIPPED, row.status if row else "not_found")
        late_from = session.scalar(_HOLD_OF, {"action_id": action_id})
        if is_late(row, now, policy, late_from):
            return _miss(session, row.id, FailureCode.MISSED_WINDOW, late_message(row, now, policy, late_from), now,
                         actor)
    slot = None
    try:
        if gate is not None:
            admission = gate()
            if admission.held:
                held = pacing.hold(session, row, channel, admission, late_from=late_from or row.due_at, now=now,
                                   actor=actor)
                if not held.ok:
                    return DispatchResult(action_id, DispatchOutcome.SKIPPED,
                                          held.status if held.reason is Refusal.WRONG_STATE else held.reason.value)
                return DispatchResult(action_id, DispatchOutcome.HELD, admission.cause, admission.hold_until)
            slot = admission.slot
        outcome = lifecycle.claim(session, action_id, now=now, actor=actor, max_attempts=policy.max_attempts)
    except PublishGuardViolation:
        return _miss(session, action_id, FailureCode.DUPLICATE_OF_PUBLISHED,
                     "not sent: this thing was already published to this target", now, actor)
    if not outcome.ok:
        if outcome.reason is Refusal.ATTEMPTS_EXHAUSTED:
            last = f"; last error: {outcome.row.last_error}" if outcome.row.last_error else ""
            return _miss(session, action_id, FailureCode.ATTEMPTS_EXHAUSTED,
                         f"not sent: all {policy.max_attempts} attempts used{last}", now, actor)
        return DispatchResult(action_id, DispatchOutcome.SKIPPED,
                              outcome.status if outcome.reason is Refusal.WRONG_STATE else outcome.reason.value)
    return outcome.row, slot


def _deliver_locally_or_row_by_row(
    rows: list[tuple[ScheduledAction, Channel]], context: DispatchContext, actor: Actor
) -> dict[int, DispatchResult]:
    """:func:`deliver_locally` for the chunk; if its transaction fails, once more for each row alone.

    The failed transaction changed nothing, so the retry is safe, and a row the database
    keeps refusing holds up only itself: it stays queued (``error``) for the next tick.
    A database that refuses the transaction itself (locked past its busy timeout, its disk
    full, its connection gone) would refuse every row alone too, after as many busy
    timeouts: that raises, and the clock job fails loudly with the reason.
    """
    try:
        return deliver_locally(rows, context, actor)
    except OperationalError:
        raise
    except Exception:
        if len(rows) == 1:
            log.exception("action %s: the local delivery failed; the row stays queued", rows[0][0].id)
            return {rows[0][0].id: DispatchResult(rows[0][0].id, DispatchOutcome.ERROR, "database")}
        log.exception("a chunk of %d local deliveries failed; delivering its rows one by one", len(rows))
    results: dict[int, DispatchResult] = {}
    for pair in rows:
        results.update(_deliver_locally_or_row_by_row([pair], context, actor))
    return results


_LOCK_QUEUED = (
    select(ScheduledAction.id)
    .where(ids_in(ScheduledAction.id, "action_ids"))
    .order_by(ScheduledAction.id)
    .with_for_update(skip_locked=True)
)
# A local chunk's rows as they are now, with what a delivery and the wings' follow-ups read of them; on
# PostgreSQL locked as above.
_CURRENT = select(*lifecycle.CLAIMED_COLUMNS).where(ids_in(ScheduledAction.id, "action_ids")).order_by(ScheduledAction.id)
_LOCK_CURRENT = _CURRENT.with_for_update(skip_locked=True)


def deliver_locally(
    rows: list[tuple[ScheduledAction, Channel]], context: DispatchContext, actor: Actor
) -> dict[int, DispatchResult]:
    """Rows whose provider delivers into this database (``log``): all three steps in one transaction.

    First at once (:func:`_delivered_at_once`): the deliveries in one write, then every row
    moved queued → published by one statement (``lifecycle.deliver_batch``, the claim's and the
    publish's events in a statement each). If that would not take every row of the chunk, it
    changes nothing and the chunk goes the longer way: the claim of every due row in one
    statement (``claim_batch``: a token per row, the events in one ``INSERT ... SELECT``), the
    deliveries, and the outcomes (``publish_batch`` for the successes). Late rows, rows the
    bulk claim left alone and, when the publish guard refuses the bulk claim, every row are
    claimed one by one in the same transaction. Either way the delivery and the row's
    published status commit together or not at all, so no crash can leave one without the other.

    On PostgreSQL the transaction first locks the chunk's rows in id order, skipping any
    another transaction holds (that one decides them; a row still queued afterwards is
    the next tick's), so two overlapping chunks never wait on each other in a cycle.
    SQLite needs no such step: ``BEGIN IMMEDIATE`` admits one writer at a time.
    """
    policy = context.policy
    channels = {row.id: channel for row, channel in rows}
    results: dict[int, DispatchResult] = {}
    with write_session(context.engine) as session:
        now = context.clock.now()
        results.update(_stop_in(session, [row for row, _ in rows], context, now, actor,
                                channels=[channel for _, channel in rows]))
        rows = [(row, channel) for row, channel in rows if row.id not in results]
        locks = session.connection().dialect.name == "postgresql"
        current = {row.id: row for row in session.execute(_LOCK_CURRENT if locks else _CURRENT,
                                                          {"action_ids": [row.id for row, _ in rows]})}
        if locks:
            results.update((row.id, DispatchResult(row.id, DispatchOutcome.SKIPPED, "busy"))
                           for row, _ in rows if row.id not in current)
            rows = [(row, channel) for row, channel in rows if row.id in current]
        on_time = [row.id for row, _ in rows
                   if not (context.hooks.lateness_applies(row.origin) and is_late(row, now, policy))]
        if on_time and len(on_time) == len(rows):
            delivered = _delivered_at_once(session, [current[ident] for ident in on_time], channels, context,
                                           now, actor)
            if delivered is not None:
                results.update(delivered)
                return results
        try:
            claimed = list(lifecycle.claim_batch(session, on_time, now=now, actor=actor,
                                                 max_attempts=policy.max_attempts))
        except PublishGuardViolation:
            claimed = []  # a legacy duplicate among them: the one-by-one claims below find it
        flipped = {action.id for action in claimed}
        for row, _ in rows:
            if row.id not in flipped:
                one = _claim_in(session, row, now, policy, actor, hooks=context.hooks)
                if isinstance(one, DispatchResult):
                    results[row.id] = one
                else:
                    claimed.append(one[0])
        order = {row.id: position for position, (row, _) in enumerate(rows)}
        claimed.sort(key=lambda action: order[action.id])  # delivered in the order the rows fell due
        published = []
        for action, result in zip(claimed, _deliver_in(session, claimed, channels, context, now)):
            if result.outcome is SendOutcome.SUCCESS:
                published.append((action.id, action.claim_token, result.provider_id))
                results[action.id] = DispatchResult(action.id, DispatchOutcome.PUBLISHED)
            else:
                results[action.id] = _record_in(session, action, channels[action.id].kind, result, policy, actor, now,
                                                context.hooks)
        refused = {action_id for action_id, outcome in
                   lifecycle.publish_batch(session, published, now=now, actor=actor).items() if outcome is not None}
        if refused:  # claimed in this very transaction: nobody else can have moved them
            raise RuntimeError(f"publish_batch left {len(refused)} row(s) this transaction claimed unpublished")
        sent = {action_id: provider_id for action_id, _, provider_id in published}
        results.update(_published_with_follow_ups(session, context.hooks, [
            (action, sent[action.id]) for action in claimed if action.id in sent], now, actor))
    return results


def _delivered_at_once(session, rows: list, channels: dict, context: DispatchContext, now: datetime,
                       actor: Actor) -> dict[int, DispatchResult] | None:
    """The chunk's ``rows`` (as read under the chunk's lock) delivered and published in one go; None, with nothing
    changed, when that would not take every row.

    The deliveries are written first, numbered as the claim would number them (attempt + 1),
    then one UPDATE moves every row queued → published with the provider ids they gave. A
    delivery that did not succeed, or a row the UPDATE's guards refuse (no longer queued, not
    due after all, out of attempts, a published sibling), rolls the savepoint back, and the
    claim-then-publish way tells each row's outcome apart.
    """
    savepoint = session.begin_nested()
    sent = _deliver_in(session, rows, channels, context, now, claiming=True)
    moved = []
    if all(result.outcome is SendOutcome.SUCCESS for result in sent):
        moved = lifecycle.deliver_batch(session, [(row.id, result.provider_id) for row, result in zip(rows, sent)],
                                        now=now, actor=actor, max_attempts=context.policy.max_attempts)
    if len(moved) < len(rows):
        savepoint.rollback()
        return None
    savepoint.commit()
    results = {row.id: DispatchResult(row.id, DispatchOutcome.PUBLISHED) for row in rows}
    results.update(_published_with_follow_ups(session, context.hooks,
                                              [(row, result.provider_id) for row, result in zip(rows, sent)], now, actor))
    return results


def _deliver_in(session, claimed: list, channels: dict, context: DispatchContext, now: datetime, *,
                claiming: bool = False) -> list[SendResult]:
    """The local providers' results for ``claimed``, in order; they write in ``session``. With ``claiming`` the rows
    are not claimed yet, and each delivery is numbered as their claim will number it (attempt + 1)."""
    results: dict[int, SendResult] = {}
    by_kind: dict[str, list[Delivery]] = {}
    secrets: dict[int, str | None | SecretUnreadable] = {}  # each channel's secret decrypted once
    for action in claimed:
        channel = channels[action.id]
        if channel.id not in secrets:
            try:
                secrets[channel.id] = channel.secret(context.secret_box)
            except SecretUnreadable as exc:
                secrets[channel.id] = exc
        secret = secrets[channel.id]
        if isinstance(secret, SecretUnreadable):
            results[action.id] = SendResult(SendOutcome.NOT_SENT, str(secret))
        else:
            by_kind.setdefault(channel.kind, []).append(_delivery_with(action, channel, secret, ahead=claiming))
    send_context = SendContext(now=now, timeout=context.policy.provider_timeout.total_seconds(), session=session)
    for kind, deliveries in by_kind.items():
        for delivery, result in zip(deliveries, provider_for(kind).deliver(deliveries, send_context), strict=True):
            results[delivery.action_id] = result
    return [results[action.id] for action in claimed]


def _miss(session, action_id, code: FailureCode, message: str, now, actor) -> DispatchResult:
    outcome = lifecycle.miss(session, action_id, code=code, message=message, now=now, actor=actor)
    if outcome.ok:
        return DispatchResult(action_id, DispatchOutcome.MISSED, code.value)
    return DispatchResult(action_id, DispatchOutcome.SKIPPED, outcome.status or outcome.reason.value)


def _delivery(action: ScheduledAction, channel: Channel, context: DispatchContext) -> Delivery:
    """What the provider needs for ``action``, with the channel's secret decrypted (it may raise SecretUnreadable)."""
    return _delivery_with(action, channel, channel.secret(context.secret_box))


def _delivery_with(action, channel: Channel, secret: str | None, *, ahead: bool = False) -> Delivery:
    """What the provider needs for ``action``, with the channel's secret already decrypted; ``ahead`` numbers it as
    the claim about to be made will (a local delivery written before its row moves)."""
    return Delivery(
        action_id=action.id, workspace_id=action.workspace_id, channel_id=channel.id, channel_name=channel.name,
        action_type=action.action_type, target_key=action.target_key, payload=action.payload,
        publish_at=action.publish_at, attempt=action.attempt_count + ahead, config=dict(channel.config or {}),
        secret=secret, created_at=getattr(action, "created_at", None),
    )


def send(action: ScheduledAction, channel: Channel, context: DispatchContext, *, provider=None,
         http=None) -> SendResult:
    """Step 2, outside any transaction: decrypt the secret and call the provider.

    ``provider`` is the lane's provider session (an SMTP connection kept open across the
    lane's rows) or the provider module; ``http`` the channel's pooled HTTP client.
    """
    try:
        provider = provider or provider_for(channel.kind)
    except LookupError as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    try:
        delivery = _delivery(action, channel, context)
    except SecretUnreadable as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    return _call(provider, delivery, channel, context,
                 http=http or channel_client(channel.id, context.policy.sends_in_flight))


def _call(provider, delivery: Delivery, channel: Channel, context: DispatchContext, *, http) -> SendResult:
    """The provider's answer for ``delivery``, its media attached as its declaration asks; a provider that
    raises is an unknown outcome, media that could not be read or prepared a send that never started."""
    try:
        delivery = with_media(delivery, channel.kind, context.engine, box=context.secret_box, now=context.clock.now())
    except Exception as exc:  # a file the library took that Pillow now refuses, a read error: nothing went out
        log.exception("media of action %s could not be prepared for %s", delivery.action_id, channel.kind)
        return SendResult(SendOutcome.NOT_SENT, f"the media could not be prepared: {type(exc).__name__}: {exc}")
    if isinstance(delivery, SendResult):
        return delivery
    # A provider's waits (Mastodon's media processing, Meta's containers) go through the dispatch's own sleeper
    # when one was given, else through the clock, so a test's frozen clock takes none in real time.
    sleep = context.sleep if context.sleep is not time.sleep else getattr(context.clock, "sleep", time.sleep)
    send_context = SendContext(now=context.clock.now(), timeout=context.policy.provider_timeout.total_seconds(),
                               http=http, sleep=sleep)
    try:
        result = provider.send(delivery, send_context)
    except Exception as exc:  # a fault in a provider module: we cannot tell whether it sent
        log.exception("provider %s raised on action %s", channel.kind, delivery.action_id)
        result = SendResult(SendOutcome.UNKNOWN, f"the {channel.kind} provider failed unexpectedly: {type(exc).__name__}: {exc}")
    # A provider that can be asked is asked before an unknown outcome is recorded (models.clock.settling).
    return settling.ask_after_send(provider, delivery, send_context, result)


def record_outcome(
    action: ScheduledAction, channel_kind: str, result: SendResult, context: DispatchContext, actor: Actor
) -> DispatchResult:
    """Step 3: one short write transaction turning the provider's outcome into a move (see :func:`_retrying`)."""
    return _retrying(lambda session: _record_in(session, action, channel_kind, result, context.policy, actor,
                                                context.clock.now(), context.hooks), context, f"action {action.id}")


def _record_in(session, action: ScheduledAction, channel_kind: str, result: SendResult, policy: Policy,
               actor: Actor, now: datetime, hooks: Hooks | None = None) -> DispatchResult:
    """In the caller's write transaction: the move the provider's outcome calls for, with the claim token.

    A publish tells the wings (``hooks.published``) in the same transaction: what they mint in answer
    commits with it, and rides on the result as its ``follow_ups``.
    """
    token = action.claim_token
    reconnect = result.reconnect_needed and result.outcome is SendOutcome.PERMANENT
    if reconnect and renew_soon(session, action.channel_id, now=now):
        # Refused before anything was posted, and the channel can still renew its token: the refresh pass
        # renews it, and every row of the channel waits for that instead of failing.
        reconnect = False
        result = SendResult(SendOutcome.RETRY_LATER, f"{result.message}; the token is being renewed",
                            retry_after=RENEWAL_WAIT)
    retry_with_key = result.outcome is SendOutcome.UNKNOWN and _honours_idempotency_key(channel_kind)
    settling.record_asked_in(session, action, result, now=now, actor=actor)
    if result.outcome is SendOutcome.UNKNOWN and not retry_with_key and settling.leaves_for_later(channel_kind):
        moved = settling.leave_for_later_in(session, action, channel_kind, result, now=now, actor=actor)
        return _result(action.id, moved, DispatchOutcome.ASKING, result.outcome.value)
    if result.outcome is SendOutcome.SUCCESS:
        moved = lifecycle.publish(session, action.id, claim_token=token, provider_id=result.provider_id,
                                  now=now, actor=actor)
        if not moved.ok:
            return _result(action.id, moved, DispatchOutcome.PUBLISHED)
        return _published(action.id, _follow_ups(session, hooks, [(moved.row, result.provider_id)], now, actor))
    if result.outcome in (SendOutcome.NOT_SENT, SendOutcome.RETRY_LATER) or retry_with_key:
        if action.attempt_count >= policy.max_attempts:
            code = FailureCode.OUTCOME_UNKNOWN if retry_with_key else FailureCode.ATTEMPTS_EXHAUSTED
            moved = lifecycle.fail(session, action.id, code=code, claim_token=token, now=now, actor=actor,
                                   message=f"all {policy.max_attempts} attempts used; last: {result.message}")
            return _result(action.id, moved, DispatchOutcome.FAILED, code.value)
        delay = backoff_delay(action.attempt_count, base=policy.backoff_base, cap=policy.backoff_cap,
                              retry_after=result.retry_after)
        retry_at = now + delay
        if result.outcome is SendOutcome.RETRY_LATER and result.retry_after is not None:
            # The provider asked the channel, not this row, to wait: every row of it waits.
            pacing.pause(session, action.channel_id, until=now + result.retry_after, now=now,
                         reason=f"{result.message} (action {action.id})")
        note = " (retrying with the same Idempotency-Key)" if retry_with_key else ""
        moved = lifecycle.revert(session, action.id, claim_token=token, next_attempt_at=retry_at,
                                 message=f"attempt {action.attempt_count}: {result.message}{note}", now=now,
                                 actor=actor)
        outcome = _result(action.id, moved, DispatchOutcome.REVERTED, result.outcome.value)
        return DispatchResult(action.id, outcome.outcome, outcome.reason, retry_at if moved.ok else None)
    code = FailureCode.PERMANENT if result.outcome is SendOutcome.PERMANENT else FailureCode.OUTCOME_UNKNOWN
    if reconnect:
        # The network refused the token as expired or revoked and nothing can renew it: every later row of the
        # channel would meet the same refusal, so the channel waits for a person to reconnect it.
        code = FailureCode.RECONNECT_NEEDED
        mark_reconnect_needed(session, action.channel_id, reason=result.message or "the network refused the token",
                              now=now)
    moved = lifecycle.fail(session, action.id, code=code, claim_token=token, now=now, actor=actor,
                           message=result.message)
    return _result(action.id, moved, DispatchOutcome.FAILED, code.value)


def _honours_idempotency_key(kind: str) -> bool:
    try:
        return bool(provider_for(kind).honours_idempotency_key)
    except LookupError:
        return False


def _result(action_id: int, moved, outcome: str, reason: str | None = None) -> DispatchResult:
    if moved.ok:
        return DispatchResult(action_id, outcome, reason)
    # The claim token no longer matches: recovery declared this worker lost, and the row
    # stays as recovery left it (a success would have been accepted; see lifecycle.publish).
    log.warning("action %s: outcome %s not recorded (%s, row is %s)", action_id, outcome, moved.reason.value, moved.status)
    return DispatchResult(action_id, DispatchOutcome.SKIPPED, f"claim_lost:{outcome}")
