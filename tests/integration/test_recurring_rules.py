"""What people do to a rule and to one occurrence, each with the rows it must and must not touch.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York); the rules
below fire daily at 09:00 EDT (13:00Z) from 1 June unless they say otherwise.
"""

from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from models.actions.tables import ActionEvent
from models.core.database import read_session
from models.recurring.lifecycle import ALLOWED_RULE_MOVES, RuleMove
from models.recurring.tables import RecurringScheduleEvent
from tests.integration.clock_helpers import tick
from tests.integration.recurring_helpers import call, expand, make_rule, patch, queued, rule_rows, stored_rule
from tests.web.conftest import claim_and

UTC = timezone.utc


def _by_slot(rows) -> dict:
    """Each slot's rows as (status, cancel kind), oldest first: ``{"2026-06-02T09:00": [...]}``."""
    found: dict = {}
    for row in sorted(rows, key=lambda r: r.id):
        found.setdefault(row.thing_id.split(":", 2)[2], []).append((row.status, row.cancel_kind))
    return found


def _rule_events(app, rule_id) -> list[tuple]:
    with app.app_context(), read_session() as session:
        return [(e.from_status, e.to_status, e.revision, e.reason, e.actor) for e in session.scalars(
            select(RecurringScheduleEvent).where(RecurringScheduleEvent.schedule_id == rule_id)
            .order_by(RecurringScheduleEvent.id))]


def test_the_table_of_rule_moves_is_the_rules_state_machine():
    assert {move: (sorted(s.value for s in sources), target.value)
            for move, (sources, target) in ALLOWED_RULE_MOVES.items()} == {
        RuleMove.PAUSE: (["active"], "paused"),
        RuleMove.RESUME: (["paused"], "active"),
        RuleMove.END: (["active", "paused"], "ended"),
        RuleMove.RUN_OUT: (["active"], "ended"),
    }


