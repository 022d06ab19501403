"""The tick's cadence comes from the policy's ``tick_interval``: the consumers enqueue it on those minutes only."""

import calendar
from datetime import datetime, timedelta

import pytest

from jobs.queue import huey
from tests.conftest import TEST_SECRET


def periodic_names(at: datetime) -> set[str]:
    """What a consumer's scheduler enqueues at ``at`` (Huey hands it a naive UTC datetime)."""
    return {task.name for task in huey.read_periodic(at)}


def minute_of_epoch(n: int) -> datetime:
    return datetime(1970, 1, 1) + timedelta(minutes=n)


@pytest.mark.parametrize("interval_seconds", [60, 300, 420])
def test_the_tick_runs_every_tick_interval_and_the_reconciler_every_minute(tmp_path, interval_seconds):
    from webapp import create_app

    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'unused.db'}",
                      "SECRET_KEY": TEST_SECRET, "TICKWORK_QUEUE_URL": "immediate",
                      "TICKWORK_POLICY": {"tick_interval": interval_seconds}})
    every = interval_seconds // 60
    # Counted from the epoch, not from the hour, so seven minutes stay seven across midnight.
    start = calendar.timegm(datetime(2026, 6, 1, 23, 30).timetuple()) // 60 // every * every
    with app.app_context():
        fired = [n for n in range(start, start + 3 * every + 1) if "tick" in periodic_names(minute_of_epoch(n))]
        assert fired == [start, start + every, start + 2 * every, start + 3 * every]
        assert all("reconcile" in periodic_names(minute_of_epoch(n)) for n in range(start, start + every + 1))
