"""The dispatch task, and the two ways rows reach it: the tick's fan-out and the eta hand-off, in chunks."""

import logging
import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from jobs.queue import huey, task_app
from models.clock.dispatch import DispatchContext, DispatchOutcome, SendSlots, chunks, dispatch_actions
from models.clock.runs import mark_hand_over_taken
from models.clock.tick import InlineDispatcher
from models.core.database import db
from models.core.runtime import runtime

log = logging.getLogger("tickwork.jobs")

# Set when this consumer process is asked to stop (jobs.consumer): its dispatches claim no
# more rows, so the stop waits only for the sends already in flight.
draining = threading.Event()

_pools: dict[int, tuple[ThreadPoolExecutor, SendSlots]] = {}
_pools_lock = threading.Lock()


def sending_pool(size: int) -> tuple[ThreadPoolExecutor, SendSlots]:
    """This process's sending threads (``policy.sends_in_flight``) and their slots, shared by every dispatch
    task it runs: a dispatch claims rows only for slots it holds, so each claimed row's request starts at once."""
    with _pools_lock:
        pool = _pools.get(os.getpid())
        if pool is None:
            pool = _pools[os.getpid()] = (ThreadPoolExecutor(max_workers=size, thread_name_prefix="tickwork-send"),
                                          SendSlots(size))
        return pool


def dispatch_context() -> DispatchContext:
    """The dispatch's collaborators: in a consumer, with the process's sending threads; inline, none."""
    rt = runtime()
    if huey.immediate:
        return DispatchContext.of(rt)
    pool, slots = sending_pool(rt.policy.sends_in_flight)
    return DispatchContext.of(rt, engine=db.engine, pool=pool, slots=slots, draining=draining.is_set)


@huey.task(name="dispatch")
def dispatch(action_ids: list[int] | int, clock_run_id: int | None = None):
    """Claim a chunk of actions and send them (models.clock.dispatch); rows reverted or held
    for a moment go back on the queue with an eta, and rows a publish minted (a thread's next item) with theirs.

    A task queued by an earlier version carries a single id; it runs the same way.
    """
    ids = [action_ids] if isinstance(action_ids, int) else list(action_ids)
    with task_app().app_context():
        results = dispatch_actions(ids, dispatch_context(), clock_run_id=clock_run_id)
        retries = [(result.action_id, result.retry_at) for result in results
                   if result.outcome in (DispatchOutcome.REVERTED, DispatchOutcome.HELD)
                   and result.retry_at is not None]
        # What a publish minted (a thread's next item) is due now: handed over at once, not left for the next tick.
        retries += [follow_up for result in results for follow_up in result.follow_ups]
        if retries:
            hand_off_due_soon(retries, clock_run_id)
        return dict(Counter(result.label for result in results))


class TickNotFinished(Exception):
    """The tick whose marker this is has not written its summary yet; Huey tries again in a second."""


@huey.task(name="hand-over-taken", retries=300, retry_delay=1)
def hand_over_taken(clock_run_id: int):
    """The marker a tick queues behind its dispatch tasks: taken, it says they all were (models.clock.tick)."""
    with task_app().app_context():
        if not mark_hand_over_taken(clock_run_id):
            raise TickNotFinished(f"tick run {clock_run_id} has not finished yet")


def hand_off_due_soon(due: list[tuple[int, datetime]], clock_run_id: int | None = None) -> None:
    """Queue rows due before the next tick with ``eta`` = their due time (the next tick covers the rest)."""
    if huey.immediate:
        return  # immediate mode never runs eta tasks; the tick takes rows when they are due
    horizon = runtime().policy.due_soon_horizon(runtime().now())
    QueueDispatcher().dispatch_at([(action_id, due_at) for action_id, due_at in due if due_at <= horizon],
                                  clock_run_id)


class QueueDispatcher:
    """Fan out: one dispatch task per chunk of due rows; the consumers' claims decide who sends."""

    inline = False

    def dispatch_now(self, action_ids: list[int], clock_run_id: int) -> Counter:
        size = runtime().policy.dispatch_chunk
        huey.enqueue_many([dispatch.s(chunk, clock_run_id) for chunk in chunks(action_ids, size)])
        return Counter({"queued": len(action_ids)})

    def mark_handed(self, clock_run_id: int) -> None:
        """Queue the marker behind this tick's hand-over (see models.clock.tick); immediate mode ran them all already."""
        if not huey.immediate:
            huey.enqueue_many([hand_over_taken.s(clock_run_id)])

    def dispatch_at(self, due: list[tuple[int, datetime]], clock_run_id: int | None) -> None:
        """Rows due within the same ETA_GRAIN share a task (in chunks), its eta the end of that span: rows due a
        few milliseconds apart are claimed and sent together, none before its time, none more than the grain late."""
        size = runtime().policy.dispatch_chunk
        by_time: dict[datetime, list[int]] = {}
        for action_id, due_at in due:
            by_time.setdefault(_grain_end(due_at), []).append(action_id)
        huey.enqueue_many([dispatch.s(chunk, clock_run_id, eta=due_at)
                           for due_at, ids in by_time.items() for chunk in chunks(ids, size)])


# Rows handed over ahead share a task when due within the same span of this many microseconds.
ETA_GRAIN_US = 250_000


def _grain_end(at: datetime) -> datetime:
    """``at`` rounded up to the end of its ETA_GRAIN_US span (itself when it is on a boundary)."""
    micros = at.second * 1_000_000 + at.microsecond
    rest = micros % ETA_GRAIN_US
    return at if rest == 0 else at + timedelta(microseconds=ETA_GRAIN_US - rest)


def current_dispatcher(inline: bool | None = None):
    """Inline in immediate mode (or when asked), else the queue."""
    if inline or (inline is None and huey.immediate):
        return InlineDispatcher(dispatch_context())
    return QueueDispatcher()


def announce_due_soon(rows) -> None:
    """The runtime's ``on_due_soon`` hook: a write made these rows due before the next tick.

    The write is already committed; if the queue cannot take the hand-off now, the next
    tick finds the rows anyway (up to a minute later), so the caller is not failed for it.
    """
    try:
        hand_off_due_soon([(row.id, row.due_at) for row in rows])
    except Exception:
        log.exception("could not hand %d row(s) to the queue; the next tick will dispatch them", len(rows))
