"""A rule's misfire policy after an outage, and a workspace's zone change, through the real tick.

Sends are counted in the log provider's outbox. T0 is 2026-06-01T12:00Z, a Monday, 08:00 in
the world's zone (America/New_York); the rules fire daily at 09:00 EDT (13:00Z).
"""

import json
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.channels.outbox import OutboxEntry
from models.core.database import read_session
from tests.integration.clock_helpers import tick
from tests.integration.recurring_helpers import call, expand, make_rule, queued, rule_rows

UTC = timezone.utc


def _sent(app, rule_id) -> list[datetime]:
    """The instants of the rule's rows that went out, in order."""
    with app.app_context(), read_session() as session:
        return list(session.scalars(
            select(ScheduledAction.publish_at).join(OutboxEntry, OutboxEntry.action_id == ScheduledAction.id)
            .where(ScheduledAction.thing_id.like(f"rule:{rule_id}:%")).order_by(ScheduledAction.publish_at)))


def _failed(app, rule_id) -> list[tuple]:
    return [(row.publish_at.day, row.failure_code, row.last_error.split(":")[0])
            for row in rule_rows(app, rule_id, statuses=["failed"])]


def test_skip_after_a_three_day_outage_sends_no_missed_occurrence_and_the_next_on_time_one(client, app, world,
                                                                                          clock):
    rule = make_rule(client, world, misfire="skip")["id"]
    clock.set(datetime(2026, 6, 4, 14, 0, tzinfo=UTC))  # back after three days, 10:00 local: 1 to 4 June missed
    summary = tick(app)
    assert summary["outcomes"] == {"missed:missed_window": 4}
    # The rule's policy decided, not send_email's 12 h window: the 1 June row is 73 h late, 4 June's 1 h.
    assert _failed(app, rule) == [(1, "missed_window", "missed"), (2, "missed_window", "missed"),
                                  (3, "missed_window", "missed"), (4, "missed_window", "missed")]
    assert "rule #%d skips missed occurrences" % rule in rule_rows(app, rule, statuses=["failed"])[0].last_error
    assert expand(app)["minted"] == 4  # the outage's missed passes caught up: 15 to 18 June
    clock.set(datetime(2026, 6, 5, 13, 0, 30, tzinfo=UTC))
    tick(app)
    assert _sent(app, rule) == [datetime(2026, 6, 5, 13, 0, tzinfo=UTC)]
    # A retried occurrence is due again from the retry: it goes.
    [fourth] = [row for row in rule_rows(app, rule) if row.publish_at.day == 4]
    assert client.post(f"/api/v1/actions/{fourth.id}/retry", headers=world.auth("admin")).status_code == 200
    tick(app)
    assert len(_sent(app, rule)) == 2


def test_fire_once_after_a_three_day_outage_sends_the_most_recent_missed_occurrence_once(client, app, world,
                                                                                        clock):
    rule = make_rule(client, world, misfire="fire_once")["id"]
    clock.set(datetime(2026, 6, 4, 12, 0, tzinfo=UTC))  # back after three days, 08:00 local: 1 to 3 June missed
    summary = tick(app)
    assert summary["outcomes"] == {"missed:missed_window": 2, "published": 1}
    # 3 June went 23 h late (beyond send_email's 12 h: the rule decides); the older two were superseded.
    assert _sent(app, rule) == [datetime(2026, 6, 3, 13, 0, tzinfo=UTC)]
    assert _failed(app, rule) == [(1, "missed_window", "superseded"), (2, "missed_window", "superseded")]
    for _ in range(3):
        tick(app)  # never a burst: nothing more goes until the next occurrence
    assert len(_sent(app, rule)) == 1
    clock.set(datetime(2026, 6, 4, 13, 0, 1, tzinfo=UTC))
    tick(app)
    assert _sent(app, rule)[-1] == datetime(2026, 6, 4, 13, 0, tzinfo=UTC)


def test_an_occurrence_within_the_grace_goes_whatever_the_policy(client, app, world, clock):
    rule = make_rule(client, world, misfire="skip")["id"]
    clock.set(datetime(2026, 6, 1, 13, 4, 59, tzinfo=UTC))  # 4 min 59 s late: within the 5 minutes
    tick(app)
    assert _sent(app, rule) == [datetime(2026, 6, 1, 13, 0, tzinfo=UTC)]


def _moved_pairs(app, rule_id):
    rows = {row.id: row for row in rule_rows(app, rule_id)}
    return [(rows[row.rescheduled_from_id], row) for row in rows.values() if row.rescheduled_from_id]


def test_a_zone_change_from_new_york_to_london_moves_the_queued_rows_and_keeps_the_sent_ones(client, app, world,
                                                                                             clock):
    daily = make_rule(client, world)["id"]
    every_six = make_rule(client, world, rrule="FREQ=HOURLY;INTERVAL=6", target_key="six@example.test")["id"]
    clock.set(datetime(2026, 6, 1, 13, 0, 30, tzinfo=UTC))
    tick(app)
    sent = _sent(app, daily)
    assert sent == [datetime(2026, 6, 1, 13, 0, tzinfo=UTC)]
    result = app.test_cli_runner().invoke(args=["workspace", "set-timezone", "Acme", "Europe/London"])
    assert result.exit_code == 0, result.output
    moved = json.loads(result.output)
    assert moved["from"] == "America/New_York" and moved["to"] == "Europe/London"
    assert moved["recurring"]["rules"] == 2 and moved["recurring"]["moved"] == 13
    # The sent occurrence stays as it went; every queued one moves to 09:00 BST (08:00Z), pointing back.
    assert _sent(app, daily) == sent
    pairs = _moved_pairs(app, daily)
    assert len(pairs) == 13
    for old, new in pairs:
        assert (old.status, old.cancel_kind, new.thing_id) == ("cancelled", "rescheduled", old.thing_id)
        assert new.publish_at == old.publish_at - timedelta(hours=5)
    assert [row.publish_at for row in queued(app, daily)] == [
        datetime(2026, 6, day, 8, 0, tzinfo=UTC) for day in range(2, 16)]
    # Every six hours from 09:00 London: slots at 02, 08, 14, 20Z replace 01, 07, 13, 19Z; never both.
    six = queued(app, every_six)
    assert {row.publish_at.hour for row in six} == {2, 8, 14, 20}
    assert all(later.publish_at - earlier.publish_at == timedelta(hours=6) for earlier, later in zip(six, six[1:]))
    assert {row.cancel_kind for row in rule_rows(app, every_six, statuses=["cancelled"])} == {"orphaned"}
    assert expand(app)["minted"] == 0
    with app.app_context(), read_session() as session:
        assert session.scalar(select(func.count()).select_from(OutboxEntry)) == 2  # 13:00Z today, both rules


def test_a_paused_rule_follows_the_zone_when_resumed(client, app, world):
    rule = make_rule(client, world)["id"]
    call(client, world, rule, "pause")
    result = app.test_cli_runner().invoke(args=["workspace", "set-timezone", "Acme", "Europe/London"])
    assert result.exit_code == 0 and json.loads(result.output)["recurring"]["rules"] == 1
    shown = call(client, world, rule, "resume")
    assert shown["starts_at"] == "2026-06-01T08:00:00Z" and shown["timezone"] == "Europe/London"
    assert [row.publish_at.hour for row in queued(app, rule)] == [8] * 14
