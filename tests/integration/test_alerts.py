"""Alert rules, time-travelled: firing after the threshold, nothing during the cooldown, a reminder after it,
acknowledging and silencing, resolving once, and each message once under racing evaluators."""

import json
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from models.alerts.operations import acknowledge_alert, add_destination, silence_alert
from models.alerts.tables import Alert
from models.channels.tables import Channel
from models.core.database import write_session
from models.core.errors import Conflict, InvalidInput
from models.core.runtime import runtime
from tests.conftest import make_world
from tests.integration.alert_helpers import (
    OTHER_JOBS, alert_actions, alerts, alerts_pass, notification_keys, ran, received_json, subjects, tick,
)
from tests.integration.clock_helpers import add_actions, make_channel, rows


def keep_other_jobs_running(app):
    """The clock's jobs other than the tick run now (so only the tick goes stale)."""
    ran(app, *OTHER_JOBS)


def test_a_tick_that_stops_fires_one_alert_after_five_minutes_nothing_in_the_cooldown_and_one_resolved(
        app, world, clock):
    tick(app)
    keep_other_jobs_running(app)
    assert alerts_pass(app, rules=["clock_stale"])["fired"] == []
    for _ in range(5):  # five minutes without a tick: not more than five yet
        clock.advance(minutes=1)
        keep_other_jobs_running(app)
        summary = alerts_pass(app, rules=["clock_stale"])
        assert summary["fired"] == [] and summary["firing"] == []
    clock.advance(seconds=30)
    keep_other_jobs_running(app)
    summary = alerts_pass(app, rules=["clock_stale"])
    assert subjects(summary, "fired", "clock_stale") == ["tick"]
    (fired,) = summary["fired"]
    assert set(fired) == {"id", "rule", "subject", "figures"}
    assert fired["figures"]["job"] == "tick" and fired["figures"]["minutes_since"] == 5.5
    alert_id = fired["id"]
    assert notification_keys(app, world.workspace_id) == [f"alert:{alert_id}:fired:0"]

    for _ in range(11):  # the cooldown: 60 minutes of passes, nothing more is sent
        clock.advance(minutes=5)
        keep_other_jobs_running(app)
        summary = alerts_pass(app, rules=["clock_stale"])
        assert summary["fired"] == [] and subjects(summary, "firing", "clock_stale") == ["tick"]
    assert notification_keys(app, world.workspace_id) == [f"alert:{alert_id}:fired:0"]
    clock.advance(minutes=5)  # 60 minutes since the first message
    keep_other_jobs_running(app)
    alerts_pass(app, rules=["clock_stale"])
    assert notification_keys(app, world.workspace_id) == [f"alert:{alert_id}:fired:0", f"alert:{alert_id}:fired:1"]

    tick(app)
    summary = alerts_pass(app, rules=["clock_stale"])
    assert subjects(summary, "resolved", "clock_stale") == ["tick"] and summary["firing"] == []
    clock.advance(minutes=1)
    tick(app)
    keep_other_jobs_running(app)
    assert alerts_pass(app, rules=["clock_stale"])["resolved"] == []
    assert notification_keys(app, world.workspace_id)[-1] == f"alert:{alert_id}:resolved"
    (alert,) = alerts(app, rule="clock_stale")
    assert alert.state == "resolved" and alert.notified_n == 1


def test_a_clock_job_that_never_ran_is_counted_from_the_first_tick_and_goes_stale_after_three_periods(app, clock):
    tick(app)
    ran(app, *(job for job in OTHER_JOBS if job != "drip-advance"))
    clock.advance(minutes=3)
    tick(app)
    ran(app, *(job for job in OTHER_JOBS if job != "drip-advance"))
    assert "drip-advance" not in subjects(alerts_pass(app, rules=["clock_stale"]), "fired", "clock_stale")
    clock.advance(seconds=30)
    tick(app)
    ran(app, *(job for job in OTHER_JOBS if job != "drip-advance"))
    assert subjects(alerts_pass(app, rules=["clock_stale"]), "fired", "clock_stale") == ["drip-advance"]


def test_an_acknowledged_alert_sends_nothing_more_until_it_resolves(app, world, clock):
    tick(app)
    clock.advance(minutes=6)
    keep_other_jobs_running(app)
    (fired,) = alerts_pass(app, rules=["clock_stale"])["fired"]
    with app.app_context(), write_session() as session:
        acknowledge_alert(session, world.workspace_id, fired["id"], user_id=world.users["ops"], now=runtime().now())
    for _ in range(4):  # three cooldowns
        clock.advance(minutes=50)
        keep_other_jobs_running(app)
        alerts_pass(app, rules=["clock_stale"])
    assert notification_keys(app, world.workspace_id) == [f"alert:{fired['id']}:fired:0"]
    with app.app_context(), write_session() as session, pytest.raises(Conflict):
        acknowledge_alert(session, world.workspace_id, fired["id"], user_id=world.users["ops"], now=runtime().now())
    tick(app)
    alerts_pass(app, rules=["clock_stale"])
    assert notification_keys(app, world.workspace_id) == [f"alert:{fired['id']}:fired:0",
                                                          f"alert:{fired['id']}:resolved"]
    (alert,) = alerts(app, rule="clock_stale")
    assert alert.acknowledged_by_id == world.users["ops"]