def test_pause_cancels_the_queued_future_rows_as_paused_and_leaves_the_rest(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    first, second, third = queued(app, rule)[:3]
    clock.set(datetime(2026, 6, 2, 13, 0, 30, tzinfo=UTC))
    claim_and(app, first.id, "published")
    claim_and(app, second.id, "claimed")  # being sent right now
    moved = client.post(f"/api/v1/actions/{third.id}/reschedule", headers=world.auth("ops"),
                        json={"local_time": "2026-06-03T18:00"})
    assert moved.status_code == 201 and moved.json["origin"] == "person"
    paused = call(client, world, rule, "pause", note="holiday week")
    assert (paused["status"], paused["status_note"], paused["changes"]) == ("paused", "holiday week", {"cancelled": 11})
    slots = _by_slot(rule_rows(app, rule))
    assert slots["2026-06-01T09:00"] == [("published", None)]
    assert slots["2026-06-02T09:00"] == [("submitted", None)]
    assert slots["2026-06-03T09:00"] == [("cancelled", "rescheduled"), ("queued", None)]  # the person's move stands
    assert all(rows == [("cancelled", "paused")] for slot, rows in slots.items() if slot >= "2026-06-04")
    assert expand(app)["rules_seen"] == 0  # a paused rule is not expanded
    assert _rule_events(app, rule)[-1][:4] == ("active", "paused", 1, "paused: holiday week")
    again = call(client, world, rule, "pause")  # pausing a paused rule changes nothing
    assert again["status_note"] == "holiday week" and len(_rule_events(app, rule)) == 2


def test_resume_mints_the_slots_still_in_the_future_and_never_a_sent_one(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    rows = queued(app, rule)
    clock.set(datetime(2026, 6, 1, 13, 0, 5, tzinfo=UTC))
    claim_and(app, rows[0].id, "published")
    call(client, world, rule, "pause")
    clock.set(datetime(2026, 6, 4, 12, 0, tzinfo=UTC))  # three days later, 08:00 local
    resumed = call(client, world, rule, "resume")
    assert resumed["status"] == "active" and resumed["status_note"] is None
    slots = _by_slot(rule_rows(app, rule))
    assert slots["2026-06-01T09:00"] == [("published", None)]
    # 2 and 3 June passed while paused: not owed. From 4 June on, minted again beside the paused rows.
    assert slots["2026-06-02T09:00"] == slots["2026-06-03T09:00"] == [("cancelled", "paused")]
    assert slots["2026-06-04T09:00"] == [("cancelled", "paused"), ("queued", None)]
    assert slots["2026-06-17T09:00"] == [("queued", None)]
    assert [r.publish_at for r in queued(app, rule)] == [datetime(2026, 6, d, 13, 0, tzinfo=UTC) for d in range(4, 18)]
    assert expand(app)["minted"] == 0


def test_an_edit_moves_the_unsent_rows_with_lineage_and_leaves_the_history(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    rows = queued(app, rule)
    clock.set(datetime(2026, 6, 1, 13, 0, 5, tzinfo=UTC))
    claim_and(app, rows[0].id, "published")
    clock.set(datetime(2026, 6, 2, 13, 0, 5, tzinfo=UTC))
    claim_and(app, rows[1].id, "claimed")  # 2 June's occurrence is being sent during the edit
    clock.advance(seconds=30)
    edited = patch(client, world, rule, starts_local="2026-06-01T10:00",
                   payload={"subject": "Now at ten, {{ occurrence.local_time }}"})
    assert edited["revision"] == 2 and edited["changes"]["moved"] == 12
    after = {row.id: row for row in rule_rows(app, rule)}
    assert after[rows[0].id].status == "published" and after[rows[1].id].status == "submitted"
    # 2 June went out at 09:00 (it is being sent): no second occurrence that day at 10:00.
    assert not [r for r in after.values() if r.thing_id.endswith("2026-06-02T10:00")]
    for old in rows[2:]:
        assert (after[old.id].status, after[old.id].cancel_kind) == ("cancelled", "rescheduled")
        [new] = [r for r in after.values() if r.rescheduled_from_id == old.id]
        assert new.status == "queued" and new.origin == "recurring"
        assert new.publish_at == old.publish_at + timedelta(hours=1)
        assert new.payload == {"subject": "Now at ten, 10:00"}
        assert new.thing_id == old.thing_id.replace("T09:00", "T10:00")
    assert len(queued(app, rule)) == 13  # 3 to 15 June at 10:00 EDT
    assert _rule_events(app, rule)[-1][:3] == ("active", "active", 2)
    assert expand(app)["minted"] == 0


def test_an_edit_that_drops_days_withdraws_their_rows_as_orphaned(client, app, world):
    rule = make_rule(client, world)["id"]
    patch(client, world, rule, rrule="FREQ=WEEKLY;BYDAY=MO,WE")
    slots = _by_slot(rule_rows(app, rule))
    live = sorted(slot for slot, rows in slots.items() if rows[-1][0] == "queued")
    assert live == ["2026-06-01T09:00", "2026-06-03T09:00", "2026-06-08T09:00", "2026-06-10T09:00"]
    assert slots["2026-06-02T09:00"] == [("cancelled", "orphaned")]
    assert slots["2026-06-01T09:00"] == [("queued", None)]  # unchanged: the same slot, payload and instant


def test_a_stale_screen_cannot_overwrite_an_edit(client, app, world):
    rule = make_rule(client, world)["id"]
    patch(client, world, rule, target_key="new@example.test", revision=1)
    answer = client.patch(f"/api/v1/recurring/{rule}", headers=world.auth(),
                          json={"target_key": "old@example.test", "revision": 1})
    assert answer.status_code == 409 and answer.json["error"]["code"] == "stale_revision"
    assert stored_rule(app, rule).target_key == "new@example.test"


def test_end_is_for_ops_and_cancels_the_queued_future_rows_for_good(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    answer = client.post(f"/api/v1/recurring/{rule}/end", headers=world.auth("marketer"))
    assert answer.status_code == 403 and answer.json["error"]["code"] == "forbidden"
    assert stored_rule(app, rule).status == "active"
    ended = call(client, world, rule, "end", role="ops", note="campaign over")
    assert (ended["status"], ended["status_note"], ended["next_occurrences"]) == ("ended", "campaign over", [])
    assert {(r.status, r.cancel_kind) for r in rule_rows(app, rule)} == {("cancelled", "person")}
    for verb in ("resume", "pause", "run"):
        refused = client.post(f"/api/v1/recurring/{rule}/{verb}", headers=world.auth("ops"))
        assert refused.status_code == 409 and refused.json["error"]["code"] == "wrong_state", verb
    refused = client.patch(f"/api/v1/recurring/{rule}", headers=world.auth(), json={"target_key": "x@example.test"})
    assert refused.status_code == 409
    clock.advance(days=2)
    assert expand(app)["rules_seen"] == 0


def test_a_persons_cancel_of_one_occurrence_stands(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    second = queued(app, rule)[1]
    # The rule's creator (a marketer) may cancel its occurrences.
    cancelled = client.post(f"/api/v1/actions/{second.id}/cancel", headers=world.auth("marketer"))
    assert cancelled.status_code == 200 and cancelled.json["cancel_kind"] == "person"
    patch(client, world, rule, payload={"subject": "changed"})
    call(client, world, rule, "pause")
    assert call(client, world, rule, "resume")["status"] == "active"
    clock.advance(hours=1)
    expand(app)
    slot = second.thing_id
    assert [(r.status, r.cancel_kind) for r in rule_rows(app, rule) if r.thing_id == slot] == [("cancelled", "person")]


def test_only_ops_or_the_rules_creator_cancel_its_occurrences(client, app, world):
    rule = make_rule(client, world, role="ops")["id"]
    row = queued(app, rule)[0]
    refused = client.post(f"/api/v1/actions/{row.id}/cancel", headers=world.auth("marketer"))
    assert refused.status_code == 403
    assert client.post(f"/api/v1/actions/{row.id}/cancel", headers=world.auth("ops")).status_code == 200


def test_a_persons_reschedule_keeps_the_slots_key_and_the_rule_leaves_it_alone(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    third = queued(app, rule)[2]
    refused = client.post(f"/api/v1/actions/{third.id}/reschedule", headers=world.auth("marketer"),
                          json={"local_time": "2026-06-03T15:00"})
    assert refused.status_code == 403
    moved = client.post(f"/api/v1/actions/{third.id}/reschedule", headers=world.auth("ops"),
                        json={"local_time": "2026-06-03T15:00"})
    assert moved.status_code == 201
    new = moved.json
    assert (new["thing_id"], new["origin"], new["rescheduled_from"]) == (third.thing_id, "person", third.id)
    patch(client, world, rule, payload={"subject": "edited"})
    clock.advance(hours=2)
    expand(app)
    [kept] = [r for r in rule_rows(app, rule) if r.id == new["id"]]
    assert (kept.status, kept.payload, kept.publish_at) == ("queued", third.payload,
                                                             datetime(2026, 6, 3, 19, 0, tzinfo=UTC))
    assert [r.id for r in queued(app, rule) if r.thing_id == third.thing_id] == [new["id"]]


def test_retrying_a_failed_occurrence_is_the_admins_on_the_same_row(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    first = queued(app, rule)[0]
    clock.set(datetime(2026, 6, 1, 13, 0, 5, tzinfo=UTC))
    claim_and(app, first.id, "failed")
    assert client.post(f"/api/v1/actions/{first.id}/retry", headers=world.auth("ops")).status_code == 403
    retried = client.post(f"/api/v1/actions/{first.id}/retry", headers=world.auth("admin"))
    assert retried.status_code == 200 and retried.json["id"] == first.id and retried.json["status"] == "queued"


def test_run_now_mints_one_row_due_now_and_leaves_the_window(client, app, world, clock):
    rule = make_rule(client, world)["id"]
    before = [(r.id, r.status) for r in rule_rows(app, rule)]
    ran = call(client, world, rule, "run", expect=201)
    assert (ran["origin"], ran["status"], ran["publish_at"]) == ("person", "queued", "2026-06-01T12:00:00Z")
    assert ran["thing_id"] == f"rule:{rule}:manual:2026-06-01T12:00:00Z"
    assert ran["payload"] == {"subject": "Daily digest 2026-06-01"}
    twice = client.post(f"/api/v1/recurring/{rule}/run", headers=world.auth())
    assert twice.status_code == 409 and twice.json["error"]["code"] == "already_running"
    assert [(r.id, r.status) for r in rule_rows(app, rule) if r.id != ran["id"]] == before
    tick(app)
    shown = client.get(f"/api/v1/recurring/{rule}", headers=world.auth()).json
    assert [(a["id"], a["status"]) for a in shown["manual_runs"]] == [(ran["id"], "published")]
    assert shown["events"][-1]["action_id"] == ran["id"] and shown["events"][-1]["reason"] == "Run Now"


def test_a_rule_with_no_occurrence_left_ends_by_itself(client, app, world, clock):
    rule = make_rule(client, world, rrule="FREQ=DAILY;COUNT=3")["id"]
    assert len(queued(app, rule)) == 3
    clock.set(datetime(2026, 6, 3, 12, 59, tzinfo=UTC))
    assert expand(app)["rules_ended"] == 0  # its last occurrence is a minute away
    clock.advance(minutes=1, seconds=1)
    summary = expand(app)
    assert summary["rules_ended"] == 1
    found = stored_rule(app, rule)
    assert (found.status, found.status_note) == ("ended", "no more occurrences")
    assert _rule_events(app, rule)[-1][:2] == ("active", "ended") and _rule_events(app, rule)[-1][4] == "job:expand"
    assert len(queued(app, rule)) == 3  # nothing is cancelled: its rows go out as planned


def test_every_change_of_a_rule_writes_its_event_with_the_note(client, app, world):
    rule = make_rule(client, world)["id"]
    patch(client, world, rule, misfire="fire_once")
    call(client, world, rule, "pause", note="back on Monday")
    call(client, world, rule, "resume")
    call(client, world, rule, "end", role="ops")
    assert _rule_events(app, rule) == [
        (None, "active", 1, "created", "api:marketer@acme.test"),
        ("active", "active", 2, "edited: misfire", "api:marketer@acme.test"),
        ("active", "paused", 2, "paused: back on Monday", "api:marketer@acme.test"),
        ("paused", "active", 2, "resumed", "api:marketer@acme.test"),
        ("active", "ended", 2, "ended", "api:ops@acme.test"),
    ]
    with app.app_context(), read_session() as session:
        # Every row the rule minted has its creation event, by the rule's creator's hand.
        creations = session.scalars(select(ActionEvent).where(ActionEvent.from_status.is_(None))).all()
        assert len(creations) == len(rule_rows(app, rule))
