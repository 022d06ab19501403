"""The expander against real databases: exactly the window, idempotent per slot, catching up, never stale.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

from datetime import datetime, timedelta, timezone

from tests.integration.recurring_helpers import expand, make_rule, queued, rule_rows, stored_rule

UTC = timezone.utc


def test_the_window_is_exactly_the_next_14_days_of_occurrences(client, app, world, clock):
    rule = make_rule(client, world)
    rows = queued(app, rule["id"])
    # 09:00 EDT is 13:00Z; T0 + 14 days is 2026-06-15T12:00Z, so 1 to 14 June.
    assert [row.publish_at for row in rows] == [datetime(2026, 6, day, 13, 0, tzinfo=UTC) for day in range(1, 15)]
    assert {(row.origin, row.recurring_schedule_id, row.target_key) for row in rows} == {
        ("recurring", rule["id"], "list@example.test")}
    assert rows[0].thing_id == f"rule:{rule['id']}:2026-06-01T09:00"
    assert rows[0].payload == {"subject": "Daily digest 2026-06-01"}
    assert stored_rule(app, rule["id"]).last_materialized_at == clock.now() + timedelta(days=14)
    summary = expand(app)
    assert summary["minted"] == 0 and summary["rules_seen"] == 1
    assert len(rule_rows(app, rule["id"])) == 14
