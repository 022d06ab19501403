"""The health page's trends, drawn from the tick's rollups; /metrics' clock-job and lateness series."""

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event

from jobs.periodic import CLOCK_JOBS
from models.clock.rollup import LATENESS_BUCKETS, iso, merge
from models.core.database import db, read_session
from models.overview.health import read_trends
from tests.rollup_history import hour_of, job, rollup, seed, tick_run

HOUR = timedelta(hours=1)


def text(answer) -> str:
    return answer.get_data(as_text=True)


@pytest.fixture
def history(app, clock):
    """An hour ago two busy minutes, three days ago a burst with misses, and a reconciler in trouble."""
    now = clock.now()  # 2026-06-01 12:00 UTC, 08:00 in the world's New York
    busy, busier, burst = now - HOUR, now - HOUR + timedelta(minutes=1), now - timedelta(days=3)
    seed(app, [
        tick_run(busy + timedelta(minutes=2), [rollup(busy, claims=10, p50=0.4, p95=1.5, latest=2.0, published=9,
                                                      failed=1, backlog=3, jobs={"tick": job(busy),
                                                                                 "reconcile": job(busy, errors=1)})]),
        tick_run(busier + timedelta(minutes=2), [rollup(busier, claims=30, p50=0.2, p95=3.0, latest=4.0,
                                                        published=30, backlog=7, jobs={"tick": job(busier)})]),
        tick_run(burst + HOUR + timedelta(minutes=1), [], hours=[hour_of([
            rollup(burst, claims=100, p50=1.0, p95=8.0, latest=9.0, published=95, missed=5, backlog=50,
                   jobs={"tick": job(burst)}),
            rollup(burst + timedelta(minutes=59), jobs={"tick": job(burst + timedelta(minutes=59))})])]),
        {"kind": "reconcile", "started_at": busy, "finished_at": busy, "error": "OperationalError: locked",
         "summary": None},
        {"kind": "reconcile", "started_at": now - timedelta(minutes=20), "finished_at": None, "error": None,
         "summary": None},
    ])
    return now


def test_the_page_draws_24_hours_and_7_days_from_the_rollups_with_every_number_in_a_table(history, browser_for):
    page = text(browser_for("ops").get("/health"))
    day, week = page.split("Last 24 hours", 1)[1].split("Last 7 days", 1)
    # Lateness, throughput, backlog, and the lag of every clock job, for each of the two ranges.
    assert page.count("<svg") == 2 * (3 + len(CLOCK_JOBS))
    assert 'role="img"' in page and "<script" not in day and "<script" not in week
    assert "39 published, 1 failed, 0 missed." in day and "134 published, 1 failed, 5 missed." in week
    # 11:00 UTC is 07:00 in New York: the hour holding both busy minutes.
    assert '<th scope="row">07:00–08:00</th><td>40</td><td>0.20 s</td><td>3.00 s</td><td>4.00 s</td>' in day
    assert '<th scope="row">07:00–08:00</th><td>39</td><td>1</td><td>0</td>' in day
    assert "The largest backlog a tick found was 7 rows" in day and "was 50 rows" in week
    assert "no tick ran" in day
    assert "reconcile: longest without a start" in day and "1 errored" in day
    assert "never finished" in page  # the reconciler's last run: twenty minutes and no end


def test_a_bucket_sums_its_minutes_and_a_jobs_lag_grows_until_it_starts_again(app, history, clock):
    with app.app_context(), read_session() as session:
        day, week = read_trends(session, clock.now(), [(timedelta(hours=24), timedelta(hours=1)),
                                                       (timedelta(days=7), timedelta(hours=4))], kinds=["tick"])
    busy = next(b for b in day.buckets if b.claims)
    assert (busy.claims, busy.p50, busy.p95, busy.max, busy.backlog, busy.minutes) == (40, 0.2, 3.0, 4.0, 7, 2)
    assert len(day.buckets) == 24 and len(week.buckets) == 42
    assert sum(b.missed for b in week.buckets) == 5 and sum(b.minutes for b in week.buckets) == 4
    burst = next(b for b in week.buckets if b.missed)
    assert (burst.claims, burst.p95, burst.backlog) == (100, 8.0, 50)
    tick_lag = [entry.lag for entry in day.jobs["tick"]]
    # The tick last started 59 minutes ago: every bucket since says how long it has gone without one.
    assert tick_lag[-1] == pytest.approx((clock.now() - (history - HOUR + timedelta(minutes=1))).total_seconds())
    errored = [b.start for b, entry in zip(day.buckets, day.jobs["reconcile"]) if entry.errors]
    assert errored == [history - HOUR]


