"""Each alert rule holds when its figures say so, and only then; settings change thresholds per workspace."""

import pytest
from sqlalchemy import select

from models.actions import lifecycle as action_lifecycle
from models.alerts.operations import save_rule_setting
from models.clock import heartbeats
from models.clock.runs import finish_run, start_run
from models.core.database import write_session
from models.core.errors import InvalidInput
from models.core.moves import Actor
from tests.integration.alert_helpers import alerts, alerts_pass, subjects, tick
from tests.integration.clock_helpers import add_actions, make_channel


def test_no_live_consumer_fires_after_two_minutes_and_a_heartbeat_resolves_it(app, world, clock):
    tick(app)
    with app.app_context():
        heartbeats.beat("host:1", host="host", pid=1, started_at=clock.now(), now=clock.now())
    clock.advance(minutes=2)
    assert alerts_pass(app, rules=["no_consumer"])["fired"] == []
    clock.advance(seconds=1)
    (fired,) = alerts_pass(app, rules=["no_consumer"])["fired"]
    assert fired["subject"] == "queue:default" and fired["figures"]["last_beat_at"] == "2026-06-01T12:00:00Z"
    with app.app_context():
        heartbeats.beat("host:2", host="host", pid=2, started_at=clock.now(), now=clock.now())
    assert subjects(alerts_pass(app, rules=["no_consumer"]), "resolved", "no_consumer") == ["queue:default"]


def test_rows_failed_as_worker_lost_raise_one_alert_naming_them_for_a_person_to_decide(app, world, clock):
    ids = add_actions(app, world.workspace_id, 2)
    with app.app_context(), write_session() as session:
        for action_id in ids:
            assert action_lifecycle.claim(session, action_id, now=clock.now(), actor=Actor(label="test")).ok
    clock.advance(minutes=11)  # past the recovery timeout: the worker is declared lost
    from jobs.clock import recover_once

    with app.app_context():
        recover_once()
    (fired,) = alerts_pass(app, rules=["outcome_unknown"])["fired"]
    assert fired["workspace_id"] == world.workspace_id
    assert fired["figures"]["rows"] == 2 and sorted(fired["figures"]["action_ids"]) == sorted(ids)
    clock.advance(hours=25)  # out of the window
    assert len(alerts_pass(app, rules=["outcome_unknown"])["resolved"]) == 1


def test_lateness_p95_over_the_threshold_fires_for_the_instance_and_for_the_workspace(app, world, clock):
    add_actions(app, world.workspace_id, 5)
    clock.advance(seconds=50)
    tick(app)
    assert alerts_pass(app, rules=["lateness_p95"])["fired"] == []  # 50 s late: under a minute
    add_actions(app, world.workspace_id, 20, thing_prefix="late")
    clock.advance(seconds=90)
    tick(app)
    fired = alerts_pass(app, rules=["lateness_p95"])["fired"]
    assert sorted(item.get("workspace_id", 0) for item in fired) == [0, world.workspace_id]
    assert all(item["figures"]["p95_seconds"] == 90 for item in fired)
    clock.advance(minutes=11)
    assert len(alerts_pass(app, rules=["lateness_p95"])["resolved"]) == 2


def test_a_workspaces_own_threshold_overrides_the_default_and_a_rule_turned_off_resolves(
        app, world, clock, httpserver):
    httpserver.expect_request("/failing").respond_with_data("no", status=401)
    make_channel(app, "webhook", {"url": httpserver.url_for("/failing")}, secret="s", name="flaky")
    add_actions(app, world.workspace_id, 12, channel="flaky")
    tick(app)
    with app.app_context(), write_session() as session:
        with pytest.raises(InvalidInput) as refused:
            save_rule_setting(session, world.workspace_id, "channel_failures", values={"threshold": "many"},
                              now=clock.now())
        assert refused.value.field == "threshold"
        with pytest.raises(InvalidInput) as refused:
            save_rule_setting(session, world.workspace_id, "channel_failures", values={"window": "5"},
                              now=clock.now())
        assert refused.value.field == "window"
        with pytest.raises(InvalidInput):
            save_rule_setting(session, world.workspace_id, "clock_stale", values={}, now=clock.now())
        save_rule_setting(session, world.workspace_id, "channel_failures", values={"threshold": "20"},
                          now=clock.now())
    assert alerts_pass(app, rules=["channel_failures"])["fired"] == []
    with app.app_context(), write_session() as session:
        save_rule_setting(session, world.workspace_id, "channel_failures", values={"threshold": "5"},
                          now=clock.now())
    assert len(alerts_pass(app, rules=["channel_failures"])["fired"]) == 1
    with app.app_context(), write_session() as session:
        save_rule_setting(session, world.workspace_id, "channel_failures", values={"enabled": "0"},
                          now=clock.now())
    assert len(alerts_pass(app, rules=["channel_failures"])["resolved"]) == 1


def test_the_archive_job_failing_fires_and_its_next_good_run_resolves(app, clock):
    with app.app_context():
        finish_run(start_run("archive", now=clock.now()), now=clock.now(), summary={}, error="OSError: disk full")
    (fired,) = alerts_pass(app, rules=["archive_failing"])["fired"]
    assert fired["figures"]["error"] == "OSError: disk full"
    clock.advance(hours=1)
    with app.app_context():
        finish_run(start_run("archive", now=clock.now()), now=clock.now(), summary={})
    assert len(alerts_pass(app, rules=["archive_failing"])["resolved"]) == 1


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_ALERT_RULES_JSON"] = '{"disk_full": {"threshold": 0.0001}}'
    app_config["TICKWORK_BASE_URL"] = "https://tickwork.example.test"  # drips sign their unsubscribe links with it
    return app_config


