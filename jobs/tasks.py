"""The dispatch task, and the two ways rows reach it: the tick's fan-out and the eta hand-off."""

import logging
from collections import Counter
from datetime import datetime

from jobs.queue import huey, task_app
from models.dispatch import DispatchContext, DispatchOutcome, dispatch_action
from models.ticks import InlineDispatcher
from webapp.runtime import runtime

log = logging.getLogger("tickwork.jobs")


def dispatch_context() -> DispatchContext:
    rt = runtime()
    return DispatchContext(clock=rt.clock, policy=rt.policy, secret_box=rt.secret_box)


@huey.task(name="dispatch")
def dispatch(action_id: int, clock_run_id: int | None = None):
    """Claim one action and send it (models.dispatch); a quick retry goes back on the queue with an eta."""
    with task_app().app_context():
        result = dispatch_action(action_id, dispatch_context(), clock_run_id=clock_run_id)
        if result.outcome == DispatchOutcome.REVERTED and result.retry_at is not None:
            hand_off_due_soon([(action_id, result.retry_at)], clock_run_id)
        return result.label


def hand_off_due_soon(due: list[tuple[int, datetime]], clock_run_id: int | None = None) -> None:
    """Queue rows due before the next tick with ``eta`` = their due time (the next tick covers the rest)."""
    if huey.immediate:
        return  # immediate mode never runs eta tasks; the tick takes rows when they are due
    horizon = runtime().now() + runtime().policy.tick_interval
    huey.enqueue_many([dispatch.s(action_id, clock_run_id, eta=due_at) for action_id, due_at in due
                       if due_at <= horizon])


class QueueDispatcher:
    """Fan out: one dispatch task per due row; the consumers' claims decide who sends."""

    inline = False

    def dispatch_now(self, action_ids: list[int], clock_run_id: int) -> Counter:
        huey.enqueue_many([dispatch.s(action_id, clock_run_id) for action_id in action_ids])
        return Counter({"queued": len(action_ids)})

    def dispatch_at(self, due: list[tuple[int, datetime]], clock_run_id: int) -> None:
        huey.enqueue_many([dispatch.s(action_id, clock_run_id, eta=due_at) for action_id, due_at in due])


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
