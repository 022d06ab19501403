"""Clock runs carrying rollups, as the tick leaves them, for the health page's tests."""

from datetime import timedelta

from sqlalchemy import insert

from models.clock.rollup import LATENESS_BUCKETS, iso, merge, parse_iso
from models.clock.tables import ClockRun
from models.core.database import write_session


def rollup(minute, *, claims=0, p50=None, p95=None, latest=None, published=0, failed=0, missed=0, backlog=None,
           jobs=None, histogram=None, total=0.0) -> dict:
    """One minute's rollup (see models/clock/rollup.py)."""
    return {"minute": iso(minute), "claims": claims, "p50": p50, "p95": p95, "max": latest, "sum": total,
            "histogram": histogram or [0] * (len(LATENESS_BUCKETS) + 1), "published": published, "failed": failed,
            "missed": missed, "backlog": backlog, "jobs": jobs or {}}


def job(minute, runs=1, errors=0, unfinished=0) -> dict:
    return {"runs": runs, "errors": errors, "unfinished": unfinished, "first": iso(minute), "last": iso(minute),
            "longest": 0.5}


def hour_of(minutes: list[dict]) -> dict:
    """The hour rollup a tick writes when it finishes the hour of ``minutes``."""
    hour = parse_iso(minutes[0]["minute"]).replace(minute=0)
    return {"hour": iso(hour), **merge(minutes)}


def tick_run(started, minutes: list[dict], *, took=timedelta(seconds=1), hours: list[dict] = ()) -> dict:
    """A finished tick's clock run (its columns) carrying ``minutes`` and ``hours`` rollups."""
    return {"kind": "tick", "started_at": started, "finished_at": started + took, "error": None,
            "summary": {"due": 0, "rollup": minutes, "rollup_hours": list(hours)},
            "rollup_hour": parse_iso(hours[-1]["hour"]) if hours else None}


def seed(app, runs: list[dict]) -> None:
    """Clock runs as the clock would have left them: each a dict of ClockRun's columns."""
    with app.app_context(), write_session() as session:
        session.execute(insert(ClockRun), runs)
