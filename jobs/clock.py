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
from models.posts.review import expire_overdue_posts
from models.recurring.expander import run_expander
from models.clock.tick import run_recovery, run_tick
from models.accounts.idempotency import forget_expired
from models.channels.connections import refresh_connections
from models.clock.runs import run_recorded
from models.core.database import write_session
from models.core.moves import Actor
from models.core.runtime import runtime


def tick_once(inline: bool | None = None) -> dict:
    """One scheduler tick: recover, sweep misfires, dispatch everything due (see models.ticks)."""
    rt = runtime()
    return run_tick(clock=rt.clock, policy=rt.policy, dispatcher=current_dispatcher(inline), hooks=rt.hooks,
                    secret_box=rt.secret_box)


def reconcile_once() -> dict:
    """One reconciler pass: every approved post's rows brought in line (see models.reconciler)."""
    rt = runtime()
    return run_reconciler(clock=rt.clock, policy=rt.policy, announce=rt.announce_due)


def expire_posts_once() -> dict:
    """Expire every post still in review past its time, and tell its author (see models.posts.review)."""
    rt = runtime()

    def one_pass(run_id: int) -> dict:
        with write_session() as session:
            return expire_overdue_posts(session, now=rt.now(), actor=Actor.job("expire-posts", run_id)).summary()

    return run_recorded("expire-posts", one_pass, clock=rt.clock)


def forget_keys_once() -> dict:
    """Delete the Idempotency-Key records older than the time keys are kept."""
    rt = runtime()

    def one_pass(_run_id: int) -> dict:
        with write_session() as session:
            return {"forgotten": forget_expired(session, now=rt.now(), policy=rt.policy)}

    return run_recorded("forget-keys", one_pass, clock=rt.clock)


def recover_once() -> dict:
    """Only dead-worker recovery (the tick runs it first anyway)."""
    rt = runtime()
    return run_recovery(clock=rt.clock, policy=rt.policy, secret_box=rt.secret_box, hooks=rt.hooks)


def expand_once() -> dict:
    """One expander pass: every active recurring rule's window materialized (see models.recurring.expander)."""
    rt = runtime()
    return run_expander(clock=rt.clock, policy=rt.policy, announce=rt.announce_due)


def drip_advance_once() -> dict:
    """One drip-advance pass: settle ended sends, re-mint held ones, mint every step due (see models.drips.advance)."""
    rt = runtime()
    return run_drip_advance(clock=rt.clock, policy=rt.policy, secret_box=rt.secret_box,
                            base_url=current_app.config.get("TICKWORK_BASE_URL"), announce=rt.announce_due)


def refresh_tokens_once() -> dict:
    """Renew every connected account's token due by now; a refresh refused puts its channel in reconnect needed."""
    rt = runtime()
    settings = current_app.config

    def one_pass(_run_id: int) -> dict:
        outcomes = refresh_connections(write_session, now_fn=rt.now, box=rt.secret_box, settings=settings,
                                       timeout=rt.policy.provider_timeout.total_seconds())
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        return {"expiring": len(outcomes), **counts,
                "channels": [{"channel_id": o.channel_id, "outcome": o.outcome, "message": o.message} for o in outcomes]}

    return run_recorded("refresh-tokens", one_pass, clock=rt.clock)