def test_a_week_of_charts_reads_hour_rollups_and_the_unfinished_hours_minutes_through_indexes(app, clock, backend):
    now = clock.now()
    one = lambda minute: rollup(minute, claims=1, p50=0.1, p95=0.1, latest=0.1, published=1)  # noqa: E731
    hours = [now - timedelta(hours=n) for n in range(2, 30 * 24)]  # a month of finished hours, to 10:00
    tail = [now - HOUR + timedelta(minutes=m) for m in range(59)]  # 11:00 to 11:58: an hour not finished yet
    seed(app, [tick_run(hour + HOUR + timedelta(minutes=1), [],
                        hours=[{"hour": iso(hour), **merge([one(hour + timedelta(minutes=m)) for m in range(60)])}])
               for hour in hours] + [tick_run(minute + timedelta(minutes=2), [one(minute)]) for minute in tail])
    statements = []
    with app.app_context():
        listener = lambda *args: statements.append(args[2])  # noqa: E731
        event.listen(db.engine, "before_cursor_execute", listener)
        try:
            with read_session() as session:
                [week] = read_trends(session, now, [(timedelta(days=7), timedelta(hours=4))], kinds=["tick"])
        finally:
            event.remove(db.engine, "before_cursor_execute", listener)
        # The week's buckets are aligned on four hours; the first starts 6 days 20 hours before now.
        assert sum(b.published for b in week.buckets) == (6 * 24 + 20 - 1) * 60 + 59
        reads = [s for s in statements if "clock_runs" in s]
        assert len(reads) == 3  # the hours, the minutes since the last finished hour, the tick's start before
        if backend == "sqlite":
            with read_session() as session:
                plans = [" ".join(str(row) for row in session.connection().exec_driver_sql(
                    "EXPLAIN QUERY PLAN " + read.replace("?", "'x'"), ()).all()) for read in reads[:2]]
            assert "ix_clock_runs_rollup_hour" in plans[0] and "ix_clock_runs_kind_started" in plans[1], plans


def test_metrics_carry_each_jobs_last_success_and_a_lateness_histogram(app, history, clock):
    now = clock.now()
    late = [0] * (len(LATENESS_BUCKETS) + 1)
    late[LATENESS_BUCKETS.index(1.0)] = 3
    late[LATENESS_BUCKETS.index(60.0)] = 1
    seed(app, [tick_run(now - timedelta(minutes=3), [rollup(now - timedelta(minutes=5), claims=4, histogram=late,
                                                            total=42.5)], took=timedelta(seconds=2.5))])
    body = text(app.test_client().get("/metrics"))
    samples = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families(body) for sample in family.samples}
    tick, reconcile = (("kind", "tick"),), (("kind", "reconcile"),)
    success = now - timedelta(minutes=3) + timedelta(seconds=2.5)
    assert samples[("tickwork_clock_job_last_success_timestamp_seconds", tick)] == success.timestamp()
    assert samples[("tickwork_clock_job_last_success_duration_seconds", tick)] == 2.5
    assert samples[("tickwork_clock_job_last_run_failed", tick)] == 0
    assert samples[("tickwork_clock_job_last_run_failed", reconcile)] == 1  # it never finished
    assert ("tickwork_clock_job_last_success_timestamp_seconds", reconcile) not in samples  # it never succeeded
    assert "# TYPE tickwork_firing_lateness_seconds histogram" in body
    buckets = {dict(labels)["le"]: value for (name, labels), value in samples.items()
               if name == "tickwork_firing_lateness_seconds_bucket"}
    assert (buckets["0.5"], buckets["1.0"], buckets["30.0"], buckets["60.0"], buckets["+Inf"]) == (0, 3, 3, 4, 4)
    assert samples[("tickwork_firing_lateness_seconds_gcount", ())] == 4
    assert samples[("tickwork_firing_lateness_seconds_gsum", ())] == 42.5


def test_with_a_five_minute_tick_the_tick_is_stale_after_fifteen(app_config, clock):
    from webapp import create_app

    app = create_app({**app_config, "TICKWORK_POLICY": {"tick_interval": 300}})
    try:
        seed(app, [tick_run(clock.now(), [])])
        clock.advance(minutes=14)
        assert app.test_client().get("/healthz").status_code == 200
        clock.advance(minutes=2)
        assert app.test_client().get("/healthz").status_code == 503
    finally:
        with app.app_context():
            db.engine.dispose()
