"""The expander against real databases: exactly the window, idempotent per slot, catching up, never stale.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

from datetime import datetime, timedelta, timezone

import pytest

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


def test_a_missed_pass_is_caught_up_once_and_a_second_pass_mints_nothing(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    clock.advance(days=3, minutes=5)  # three days without a pass (a redeploy, a dead consumer)
    first = expand(app)
    assert (first["minted"], first["rules_written"]) == (3, 1)
    again = expand(app)
    assert (again["minted"], again["rules_written"]) == (0, 0)
    rows = rule_rows(app, rule)
    assert len(rows) == len({row.thing_id for row in rows}) == 17  # 1 to 17 June, one row each
    assert rows[-1].publish_at == datetime(2026, 6, 17, 13, 0, tzinfo=UTC)
    assert stored_rule(app, rule).last_materialized_at == clock.now() + timedelta(days=14)


def test_an_outage_longer_than_the_window_mints_only_the_last_window_of_missed_occurrences(client, app, world,
                                                                                            clock):
    rule = make_rule(client, world)["id"]
    clock.advance(days=40)
    summary = expand(app)
    # Missed 15 June .. 10 July are owed from one window back (27 June on); the next 14 days too.
    assert summary["minted"] == 28
    assert queued(app, rule)[14].publish_at == datetime(2026, 6, 27, 13, 0, tzinfo=UTC)


def test_the_stale_view_a_pass_that_planned_before_an_edit_mints_nothing_for_it(client, app, world, clock):
    from models.core.database import read_session
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from models.recurring.expander import expand_rules, plan_pass
    from tests.integration.recurring_helpers import patch

    rule = make_rule(client, world)["id"]
    clock.advance(days=1)  # the pass below has 15 June to mint at 09:00
    with app.app_context(), read_session() as session:
        plan = plan_pass(session)
    patch(client, world, rule, starts_local="2026-06-01T10:00")  # committed while the pass holds revision 1
    with app.app_context():
        rt = runtime()
        summary = expand_rules(plan, clock=rt.clock, policy=rt.policy, actor=Actor.job("expand"))
    assert (summary["minted"], summary["rules_stale"]) == (0, 1)
    coming = [row for row in queued(app, rule) if row.publish_at > clock.now()]
    assert {row.publish_at.hour for row in coming} == {14}  # 10:00 EDT only: nothing at the old 09:00
    assert len(coming) == 14  # 2 to 15 June


def test_the_stale_view_a_pass_waits_for_an_edit_in_flight_and_sees_it(client, app, world, clock):
    """The pass reads the rule under its lock: an uncommitted edit holds it off, then it finds the new revision."""
    import threading

    from models.core.database import read_session, write_session
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from models.recurring.expander import expand_rules, plan_pass
    from models.recurring.operations import update_rule

    rule = make_rule(client, world)["id"]
    clock.advance(days=1)
    with app.app_context(), read_session() as session:
        plan = plan_pass(session)
    outcome = {}

    def expand_meanwhile():
        with app.app_context():
            rt = runtime()
            outcome["summary"] = expand_rules(plan, clock=rt.clock, policy=rt.policy, actor=Actor.job("expand"))

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            update_rule(session, world.workspace_id, rule, {"starts_local": "2026-06-01T10:00"},
                        actor=Actor(label="user:editor"), now=rt.now(), policy=rt.policy)
            racer = threading.Thread(target=expand_meanwhile)
            racer.start()
            racer.join(timeout=0.5)
            assert racer.is_alive()  # held off by the edit's lock
        racer.join(timeout=30)
    assert (outcome["summary"]["minted"], outcome["summary"]["rules_stale"]) == (0, 1)
    assert {row.publish_at.hour for row in queued(app, rule) if row.publish_at > clock.now()} == {14}


def test_a_garbage_zone_skips_its_rules_and_reports_them_and_the_others_are_expanded(client, app, world, clock):
    from sqlalchemy import text

    from models.clock.tables import ClockRun
    from models.core.database import read_session, write_session
    from tests.conftest import make_world

    other = make_world(app, name="Other", zone="Europe/Paris")
    broken = make_rule(client, world)["id"]
    fine = make_rule(client, other)["id"]
    with app.app_context(), write_session() as session:
        session.execute(text("UPDATE workspaces SET timezone = 'Mars/Olympus' WHERE id = :id"),
                        {"id": world.workspace_id})
    clock.advance(days=2)
    summary = expand(app)
    assert (summary["rules_seen"], summary["rules_skipped"], summary["minted"]) == (2, 1, 2)
    [error] = summary["errors"]
    assert error["rule_id"] == broken and error["workspace"] == "Acme" and "Mars/Olympus" in error["error"]
    assert len(rule_rows(app, broken)) == 14 and len(rule_rows(app, fine)) == 16
    with app.app_context(), read_session() as session:
        run = session.get(ClockRun, summary["clock_run_id"])
        assert run.kind == "expand" and run.finished_at is not None and run.summary["errors"] == [error]


def test_materialized_rows_carry_the_right_instants_across_dst(client, app, world, clock):
    # Fall back in New York on Sunday 1 November 2026 (02:00 EDT → 01:00 EST).
    clock.set(datetime(2026, 10, 25, 12, 0, tzinfo=UTC))
    nine = make_rule(client, world, starts_local="2026-10-25T09:00")["id"]
    half_one = make_rule(client, world, starts_local="2026-10-25T01:30", target_key="b@example.test")["id"]
    hourly = make_rule(client, world, rrule="FREQ=HOURLY;INTERVAL=1", starts_local="2026-10-31T23:00",
                       ends_local="2026-11-01T03:00", target_key="c@example.test")["id"]
    at = {row.thing_id.split(":", 2)[2]: row.publish_at for row in rule_rows(app, nine)}
    assert at["2026-10-31T09:00"] == datetime(2026, 10, 31, 13, 0, tzinfo=UTC)  # EDT
    assert at["2026-11-01T09:00"] == datetime(2026, 11, 1, 14, 0, tzinfo=UTC)  # EST: still 09:00 on the wall
    assert at["2026-11-07T09:00"] == datetime(2026, 11, 7, 14, 0, tzinfo=UTC)
    # 01:30 happens twice on 1 November: the first one, 01:30 EDT, once.
    twice = {row.thing_id.split(":", 2)[2]: row.publish_at for row in rule_rows(app, half_one)}
    assert twice["2026-11-01T01:30"] == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    assert twice["2026-11-02T01:30"] == datetime(2026, 11, 2, 6, 30, tzinfo=UTC)
    # Hourly steps in elapsed time: 23:00 EDT to 03:00 EST is six occurrences an hour apart in UTC,
    # 01:00 on the wall twice (EDT, then EST).
    assert [(row.thing_id.split(":", 2)[2], row.publish_at) for row in rule_rows(app, hourly)] == [
        (f"2026-11-01T0{h}:00Z", datetime(2026, 11, 1, h, 0, tzinfo=UTC)) for h in range(3, 9)]
    # Spring forward on Sunday 8 March 2026: 02:30 does not exist and moves to 03:30 EDT.
    clock.set(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    gap = make_rule(client, world, starts_local="2026-03-01T02:30", target_key="d@example.test")["id"]
    spring = {row.thing_id.split(":", 2)[2]: row.publish_at for row in rule_rows(app, gap)}
    assert spring["2026-03-07T02:30"] == datetime(2026, 3, 7, 7, 30, tzinfo=UTC)  # EST
    assert spring["2026-03-08T02:30"] == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)  # 03:30 EDT
    assert spring["2026-03-09T02:30"] == datetime(2026, 3, 9, 6, 30, tzinfo=UTC)  # EDT


def test_tickwork_expand_runs_one_pass_and_prints_its_summary(client, app, world, clock):
    import json

    make_rule(client, world)
    clock.advance(days=1)
    result = app.test_cli_runner().invoke(args=["expand"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["kind"], summary["minted"], summary["rules_seen"]) == ("expand", 1, 1)
    assert summary["skipped"] == {"terminal": 0, "in_flight": 0, "not_ours": 0, "due": 0, "duplicate": 0}


RACER = """
import json, os, sys, time
from datetime import datetime
from pathlib import Path
from models.timing.clock import FrozenClock
from webapp import create_app
app = create_app({"TICKWORK_CLOCK": FrozenClock(datetime.fromisoformat(sys.argv[1]))})
line = Path(sys.argv[2])
from jobs.clock import expand_once
with app.app_context():
    from models.core.database import db
    db.session.execute(db.text("SELECT 1"))  # connect before the start line
    db.session.remove()
    (line / str(os.getpid())).touch()
    while len(list(line.iterdir())) < 3:  # every racer ready: go together
        time.sleep(0.002)
    began = time.time()
    summary = expand_once()
    print(json.dumps({"began": began, "finished": time.time(), "minted": summary["minted"],
                      "seen": summary["rules_seen"], "errors": summary["errors"]}))