def test_a_silenced_alert_sends_no_reminder_until_its_silence_ends(app, world, clock):
    tick(app)
    clock.advance(minutes=6)
    keep_other_jobs_running(app)
    (fired,) = alerts_pass(app, rules=["clock_stale"])["fired"]
    with app.app_context(), write_session() as session:
        with pytest.raises(InvalidInput):
            silence_alert(session, world.workspace_id, fired["id"], hours="forever", user_id=world.users["ops"],
                          now=runtime().now())
        silence_alert(session, world.workspace_id, fired["id"], hours=3, user_id=world.users["ops"],
                      now=runtime().now())
    for _ in range(5):  # 2 h 30: past two cooldowns, inside the silence
        clock.advance(minutes=30)
        keep_other_jobs_running(app)
        alerts_pass(app, rules=["clock_stale"])
    assert notification_keys(app, world.workspace_id) == [f"alert:{fired['id']}:fired:0"]
    clock.advance(minutes=31)
    keep_other_jobs_running(app)
    alerts_pass(app, rules=["clock_stale"])
    assert notification_keys(app, world.workspace_id) == [f"alert:{fired['id']}:fired:0",
                                                          f"alert:{fired['id']}:fired:1"]


def failing_channel(app, httpserver, workspace="Acme"):
    httpserver.expect_request("/failing").respond_with_data("bad token", status=401)
    return make_channel(app, "webhook", {"url": httpserver.url_for("/failing")}, secret="s", name="flaky",
                        workspace=workspace)


def alert_destination(app, httpserver, workspace_id: int, workspace="Acme"):
    httpserver.expect_request("/alerts").respond_with_json({"id": "ok"})
    make_channel(app, "webhook", {"url": httpserver.url_for("/alerts")}, secret="s", name="ops-hook",
                 workspace=workspace)
    with app.app_context(), write_session() as session:
        add_destination(session, workspace_id, channel="ops-hook", recipient="ops-room", now=runtime().now())


def test_a_channels_failures_over_the_threshold_send_one_alert_with_the_top_reasons_to_its_destination(
        app, world, clock, httpserver):
    failing_channel(app, httpserver)
    alert_destination(app, httpserver, world.workspace_id)
    add_actions(app, world.workspace_id, 10, channel="flaky")
    tick(app)
    assert alerts_pass(app, rules=["channel_failures"])["fired"] == []  # ten is not more than ten
    add_actions(app, world.workspace_id, 1, channel="flaky", thing_prefix="more")
    tick(app)
    (fired,) = alerts_pass(app, rules=["channel_failures"])["fired"]
    assert fired["rule"] == "channel_failures" and fired["figures"]["failed"] == 11
    assert fired["figures"]["top_reasons"][0]["count"] == 11
    assert fired["figures"]["top_reasons"][0]["reason"].startswith("permanent")
    (action,) = alert_actions(app)
    assert (action.origin, action.thing_id, action.target_key) == ("system", f"alert:{fired['id']}:fired:0",
                                                                   "ops-room")
    tick(app)
    sent = [body for body in received_json(httpserver) if body["action_type"] == "alert"]
    assert len(sent) == 1
    assert sent[0]["payload"]["alert"]["rule"] == "channel_failures"
    assert sent[0]["payload"]["alert"]["figures"]["top_reasons"][0]["count"] == 11
    assert "reason: permanent" in sent[0]["payload"]["text"]
    clock.advance(minutes=11)  # the failures leave the window: resolved, and that is sent once too
    (resolved,) = alerts_pass(app, rules=["channel_failures"])["resolved"]
    tick(app)
    sent = [body for body in received_json(httpserver) if body["action_type"] == "alert"]
    assert [body["payload"]["alert"]["message"] for body in sent] == ["fired", "resolved"]
    assert rows(app, [a.id for a in alert_actions(app)]) and all(a.status == "published" for a in alert_actions(app))


def test_two_racing_evaluators_raise_one_alert_and_send_it_once(app, world, clock, httpserver):
    failing_channel(app, httpserver)
    alert_destination(app, httpserver, world.workspace_id)
    add_actions(app, world.workspace_id, 11, channel="flaky")
    tick(app)
    barrier = threading.Barrier(2)
    summaries, failures = [], []

    def evaluator():
        try:
            with app.app_context():
                from jobs.periodic import alerts_pass as one_pass

                barrier.wait(timeout=10)
                summaries.append(one_pass(rules=["channel_failures"]))
        except Exception as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=evaluator) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert sorted(len(summary["fired"]) for summary in summaries) == [0, 1]
    assert len(alerts(app, rule="channel_failures")) == 1
    assert len(alert_actions(app)) == 1
    assert len(notification_keys(app, world.workspace_id)) == 1
    tick(app)
    assert len([body for body in received_json(httpserver) if body["action_type"] == "alert"]) == 1


