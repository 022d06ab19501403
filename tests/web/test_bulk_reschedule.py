"""Bulk reschedule by the queue's filters: a preview, then cancel + insert with lineage; a post's rows
move together through their post; rows that follow something else are refused with their reason."""

import pytest
from sqlalchemy import select

from models.actions.tables import Origin, ScheduledAction
from models.core.database import read_session
from tests.web.conftest import make_action, make_post, rows_of_post
from tests.web.test_calendar_moves import add_channel, post_of


def text(answer) -> str:
    return answer.get_data(as_text=True)


def all_rows(app):
    with app.app_context(), read_session() as session:
        return {row.id: (row.status, row.publish_at) for row in session.scalars(select(ScheduledAction))}


def replacement_of(app, row_id):
    with app.app_context(), read_session() as session:
        return session.scalar(select(ScheduledAction).where(ScheduledAction.rescheduled_from_id == row_id))


def test_the_preview_counts_and_changes_nothing_then_the_commit_reschedules_with_lineage(app, world, browser_for):
    ids = [make_action(app, world, minutes=100 + n, target=f"bulk{n}@example.test") for n in range(3)]
    other = make_action(app, world, minutes=100, target="other@example.test")
    ops = browser_for("ops")
    before = all_rows(app)
    form = ops.get("/queue/bulk-reschedule?q=bulk")
    assert form.status_code == 200 and '<strong id="bulk-count">3</strong>' in text(form) and "plan-rows" not in text(form)
    preview = ops.get("/queue/bulk-reschedule?q=bulk&shift=%2B2h")
    assert '<strong id="plan-rows">3</strong>' in text(preview) and '<strong id="plan-refused">0</strong>' in text(preview)
    assert all_rows(app) == before
    unconfirmed = ops.post("/queue/bulk-reschedule", {"q": "bulk", "shift": "+2h"})
    assert "plan-rows" in text(unconfirmed) and all_rows(app) == before
    done = ops.post("/queue/bulk-reschedule", {"q": "bulk", "shift": "+2h", "confirm": "yes"}, htmx=True)
    assert done.status_code == 200 and "<html" not in text(done)
    assert "Rescheduled 3 actions and moved 0 posts (3 new rows" in text(done)
    for row_id in ids:
        old_status, old_at = all_rows(app)[row_id]
        new = replacement_of(app, row_id)
        assert old_status == "cancelled" and new.status == "queued" and new.origin == "person"
        assert new.publish_at - before[row_id][1] == __import__("datetime").timedelta(hours=2)
    assert all_rows(app)[other] == before[other]


def test_a_posts_rows_move_together_through_the_post_even_those_the_filter_missed(app, world, browser_for):
    add_channel(app, world, "news")
    post = make_post(app, world, targets=("main", "news"), day="2026-06-10", at="09:00")
    ops = browser_for("ops")
    preview = ops.get("/queue/bulk-reschedule?channel=main&type=publish_post&shift=1d")
    assert '<strong id="bulk-count">1</strong>' in text(preview)
    assert '<strong id="plan-posts">1</strong> post moved, because a post\'s rows move together: 2 rows in all' in text(preview)
    done = ops.post("/queue/bulk-reschedule", {"channel": "main", "type": "publish_post", "shift": "1d", "confirm": "yes"})
    assert "moved 1 post" in text(done)
    rows = rows_of_post(app, world, post)
    assert sorted((r.target_key, r.status) for r in rows) == [
        ("main", "cancelled"), ("main", "queued"), ("news", "cancelled"), ("news", "queued")]
    assert {r.publish_at.isoformat() for r in rows if r.status == "queued"} == {"2026-06-11T13:00:00+00:00"}
    assert all(r.rescheduled_from_id for r in rows if r.status == "queued")
    assert post_of(app, post).wall_date.isoformat() == "2026-06-11"