"""


@pytest.mark.slow
def test_three_processes_expanding_at_once_mint_each_slot_once(client, app, world, clock, database_url, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from sqlalchemy import func, select

    from models.actions.tables import ActionEvent, ScheduledAction
    from models.core.database import read_session
    from tests.conftest import ROOT, TEST_SECRET

    rules = [make_rule(client, world, target_key=f"r{n}@example.test")["id"] for n in range(8)]
    clock.advance(days=5)  # five days of passes missed: 5 new occurrences per rule, left to the racers
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate")
    line = tmp_path / "start-line"
    line.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", RACER, clock.now().isoformat(), str(line)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    # They raced: every pass began before any had finished, and each went through every rule (a
    # rule another pass had already written is left alone, under its lock or at its first look).
    assert max(r["began"] for r in results) < min(r["finished"] for r in results), results
    assert [r["seen"] for r in results] == [8, 8, 8] and all(not r["errors"] for r in results)
    assert sum(r["minted"] for r in results) == 8 * 5
    with app.app_context(), read_session() as session:
        per_slot = session.execute(select(ScheduledAction.thing_id, func.count()).group_by(ScheduledAction.thing_id)).all()
        assert len(per_slot) == 8 * 19 and {count for _, count in per_slot} == {1}
        assert session.scalar(select(func.count()).select_from(ActionEvent)
                              .where(ActionEvent.from_status.is_(None))) == 8 * 19
    assert all(len(rule_rows(app, rule)) == 19 for rule in rules)


# -- a wanted slot whose row is already due or being sent (issue 22's mutation run) ------------------------------


def test_a_zone_change_leaves_a_slots_row_that_is_already_due_to_the_tick(client, app, world, clock):
    """09:00 in New York (13:00Z) is due and not yet taken when the workspace moves to Los Angeles, where the same
    slot is at 16:00Z: the due row stays as it is, for the tick, and only the slots still ahead move."""
    import json

    from tests.integration.clock_helpers import tick

    rule = make_rule(client, world)["id"]
    clock.set(datetime(2026, 6, 1, 13, 0, 30, tzinfo=UTC))
    result = app.test_cli_runner().invoke(args=["workspace", "set-timezone", "Acme", "America/Los_Angeles"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["recurring"]["moved"] == 13
    [due] = [row for row in queued(app, rule) if row.thing_id.endswith("2026-06-01T09:00")]
    assert due.publish_at == datetime(2026, 6, 1, 13, 0, tzinfo=UTC) and due.rescheduled_from_id is None
    assert tick(app)["outcomes"] == {"published": 1}
    assert [row.status for row in rule_rows(app, rule) if row.thing_id.endswith("2026-06-01T09:00")] == ["published"]


def test_an_edit_at_the_instant_a_slots_row_is_being_sent_counts_it_in_flight_and_leaves_it(client, app, world,
                                                                                            clock):
    """At 13:00:00Z the 09:00 row is claimed; an edit of the payload at that instant still wants the slot (the
    window starts at now): the row being sent is in flight, not merely due, and it stays its worker's."""
    from models.actions import lifecycle
    from models.core.database import write_session
    from models.core.moves import Actor
    from tests.integration.recurring_helpers import patch

    rule = make_rule(client, world)["id"]
    clock.set(datetime(2026, 6, 1, 13, 0, tzinfo=UTC))
    [first] = [row for row in queued(app, rule) if row.thing_id.endswith("2026-06-01T09:00")]
    with app.app_context(), write_session() as session:
        assert lifecycle.claim(session, first.id, now=clock.now(), actor=Actor.job("test")).ok
    edited = patch(client, world, rule, payload={"subject": "Weekly digest {{ occurrence.local_date }}"})
    assert edited["changes"]["skip_in_flight"] == 1 and "skip_due" not in edited["changes"]
    assert edited["changes"]["moved"] == 13
    [being_sent] = [row for row in rule_rows(app, rule) if row.thing_id.endswith("2026-06-01T09:00")]
    assert (being_sent.id, being_sent.status) == (first.id, "submitted")
