"""The clock's health: a page for ops, ``/healthz`` for monitors, ``/metrics`` for Prometheus.

``/healthz`` and ``/metrics`` answer without a session: they carry numbers only, never a
workspace's content, and monitors have no one to sign in.
"""

from flask import Blueprint, Response, jsonify, render_template

from jobs.alerts import database_path
from jobs.periodic import CLOCK_JOBS, clock_job_periods
from models.alerts.metrics import alert_metrics
from models.alerts.operations import list_alerts
from models.accounts.permissions import Permission
from models.core.database import db
from models.core.runtime import runtime
from models.overview.channel_health import channels_needing_reconnect
from models.overview.health import clock_health, last_hour_lateness, read_trends
from webapp.views.wording import summary_sentence
from webapp.views.context import is_htmx, require, viewer
from webapp.views.trends import SPANS, trend_views

bp = Blueprint("health", __name__)


def _report(gauges: bool = True):
    rt = runtime()
    return clock_health(db.session, rt.now(), rt.hooks.gauges if gauges else (), tick_interval=rt.policy.tick_interval,
                        kinds=[job.name for job in CLOCK_JOBS])


def _iso(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


@bp.get("/health")
@require(Permission.OPERATE)
def health():
    """Each clock job's state, backlog, lateness, heartbeats, a stale-tick warning; the page adds the trends."""
    v = viewer()
    report = _report()
    context = dict(v=v, report=report, stale_after=int(report.tick_stale_after.total_seconds() // 60),
                   open_alerts=list_alerts(db.session, v.workspace.id, open_only=True, limit=20),
                   summary_sentence=summary_sentence,
                   reconnecting=channels_needing_reconnect(db.session, v.workspace.id, report.now))
    if is_htmx():
        return render_template("health/_health.html", **context)
    trends = read_trends(db.session, report.now, [(span, step) for _, span, step in SPANS],
                         kinds=[job.kind for job in report.jobs])
    return render_template("health/health.html", trends=trend_views(trends, v, report.now), **context)


@bp.get("/healthz")
def healthz():
    """JSON for monitors: 200 when the tick ran within three tick intervals, 503 otherwise."""
    report = _report(gauges=False)
    tick = report.last_tick
    body = {
        "status": "stale" if report.tick_stale else "ok",
        "now": _iso(report.now),
        "last_tick": _iso(tick.started_at) if tick else None,
        "tick_age_seconds": round((report.now - tick.started_at).total_seconds()) if tick else None,
        "backlog": report.backlog,
        "backlog_exact": report.backlog_exact,
        "oldest_due": _iso(report.oldest_due),
        "consumer_alive": report.consumer_alive,
        "jobs": {run.kind: {"started_at": _iso(run.started_at), "finished_at": _iso(run.finished_at),
                            "error": bool(run.error)} for run in report.last_runs},
    }
    return jsonify(body), 503 if report.tick_stale else 200


@bp.get("/metrics")
def metrics():
    """Prometheus text exposition of the clock's numbers."""
    from prometheus_client import CollectorRegistry, Gauge
    from prometheus_client.core import GaugeHistogramMetricFamily
    from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.utils import floatToGoString

    report = _report()
    registry = CollectorRegistry()
    Gauge("tickwork_backlog_actions",
          f"Actions due and not yet claimed (above {report.backlog_counted_at_most:,}: the last tick's count)",
          registry=registry).set(report.backlog)
    oldest = Gauge("tickwork_oldest_due_age_seconds", "Age of the oldest due, unclaimed action", registry=registry)
    oldest.set((report.now - report.oldest_due).total_seconds() if report.oldest_due else 0)
    age = Gauge("tickwork_clock_job_last_run_age_seconds", "Seconds since each clock job last started", ["kind"],
                registry=registry)
    success_at = Gauge("tickwork_clock_job_last_success_timestamp_seconds",
                       "When each clock job last finished without an error (Unix time)", ["kind"], registry=registry)
    success_took = Gauge("tickwork_clock_job_last_success_duration_seconds",
                         "How long each clock job's last successful run took", ["kind"], registry=registry)
    troubled = Gauge("tickwork_clock_job_last_run_failed",
                     "1 when a clock job's last run raised or never finished", ["kind"], registry=registry)
    for job in report.jobs:
        if job.last_run is not None:
            age.labels(kind=job.kind).set((report.now - job.last_run.started_at).total_seconds())
            troubled.labels(kind=job.kind).set(1 if job.state in ("errored", "never finished") else 0)
        if job.last_success is not None:
            success_at.labels(kind=job.kind).set(job.last_success.finished_at.timestamp())
            success_took.labels(kind=job.kind).set(job.last_success_duration.total_seconds())
    Gauge("tickwork_tick_stale", "1 when the tick has not run for three tick intervals", registry=registry).set(
        1 if report.tick_stale else 0)
    Gauge("tickwork_consumers_alive", "Consumers with a recent heartbeat", registry=registry).set(
        report.alive_consumers)
    lateness = Gauge("tickwork_claim_lateness_seconds", "Claim lateness over the last hour", ["quantile"],
                     registry=registry)
    for name, value in (("0.5", report.lateness.median), ("0.95", report.lateness.p95), ("1", report.lateness.worst)):
        lateness.labels(quantile=name).set(value.total_seconds() if value else 0)
    histogram = last_hour_lateness(db.session, report.now)
    registry.register(_Fixed(GaugeHistogramMetricFamily(
        "tickwork_firing_lateness_seconds",
        "Firing lateness of the claims in the last 60 rolled-up minutes (claim time minus due time)",
        buckets=[(floatToGoString(bound), count) for bound, count in histogram.buckets],
        gsum_value=histogram.total_seconds)))
    for gauge, values in report.gauges:
        exported = Gauge(gauge.name, gauge.help, [gauge.label], registry=registry)
        for label, value in values.items():
            exported.labels(**{gauge.label: label}).set(value)
    _alert_numbers(registry, report.now)
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST.split(";")[0],
                    headers={"Content-Type": CONTENT_TYPE_LATEST})


def _alert_numbers(registry, now) -> None:
    """What the alert rules look at (models/alerts/metrics.py), so Prometheus can alert on the same."""
    from prometheus_client import Gauge

    for family in alert_metrics(db.session, now, job_periods=clock_job_periods(runtime().policy),
                                database_path=database_path()):
        exported = Gauge(family.name, family.help, list(family.labels), registry=registry)
        for labels, value in family.values.items():
            (exported.labels(*labels) if family.labels else exported).set(value)


class _Fixed:
    """A collector that yields one metric family computed for this scrape."""

    def __init__(self, family):
        self.family = family

    def collect(self):
        yield self.family