@pytest.mark.only_backend("sqlite")
def test_the_disk_of_the_sqlite_database_above_the_operators_threshold_fires(app):
    (fired,) = alerts_pass(app, rules=["disk_full"])["fired"]
    assert fired["subject"].startswith("disk:") and fired["figures"]["database_bytes"] > 0
    assert alerts(app, rule="disk_full")[0].scope == "instance"


def test_a_work_paused_by_its_failures_fires_per_work(app, world, clock):
    from models.works.tables import Work, WorkSchedule

    with app.app_context(), write_session() as session:
        work = Work(workspace_id=world.workspace_id, name="digest", pipeline="log", created_at=clock.now(),
                    updated_at=clock.now())
        session.add(work)
        session.flush()
        session.add(WorkSchedule(work_id=work.id, workspace_id=world.workspace_id, cadence="hourly", status="paused", anchor_at=clock.now(),
                                 failure_count=3, max_failure_before_pause=3, paused_reason="paused after 3 failures",
                                 created_at=clock.now(), updated_at=clock.now()))
        work_id = work.id
    (fired,) = alerts_pass(app, rules=["work_auto_paused"])["fired"]
    assert fired["subject"] == f"work:{work_id}" and fired["figures"]["failures"] == 3


def test_a_channel_throttled_for_more_than_fifteen_minutes_fires_with_its_held_rows(app, world, clock, httpserver):
    httpserver.expect_request("/slow").respond_with_json({"id": "ok"})
    make_channel(app, "webhook", {"url": httpserver.url_for("/slow"), "rate": "1/min"}, secret="s", name="slow")
    add_actions(app, world.workspace_id, 20, channel="slow")
    for _ in range(15):  # one send a minute: the rows behind wait
        tick(app)
        clock.advance(minutes=1)
    tick(app)
    assert alerts_pass(app, rules=["channel_throttled"])["fired"] == []
    clock.advance(seconds=30)
    tick(app)
    (fired,) = alerts_pass(app, rules=["channel_throttled"])["fired"]
    assert fired["figures"]["channel"] == "slow" and 1 <= fired["figures"]["held_rows"] < 20


def test_a_channel_in_reconnect_needed_fires_per_workspace_and_reconnecting_resolves_it(app, world, clock):
    from models.channels.connections import mark_reconnect_needed
    from models.channels.operations import save_channel
    from models.channels.tables import Channel
    from models.core.runtime import runtime

    other = make_channel(app, "mastodon", {"url": "https://mastodon.example"}, secret="s", name="toots",
                         workspace="Other")
    with app.app_context(), write_session() as session:
        channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
        mark_reconnect_needed(session, channel.id, reason="the network refused the token (401)", now=clock.now())
        channel_id = channel.id
    assert alerts_pass(app, rules=["channel_reconnect_needed"])["fired"][0]["workspace_id"] == world.workspace_id
    assert [a.workspace_id for a in alerts(app, rule="channel_reconnect_needed")] == [world.workspace_id]
    assert other != world.workspace_id  # the other workspace's channel is fine: no alert there
    clock.advance(minutes=30)
    assert alerts_pass(app, rules=["channel_reconnect_needed"])["fired"] == []  # one alert while it holds
    with app.app_context(), write_session() as session:  # a new secret is what reconnects a non-OAuth channel
        save_channel(session, world.workspace_id, channel_id=channel_id, name="main", kind="log", config={},
                     secret="new", box=runtime().secret_box, now=clock.now())
    (resolved,) = alerts_pass(app, rules=["channel_reconnect_needed"])["resolved"]
    assert resolved["subject"] == f"channel:{channel_id}"


def failing_webhook(app, httpserver, name="flaky"):
    httpserver.expect_request(f"/{name}").respond_with_data("no", status=401)
    make_channel(app, "webhook", {"url": httpserver.url_for(f"/{name}")}, secret="s", name=name)


def test_a_drip_step_that_keeps_failing_fires_per_campaign_and_step(app, world, clock, httpserver):
    from tests.integration import drip_helpers

    failing_webhook(app, httpserver)
    campaign_id = drip_helpers.campaign(app, world.workspace_id, channel="flaky")
    people = drip_helpers.contacts(app, world.workspace_id, 4)
    drip_helpers.enroll(app, world.workspace_id, campaign_id, people)
    drip_helpers.advance(app)
    tick(app)
    (fired,) = alerts_pass(app, rules=["drip_step_failing"])["fired"]
    assert fired["subject"] == f"campaign:{campaign_id}:step:0" and fired["figures"]["failed"] == 4


def test_a_recurring_rule_whose_occurrences_all_fail_fires_after_three(app, client, world, clock, httpserver):
    from tests.integration.recurring_helpers import make_rule

    failing_webhook(app, httpserver)
    rule = make_rule(client, world, channel="flaky", rrule="FREQ=HOURLY", starts_local="2026-06-01T08:00")
    for hour in range(3):
        tick(app)
        if hour < 2:
            assert alerts_pass(app, rules=["recurring_missing"])["fired"] == []
            clock.advance(hours=1)
    (fired,) = alerts_pass(app, rules=["recurring_missing"])["fired"]
    assert fired["subject"] == f"rule:{rule['id']}" and fired["figures"]["occurrences"] == 3
