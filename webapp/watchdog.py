"""Each web process's minute check of the engine itself: is the tick running, is a consumer alive?

The ``alerts`` clock job runs on the consumers, so when they are what stopped, nothing would
raise the alert. Each web process therefore runs the rules about the engine itself
(``clock_stale`` for the tick, ``no_consumer``) once a minute on a background thread of its own,
started at its first request, and sends their alerts directly to the operator's destinations
(``TICKWORK_ALERT_SMTP_URL``, ``TICKWORK_ALERT_WEBHOOK_URL``), around the queue. However many
web processes check, one sender wins the compare-and-set on the alert row (``direct_sent_at``)
and sends each message once; the send goes through the egress policy like every other.
``TICKWORK_ALERT_WATCHDOG=0`` turns the check off (tests turn it on when they want it).
"""

import logging
import os
import threading

from flask import Flask

from jobs.periodic import alerts_pass
from models.alerts.rules import ENGINE_RULES
from models.clock.tick import TICK

log = logging.getLogger("tickwork.alerts")

INTERVAL_SECONDS = 60


def check_engine(app: Flask) -> dict:
    """One check: the engine's rules over the tick, their alerts raised, reminded or resolved, and sent directly."""
    with app.app_context():
        policy = app.extensions["tickwork"].policy
        from jobs.alerts import alerts_once

        return alerts_once({TICK: policy.tick_interval}, rules=ENGINE_RULES, record=False)


class EngineWatchdog(threading.Thread):
    """Runs :func:`check_engine` every minute until the process ends."""

    def __init__(self, app: Flask, interval: float):
        super().__init__(name="tickwork-engine-watchdog", daemon=True)
        self.app = app
        self.interval = interval
        self.stopped = threading.Event()
        self.checks = 0

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                check_engine(self.app)
            except Exception:  # a busy or unreachable database must not end the check; the next minute retries
                log.exception("the engine watchdog's check failed")
            self.checks += 1

    def stop(self):
        self.stopped.set()


def enabled(app: Flask) -> bool:
    chosen = app.config.get("TICKWORK_ALERT_WATCHDOG")
    if chosen is None:
        return not app.testing
    return str(chosen).strip() not in ("0", "false", "no", "off", "")


_started: dict[tuple[int, int], EngineWatchdog] = {}
_lock = threading.Lock()


def ensure_started(app: Flask) -> EngineWatchdog | None:
    """The process's watchdog for ``app``, started on the first call in this process (after a fork too)."""
    key = (os.getpid(), id(app))
    watchdog = _started.get(key)
    if watchdog is not None:
        return watchdog
    with _lock:
        if key not in _started:
            interval = float(app.config.get("TICKWORK_ALERT_WATCHDOG_INTERVAL") or INTERVAL_SECONDS)
            _started[key] = EngineWatchdog(app, interval)
            _started[key].start()
        return _started[key]


def init_app(app: Flask) -> None:
    if not enabled(app):
        return

    @app.before_request
    def _start_watchdog():
        """Each web process starts its engine check with its first request."""
        ensure_started(app)
