"""When the engine itself is what stopped, each web process's check sends the instance alert directly: to a
loopback SMTP server, once however many processes check, through the egress policy."""

import threading
import time

import pytest

from models.clock import heartbeats
from tests.integration.alert_helpers import alerts, alerts_pass, notification_keys, tick
from tests.integration.smtp_helpers import Mailbox, smtp_server  # noqa: F401 (the fixture)


@pytest.fixture
def mailbox():
    return Mailbox()


@pytest.fixture
def app_config(app_config, smtp_server, mailbox):
    port = smtp_server(mailbox)
    app_config.update(TICKWORK_ALERT_SMTP_URL=f"smtp://127.0.0.1:{port}?security=none",
                      TICKWORK_ALERT_EMAIL_TO="oncall@example.test", TICKWORK_ALERT_EMAIL_FROM="tickwork@example.test",
                      TICKWORK_BASE_URL="https://tickwork.example.test")
    return app_config


def consumer_dies(app, clock):
    tick(app)
    with app.app_context():
        heartbeats.beat("host:1", host="host", pid=1, started_at=clock.now(), now=clock.now())
    clock.advance(minutes=3)  # no heartbeat for three minutes; the tick is not stale yet


def test_with_no_consumer_alive_the_web_processs_check_sends_the_instance_alert_directly_once(
        app, world, clock, mailbox):
    from webapp.watchdog import check_engine

    consumer_dies(app, clock)
    summary = check_engine(app)
    assert [item["subject"] for item in summary["fired"]] == ["queue:default"]
    assert summary["direct_sent"] == 1
    (message,) = mailbox.messages
    sender, recipients, text = message
    assert (sender, recipients) == ("tickwork@example.test", ["oncall@example.test"])
    assert "No consumer of the default queue is alive" in text and "not through Tickwork's queue" in text
    (alert,) = alerts(app, rule="no_consumer")
    assert f"https://tickwork.example.test/alerts/{alert.id}" in text
    assert alert.direct_sent_at is not None and alert.direct_error is None
    assert notification_keys(app, world.workspace_id) == [f"alert:{alert.id}:fired:0"]  # the bell too

    for _ in range(3):  # later checks within the cooldown send nothing more
        clock.advance(minutes=1)
        tick(app)
        check_engine(app)
    assert len(mailbox.messages) == 1
    with app.app_context():
        heartbeats.beat("host:2", host="host", pid=2, started_at=clock.now(), now=clock.now())
    summary = check_engine(app)
    assert [item["subject"] for item in summary["resolved"]] == ["queue:default"]
    assert len(mailbox.messages) == 2 and "Resolved: No consumer" in mailbox.messages[1][2]
    check_engine(app)
    assert len(mailbox.messages) == 2


def test_many_web_processes_checking_at_once_send_the_alert_once(app, clock, mailbox):
    from webapp.watchdog import check_engine

    consumer_dies(app, clock)
    barrier = threading.Barrier(3)
    failures = []

    def web_process():
        try:
            barrier.wait(timeout=10)
            check_engine(app)
        except Exception as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=web_process) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert len(alerts(app, rule="no_consumer")) == 1
    assert len(mailbox.messages) == 1


def test_the_alerts_job_sends_instance_alerts_directly_too_and_a_refused_address_is_recorded(
        app, clock, mailbox, egress_allow):
    tick(app)
    clock.advance(minutes=6)
    egress_allow("")  # the relay on loopback is now outside the policy: refused, and said so
    alerts_pass(app, rules=["clock_stale"])
    (alert,) = alerts(app, rule="clock_stale", subject="tick")
    assert mailbox.messages == []
    assert "destination not allowed" in alert.direct_error


def test_the_check_starts_with_a_web_processs_first_request_and_runs_on_its_own(app_config, clock, mailbox):
    from webapp import create_app
    from webapp import watchdog

    app_config.update(TICKWORK_ALERT_WATCHDOG="1", TICKWORK_ALERT_WATCHDOG_INTERVAL=0.2)
    web = create_app(app_config)
    consumer_dies(web, clock)
    assert web.test_client().get("/healthz").status_code in (200, 503)
    running = watchdog.ensure_started(web)
    deadline = time.monotonic() + 30
    while not mailbox.messages and time.monotonic() < deadline:
        time.sleep(0.1)
    running.stop()
    running.join(timeout=10)
    assert len(mailbox.messages) == 1 and running.checks >= 1
    from models.core.database import db

    with web.app_context():
        db.engine.dispose()
