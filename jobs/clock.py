"""The clock jobs' one-pass entry points, as the periodic tasks and the command line run them.

Each runs inside an app context and returns its summary (a dict, also stored on its
clock-run row). Tests and other code call them directly::

    with app.app_context():
        summary = tick_once()               # inline in immediate mode: everything due is sent now
        summary = tick_once(inline=True)    # inline whatever the queue
"""

from flask import current_app

from jobs.tasks import current_dispatcher
from models.drips.advance import run_drip_advance
from models.posts.reconciler import run_reconciler
from models.clock.tick import run_recovery, run_tick
from models.core.runtime import runtime


def tick_once(inline: bool | None = None) -> dict:
    """One scheduler tick: recover, sweep misfires, dispatch everything due (see models.ticks)."""
    rt = runtime()
    return run_tick(clock=rt.clock, policy=rt.policy, dispatcher=current_dispatcher(inline))


def reconcile_once() -> dict:
    """One reconciler pass: every approved post's rows brought in line (see models.reconciler)."""
    rt = runtime()
    return run_reconciler(clock=rt.clock, policy=rt.policy, announce=rt.announce_due)


def recover_once() -> dict:
    """Only dead-worker recovery (the tick runs it first anyway)."""
    rt = runtime()
    return run_recovery(clock=rt.clock, policy=rt.policy)


def drip_advance_once() -> dict:
    """One drip-advance pass: settle ended sends, re-mint held ones, mint every step due (see models.drips.advance)."""
    rt = runtime()
    return run_drip_advance(clock=rt.clock, policy=rt.policy, secret_box=rt.secret_box,
                            base_url=current_app.config.get("TICKWORK_BASE_URL"), announce=rt.announce_due)
