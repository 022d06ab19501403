"""The tick's per-minute rollup: each whole minute once, with firing lateness, throughput, backlog and the jobs' runs."""

from datetime import datetime, timedelta, timezone

import pytest

from models.actions import lifecycle
from models.actions.tables import FailureCode
from models.clock.rollup import LATENESS_BUCKETS, MAX_CATCH_UP, lateness_figures, roll_up
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.moves import Actor
from tests.factories import add_action
from tests.integration.clock_helpers import tick

JOB = Actor.job("test")


def rollups_of(summary) -> dict[str, dict]:
    return {minute["minute"]: minute for minute in summary["rollup"]}


def test_each_whole_minute_is_rolled_up_once_a_minute_after_it_ends(app, world, clock):
    # At 12:00:00: four rows late by 30 s or 90 s, one that missed its window, one the provider refuses.
    for seconds in (30, 30, 30, 90):
        add_action(app, world, publish_at=clock.now() - timedelta(seconds=seconds), target_key=f"late-{seconds}")
    clock.advance(hours=-2)
    add_action(app, world, publish_at=clock.now(), action_type="send_sms", target_key="missed")
    clock.advance(hours=2)
    refused = add_action(app, world, publish_at=clock.now() - timedelta(seconds=10), target_key="refused",
                         action_type="reminder")
    with app.app_context(), write_session() as session:
        token = lifecycle.claim(session, refused, now=clock.now(), actor=JOB).row.claim_token
        lifecycle.fail(session, refused, claim_token=token, code=FailureCode.PERMANENT, message="no", now=clock.now(),
                       actor=JOB)

    first = tick(app)  # 12:00:00
    assert first["backlog"] == 5 and first["outcomes"] == {"published": 4}
    assert list(rollups_of(first)) == ["2026-06-01T11:58:00Z"]  # a first rollup covers one minute
    clock.advance(seconds=30)
    assert tick(app)["rollup"] == []  # 12:00 has not been over for a minute yet
    clock.advance(seconds=90)  # 12:02:00
    rolled = rollups_of(tick(app))
    assert list(rolled) == ["2026-06-01T11:59:00Z", "2026-06-01T12:00:00Z"]
    minute = rolled["2026-06-01T12:00:00Z"]
    assert (minute["claims"], minute["published"], minute["failed"], minute["missed"]) == (5, 4, 1, 1)
    assert (minute["p50"], minute["p95"], minute["max"], minute["sum"]) == (30.0, 90.0, 90.0, 190.0)
    assert sum(minute["histogram"]) == 5 and minute["histogram"][LATENESS_BUCKETS.index(10.0)] == 1
    assert minute["backlog"] == 5  # what the 12:00:00 tick found at its start
    assert minute["jobs"]["tick"] == {"runs": 2, "errors": 0, "unfinished": 0, "first": "2026-06-01T12:00:00Z",
                                      "last": "2026-06-01T12:00:30Z", "longest": 0.0}
    assert rolled["2026-06-01T11:59:00Z"]["claims"] == 0 and rolled["2026-06-01T11:59:00Z"]["backlog"] is None
    clock.advance(minutes=1)
    assert list(rollups_of(tick(app))) == ["2026-06-01T12:01:00Z"]


def test_after_downtime_a_tick_catches_up_at_most_an_hour_and_counts_failed_runs(app, world, clock):
    tick(app)
    clock.advance(seconds=20)
    with pytest.raises(ZeroDivisionError), app.app_context():
        run_recorded("reconcile", lambda run_id: 1 / 0, clock=clock)
    clock.advance(hours=3)  # 15:00:20, after three hours without a tick
    rolled = tick(app)["rollup"]
    assert len(rolled) == MAX_CATCH_UP
    assert rolled[0]["minute"] == "2026-06-01T13:59:00Z" and rolled[-1]["minute"] == "2026-06-01T14:58:00Z"
    assert all(minute["claims"] == 0 and minute["jobs"] == {} for minute in rolled)
    with app.app_context(), read_session() as session:
        [noon] = roll_up(session, [datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)], "tick")
    assert noon["jobs"]["reconcile"]["errors"] == 1 and noon["jobs"]["tick"]["runs"] == 1


def test_percentiles_are_nearest_rank_and_the_histogram_counts_each_claim_once():
    figures = lateness_figures([float(n) for n in range(1, 21)])
    assert (figures["p50"], figures["p95"], figures["max"], figures["sum"]) == (10.0, 19.0, 20.0, 210.0)
    assert sum(figures["histogram"]) == 20 and figures["histogram"][-1] == 0
    assert lateness_figures([])["p95"] is None and lateness_figures([4000.0])["histogram"][-1] == 1


def test_the_tick_that_finishes_an_hour_merges_its_minutes_into_an_hour_rollup(app, world, clock):
    from sqlalchemy import select

    from models.clock.tables import ClockRun

    for seconds in (5, 20):
        add_action(app, world, publish_at=clock.now() - timedelta(seconds=seconds), target_key=f"late-{seconds}")
    tick(app)  # 12:00:00: claims both
    clock.advance(minutes=30)
    # 12:30: minutes 11:59 to 12:28; 11:59 finishes the hour before, 12:00's is not over.
    assert [hour["hour"] for hour in tick(app)["rollup_hours"]] == ["2026-06-01T11:00:00Z"]
    clock.advance(minutes=31)
    last = tick(app)  # 13:01: minutes 12:29 to 12:59, which finish the hour
    [hour] = last["rollup_hours"]
    assert hour["hour"] == "2026-06-01T12:00:00Z" and hour["minutes"] == 60
    assert (hour["claims"], hour["published"], hour["p95"], hour["max"]) == (2, 2, 20.0, 20.0)
    assert hour["jobs"]["tick"]["runs"] == 2 and hour["jobs"]["tick"]["gap"] == 1800.0
    with app.app_context(), read_session() as session:
        marked = session.scalar(select(ClockRun.rollup_hour).where(ClockRun.id == last["clock_run_id"]))
    assert marked == datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