def test_rows_that_follow_something_else_are_refused_and_listed_with_their_reason(app, world, browser_for):
    drip = make_action(app, world, minutes=300, origin=Origin.DRIP, thing_id="drip:4:1", target="d@example.test")
    system = make_action(app, world, minutes=300, origin=Origin.SYSTEM, thing_id="notification:1", target="s@x.test")
    recurring = make_action(app, world, minutes=300, origin=Origin.RECURRING, thing_id="rule:3:2026-06-01T13:00",
                            target="r@example.test")
    soon = make_action(app, world, minutes=30, target="soon@example.test")
    ops = browser_for("ops")
    preview = text(ops.get("/queue/bulk-reschedule?shift=-1h"))
    assert f"#{drip}</a>: action #{drip} is a drip send; it follows its enrollment" in preview
    assert f"#{system}</a>: action #{system} sends notification notification:1; it is cancelled or retried, never moved" in preview
    assert f"#{soon}</a>: its new time: shift is more than 5 minutes in the past" in preview
    assert f"#{recurring}</a>" not in preview  # ops may reschedule a rule's occurrence (the brief's table)
    done = text(ops.post("/queue/bulk-reschedule", {"shift": "-1h", "confirm": "yes"}))
    assert "Rescheduled 1 action" in done and "3 could not be rescheduled" in done
    assert replacement_of(app, recurring).thing_id == "rule:3:2026-06-01T13:00"
    assert all_rows(app)[drip][0] == all_rows(app)[system][0] == all_rows(app)[soon][0] == "queued"


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_days_keep_the_local_time_across_a_clock_change_and_hours_are_elapsed(app, world, browser_for):
    from datetime import datetime, timezone

    day = make_action(app, world, target="day@example.test", publish_at=datetime(2026, 10, 31, 13, tzinfo=timezone.utc))
    hours = make_action(app, world, target="hours@example.test", publish_at=datetime(2026, 10, 31, 13, tzinfo=timezone.utc))
    to_date = make_action(app, world, target="date@example.test", publish_at=datetime(2026, 10, 31, 13, tzinfo=timezone.utc))
    ops = browser_for("ops")
    ops.post("/queue/bulk-reschedule", {"q": "day@", "shift": "+1d", "confirm": "yes"})
    ops.post("/queue/bulk-reschedule", {"q": "hours@", "shift": "+24h", "confirm": "yes"})
    ops.post("/queue/bulk-reschedule", {"q": "date@", "to_date": "2026-11-02", "confirm": "yes"})
    # 09:00 EDT on 31 October; the clocks fall back on 1 November.
    assert replacement_of(app, day).publish_at.isoformat() == "2026-11-01T14:00:00+00:00"  # 09:00 EST
    assert replacement_of(app, hours).publish_at.isoformat() == "2026-11-01T13:00:00+00:00"  # 08:00 EST
    assert replacement_of(app, to_date).publish_at.isoformat() == "2026-11-02T14:00:00+00:00"  # 09:00 EST


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_bad_input_is_a_4xx_and_changes_nothing(app, world, browser_for):
    make_action(app, world, minutes=100, target="bad@example.test")
    ops = browser_for("ops")
    before = all_rows(app)
    for data in ({"shift": "soon"}, {"shift": "0h"}, {"shift": "+99999d"}, {"shift": "1h", "to_date": "2026-07-01"},
                 {"to_date": "2026-02-30"}, {"to_date": "x"}, {"shift": "\x00"}, {"shift": "1d" * 100}):
        for htmx in (False, True):
            answer = ops.get("/queue/bulk-reschedule", query_string=data, htmx=htmx)
            assert answer.status_code == 422, (data, htmx)
            assert 'role="alert"' in text(answer)
            answer = ops.post("/queue/bulk-reschedule", {**data, "confirm": "yes"}, htmx=htmx)
            assert answer.status_code == 422, (data, htmx)
    garbage_filter = ops.get("/queue/bulk-reschedule?from=never&shift=1h")
    assert garbage_filter.status_code == 200 and "from must be a date" in text(garbage_filter)
    assert all_rows(app) == before


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_bulk_reschedule_is_ops_only(app, world, browser_for):
    row = make_action(app, world, minutes=100)
    marketer = browser_for("marketer")
    assert marketer.get("/queue/bulk-reschedule?shift=1h").status_code == 403
    assert marketer.post("/queue/bulk-reschedule", {"shift": "1h", "confirm": "yes"}).status_code == 403
    assert all_rows(app)[row][0] == "queued"
    assert 'Reschedule all matching…' not in text(marketer.get("/queue"))
    assert 'Reschedule all matching…' in text(browser_for("ops").get("/queue"))
    assert browser_for("admin").post("/queue/bulk-reschedule", {"shift": "1h", "confirm": "yes"}).status_code == 200
    assert all_rows(app)[row][0] == "cancelled"
