"""The clock's health: a page for ops, ``/healthz`` for monitors, ``/metrics`` for Prometheus.

``/healthz`` and ``/metrics`` answer without a session: they carry numbers only, never a
workspace's content, and monitors have no one to sign in.
"""

from flask import Blueprint, Response, jsonify, render_template

from models.accounts.tables import Role
from models.overview.health import clock_health
from models.core.database import db
from models.core.runtime import runtime
from webapp.views.context import is_htmx, require_role, viewer

bp = Blueprint("health", __name__)


def _report(gauges: bool = True):
    rt = runtime()
    return clock_health(db.session, rt.now(), rt.hooks.gauges if gauges else (), tick_interval=rt.policy.tick_interval)


def _iso(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


@bp.get("/health")
@require_role(Role.OPS)
def health():
    """Last run of each clock job, backlog, lateness, heartbeats, and a stale-tick warning."""
    v = viewer()
    report = _report()
    template = "health/_health.html" if is_htmx() else "health/health.html"
    return render_template(template, v=v, report=report, stale_after=int(report.tick_stale_after.total_seconds() // 60))


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
        "oldest_due": _iso(report.oldest_due),
        "consumer_alive": report.consumer_alive,
        "jobs": {run.kind: {"started_at": _iso(run.started_at), "finished_at": _iso(run.finished_at),
                            "error": bool(run.error)} for run in report.last_runs},
    }
    return jsonify(body), 503 if report.tick_stale else 200


@bp.get("/metrics")
def metrics():
    """Prometheus text exposition of the clock's numbers."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    report = _report()
    registry = CollectorRegistry()
    Gauge("tickwork_backlog_actions", "Actions due and not yet claimed", registry=registry).set(report.backlog)
    oldest = Gauge("tickwork_oldest_due_age_seconds", "Age of the oldest due, unclaimed action", registry=registry)
    oldest.set((report.now - report.oldest_due).total_seconds() if report.oldest_due else 0)
    age = Gauge("tickwork_clock_job_last_run_age_seconds", "Seconds since each clock job last started", ["kind"],
                registry=registry)
    for run in report.last_runs:
        age.labels(kind=run.kind).set((report.now - run.started_at).total_seconds())
    Gauge("tickwork_tick_stale", "1 when the tick has not run for three tick intervals", registry=registry).set(
        1 if report.tick_stale else 0)
    Gauge("tickwork_consumers_alive", "Consumers with a recent heartbeat", registry=registry).set(
        report.alive_consumers)
    lateness = Gauge("tickwork_claim_lateness_seconds", "Claim lateness over the last hour", ["quantile"],
                     registry=registry)
    for name, value in (("0.5", report.lateness.median), ("0.95", report.lateness.p95), ("1", report.lateness.worst)):
        lateness.labels(quantile=name).set(value.total_seconds() if value else 0)
    for gauge, values in report.gauges:
        exported = Gauge(gauge.name, gauge.help, [gauge.label], registry=registry)
        for label, value in values.items():
            exported.labels(**{gauge.label: label}).set(value)
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST.split(";")[0],
                    headers={"Content-Type": CONTENT_TYPE_LATEST})