def test_a_workspace_rule_is_per_workspace_and_another_workspaces_failures_raise_nothing_here(
        app, world, clock, httpserver):
    other = make_world(app, name="Other")
    failing_channel(app, httpserver, workspace="Other")
    add_actions(app, other.workspace_id, 11, channel="flaky")
    tick(app)
    (fired,) = alerts_pass(app, rules=["channel_failures"])["fired"]
    assert fired["workspace_id"] == other.workspace_id
    assert notification_keys(app, world.workspace_id) == []
    assert notification_keys(app, other.workspace_id) == [f"alert:{fired['id']}:fired:0"]


def test_the_alerts_command_prints_one_passs_summary_as_json(app, world, clock):
    tick(app)
    clock.advance(minutes=10)
    keep_other_jobs_running(app)
    result = app.test_cli_runner().invoke(args=["alerts"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert {"fired", "resolved", "firing"} <= set(summary)
    assert subjects(summary, "fired", "clock_stale") == ["tick"]
    with app.app_context():
        from models.core.database import read_session

        with read_session() as session:
            assert session.scalar(select(Alert.rule)) == "clock_stale"
            assert session.scalar(select(Channel.id)) is not None


def test_a_member_who_takes_a_rule_as_digest_gets_only_the_daily_digest_once(app, world, clock, httpserver):
    from models.alerts.operations import set_preference

    failing_channel(app, httpserver)
    alert_destination(app, httpserver, world.workspace_id)  # the team's room: every alert at once
    with app.app_context(), write_session() as session:
        add_destination(session, world.workspace_id, channel="ops-hook", recipient="ops@acme.test",
                        member="ops@acme.test", now=runtime().now())
        set_preference(session, world.workspace_id, world.users["ops"], "channel_failures", "digest",
                       now=runtime().now())
    add_actions(app, world.workspace_id, 11, channel="flaky")
    tick(app)
    (fired,) = alerts_pass(app, rules=["channel_failures"])["fired"]
    assert [a.target_key for a in alert_actions(app)] == ["ops-room"]  # not the member who chose the digest
    clock.advance(hours=11)  # 19:00 in New York: the same day there
    alerts_pass(app, rules=["channel_failures"])
    assert [a.target_key for a in alert_actions(app)] == ["ops-room", "ops-room"]  # the room heard it resolve
    clock.advance(hours=6)  # 01:00 the next day in New York
    alerts_pass(app, rules=["channel_failures"])
    alerts_pass(app, rules=["channel_failures"])
    digests = [a for a in alert_actions(app) if a.target_key == "ops@acme.test"]
    assert len(digests) == 1
    (digest,) = digests
    assert digest.thing_id == f"alert-digest:{world.users['ops']}:2026-06-01" and digest.origin == "system"
    assert [item["id"] for item in digest.payload["digest"]["alerts"]] == [fired["id"]]
    tick(app)
    sent = [body for body in received_json(httpserver) if body.get("target_key") == "ops@acme.test"]
    assert len(sent) == 1 and "Daily alert digest for 01 Jun 2026" in sent[0]["payload"]["subject"]


def test_a_destination_naming_a_member_who_left_the_workspace_receives_nothing(app, world, clock, httpserver):
    from sqlalchemy import delete

    from models.accounts.tables import Membership
    from models.alerts.operations import set_preference

    failing_channel(app, httpserver)
    alert_destination(app, httpserver, world.workspace_id)
    with app.app_context(), write_session() as session:
        add_destination(session, world.workspace_id, channel="ops-hook", recipient="ops@acme.test",
                        member="ops@acme.test", now=runtime().now())
        add_destination(session, world.workspace_id, channel="ops-hook", recipient="admin@acme.test",
                        member="admin@acme.test", now=runtime().now())
        set_preference(session, world.workspace_id, world.users["admin"], "channel_failures", "digest",
                       now=runtime().now())
        session.execute(delete(Membership).where(Membership.user_id.in_([world.users["ops"],
                                                                         world.users["admin"]])))
    add_actions(app, world.workspace_id, 11, channel="flaky")
    tick(app)
    assert len(alerts_pass(app, rules=["channel_failures"])["fired"]) == 1
    assert [a.target_key for a in alert_actions(app)] == ["ops-room"]
    clock.advance(hours=17)  # the next day in New York: no digest for the admin who left
    alerts_pass(app, rules=["channel_failures"])
    assert "admin@acme.test" not in [a.target_key for a in alert_actions(app)]
