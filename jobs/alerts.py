"""The ``alerts`` clock job, and the operator's alert settings as the app holds them."""

from datetime import timedelta

from flask import Flask, current_app

from models.alerts.evaluation import AlertConfig, evaluate
from models.channels.providers.http import http_client
from models.core.database import db
from models.core.runtime import runtime


def alert_config(app: Flask) -> AlertConfig:
    """The operator's rule settings and direct destinations (read and checked at start), with the app's base URL."""
    return AlertConfig(rules=app.config["TICKWORK_ALERT_RULES"], direct=app.config["TICKWORK_ALERT_DESTINATIONS"],
                       base_url=app.config.get("TICKWORK_BASE_URL"),
                       timeout=app.extensions["tickwork"].policy.provider_timeout.total_seconds(), http=http_client())


def database_path() -> str | None:
    """The SQLite database's file, whose disk the ``disk_full`` rule watches; None on PostgreSQL."""
    url = db.engine.url
    return url.database if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") else None


def alerts_once(job_periods: dict[str, timedelta], rules=None, record: bool = True) -> dict:
    """One pass of the alert rules (see models.alerts.evaluation)."""
    rt = runtime()
    return evaluate(clock=rt.clock, config=alert_config(current_app), job_periods=job_periods,
                    database_path=database_path(), rules=rules, announce=rt.announce_due, record=record)
