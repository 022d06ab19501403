"""The health page's trends as charts, each with the table of its numbers: lateness, throughput,
backlog, and each clock job's lag, over the last 24 hours and the last 7 days."""

from dataclasses import dataclass
from datetime import timedelta

from models.overview.health import Trend
from webapp.views import charts

# (title, span, bucket): 24 hours, 42 four-hour stretches (buckets are whole hours: see read_trends).
SPANS = [
    ("Last 24 hours", timedelta(hours=24), timedelta(hours=1)),
    ("Last 7 days", timedelta(days=7), timedelta(hours=4)),
]


@dataclass(frozen=True)
class Chart:
    key: str  # unique on the page, for ids
    title: str
    summary: str  # one sentence, the chart's accessible description
    picture: charts.Picture
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class TrendView:
    title: str
    key: str
    charts: list[Chart]


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 120:
        return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


# A minute is rolled up once it has been over for a minute (models.clock.rollup.ROLLUP_DELAY).
NOT_YET = timedelta(minutes=2)


def trend_views(trends: list[Trend], v, now) -> list[TrendView]:
    return [_view(title, trend, v, now) for (title, _, _), trend in zip(SPANS, trends)]


def _view(title: str, trend: Trend, v, now) -> TrendView:
    key = "day" if trend.span <= timedelta(days=1) else "week"
    buckets = trend.buckets
    daily = trend.span > timedelta(days=1)
    stamp = "%a %d %H:%M" if daily else "%H:%M"
    spans = [f"{v.local(b.start).strftime(stamp)}–{v.local(b.end).strftime('%H:%M')}" for b in buckets]
    every = 6 if daily else 4
    x_labels = [(n, v.local(b.start).strftime("%a %d" if daily else "%H:%M"))
                for n, b in enumerate(buckets) if n % every == 0]
    quiet = [b.minutes == 0 and b.start < now - NOT_YET for b in buckets]
    no_data_words = ["no tick ran" if gap else "not rolled up yet" for gap in quiet]

    claims = sum(b.claims for b in buckets)
    worst = max((b.p95 for b in buckets if b.p95 is not None), default=None)
    lateness = Chart(
        key=f"{key}-lateness", title="Firing lateness",
        summary=(f"{claims:,} claims; the worst minute's p95 was {_seconds(worst)}." if claims
                 else "No claims in this span."),
        picture=charts.lines(
            [("median (typical minute)", "line-p50", [b.p50 for b in buckets]),
             ("p95 (worst minute)", "line-p95", [b.p95 for b in buckets]),
             ("latest", "line-max", [b.max for b in buckets])],
            tips=[f"{span}: {b.claims} claims, median {_seconds(b.p50)}, p95 {_seconds(b.p95)}, latest {_seconds(b.max)}"
                  if b.minutes else f"{span}: {none}" for span, b, none in zip(spans, buckets, no_data_words)],
            x_labels=x_labels),
        headers=["From", "Claims", "Median (typical minute)", "p95 (worst minute)", "Latest"],
        rows=[[span, str(b.claims), _seconds(b.p50), _seconds(b.p95), _seconds(b.max)] if b.minutes
              else [span, none, "", "", ""] for span, b, none in zip(spans, buckets, no_data_words)],
    )
    published, failed, missed = (sum(getattr(b, name) for b in buckets) for name in ("published", "failed", "missed"))
    throughput = Chart(
        key=f"{key}-throughput", title="Throughput",
        summary=f"{published:,} published, {failed:,} failed, {missed:,} missed.",
        picture=charts.stacked_bars(
            [("published", "bar-published", [b.published for b in buckets]),
             ("failed", "bar-failed", [b.failed for b in buckets]),
             ("missed", "bar-missed", [b.missed for b in buckets])],
            tips=[f"{span}: {b.published} published, {b.failed} failed, {b.missed} missed" if b.minutes
                  else f"{span}: {none}" for span, b, none in zip(spans, buckets, no_data_words)],
            x_labels=x_labels),
        headers=["From", "Published", "Failed", "Missed"],
        rows=[[span, str(b.published), str(b.failed), str(b.missed)] if b.minutes else [span, none, "", ""]
              for span, b, none in zip(spans, buckets, no_data_words)],
    )
    largest = max((b.backlog for b in buckets if b.backlog is not None), default=None)
    backlog = Chart(
        key=f"{key}-backlog", title="Backlog",
        summary=("No tick measured a backlog in this span." if largest is None
                 else f"The largest backlog a tick found was {largest:,} rows due and unclaimed."),
        picture=charts.stacked_bars(
            [("due and unclaimed", "bar-backlog", [b.backlog for b in buckets])],
            tips=[f"{span}: largest backlog {b.backlog}" if b.backlog is not None else f"{span}: {none}"
                  for span, b, none in zip(spans, buckets, no_data_words)],
            x_labels=x_labels, marks=quiet, mark_css="mark-quiet"),
        headers=["From", "Largest backlog a tick found"],
        rows=[[span, f"{b.backlog:,}" if b.backlog is not None else none]
              for span, b, none in zip(spans, buckets, no_data_words)],
    )
    jobs = []
    for kind, series in sorted(trend.jobs.items()):
        troubled = [job.errors > 0 or job.unfinished > 0 for job in series]
        longest = max((job.lag for job in series if job.lag is not None), default=None)
        errors = sum(job.errors for job in series)
        unfinished = sum(job.unfinished for job in series)
        words = [f"longest without a start {_seconds(longest)}" if longest is not None else "never started"]
        if errors:
            words.append(f"{errors} errored")
        if unfinished:
            words.append(f"{unfinished} never finished")
        jobs.append(Chart(
            key=f"{key}-job-{kind}", title=f"Lag of {kind}",
            summary=f"{kind}: {', '.join(words)}.",
            picture=charts.stacked_bars(
                [("longest without a start", "bar-lag", [job.lag for job in series])],
                tips=[f"{span}: {_seconds(job.lag)} without a start; {job.runs} runs, {job.errors} errored, "
                      f"{job.unfinished} never finished" for span, job in zip(spans, series)],
                x_labels=x_labels, label=charts.seconds_label, marks=troubled),
            headers=["From", "Longest without a start", "Runs", "Errored", "Never finished"],
            rows=[[span, _seconds(job.lag) if job.lag is not None else "never started", str(job.runs),
                   str(job.errors), str(job.unfinished)] for span, job in zip(spans, series)],
        ))
    return TrendView(title=title, key=key, charts=[lateness, throughput, backlog, *jobs])
