"""Clock runs: one row per run of one clock job, with its summary, for the health page.

Every clock job runs through :func:`run_recorded`, which writes the row when the run
starts (so a run that dies leaves a trace with no ``finished_at``), then its summary or
its error when it ends. Each write is its own short transaction.
"""

import logging
import time
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from models.clock.tables import ClockRun
from models.core.database import write_session
from models.timing.clock import Clock

log = logging.getLogger("tickwork.clock")


def start_run(kind: str, *, now: datetime, engine: Engine | None = None) -> int:
    with write_session(engine) as session:
        return session.execute(insert(ClockRun).values(kind=kind, started_at=now).returning(ClockRun.id)).scalar_one()


def finish_run(run_id: int, *, now: datetime, summary: dict, error: str | None = None, engine: Engine | None = None) -> None:
    with write_session(engine) as session:
        session.execute(update(ClockRun).where(ClockRun.id == run_id).values(finished_at=now, summary=summary, error=error))


# A tick's summary key: whether a consumer has taken the marker queued behind the tick's hand-over.
HAND_OVER_TAKEN = "hand_over_taken"


def mark_hand_over_taken(run_id: int) -> bool:
    """Record on tick run ``run_id`` that the marker behind its hand-over was taken: its tasks all were.

    False while the tick has not written its summary yet (a fast consumer may take the marker
    before the tick's last steps end): the caller asks again a moment later.
    """
    with write_session() as session:
        summary = session.scalar(select(ClockRun.summary).where(ClockRun.id == run_id).with_for_update())
        if summary is None or HAND_OVER_TAKEN not in summary:
            return session.scalar(select(ClockRun.finished_at).where(ClockRun.id == run_id)) is not None
        if summary[HAND_OVER_TAKEN] is False:
            session.execute(update(ClockRun).where(ClockRun.id == run_id).values(
                summary={**summary, HAND_OVER_TAKEN: True}))
        return True


def run_recorded(kind: str, body: Callable[[int], dict], *, clock: Clock, engine: Engine | None = None) -> dict:
    """Run one pass of the clock job ``kind``: ``body(clock_run_id)`` returns its summary.

    Returns the summary with ``clock_run_id``, ``kind`` and ``duration_ms`` added. An
    exception is recorded on the row (``error``) and raised again.
    """
    started = time.monotonic()
    run_id = start_run(kind, now=clock.now(), engine=engine)
    try:
        summary = dict(body(run_id))
    except Exception as exc:
        # Loudly, in every shell (the consumer's log, the command's stderr), before trying to record
        # it: the database that failed the run may refuse the record too (locked, full, gone).
        log.exception("clock job %s (run %s) failed", kind, run_id)
        finish_run(run_id, now=clock.now(), engine=engine, error=f"{type(exc).__name__}: {exc}",
                   summary={"duration_ms": round((time.monotonic() - started) * 1000)})
        raise
    summary["duration_ms"] = round((time.monotonic() - started) * 1000)
    finish_run(run_id, now=clock.now(), summary=summary, engine=engine)
    return {"clock_run_id": run_id, "kind": kind, **summary}
