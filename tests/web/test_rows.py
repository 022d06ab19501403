"""The row widget: cancel, reschedule, retry, Post now, re-rendered in place, refusals in words."""

from sqlalchemy import select

from models.actions import lifecycle
from models.actions.tables import FailureCode, ScheduledAction
from models.core.database import read_session, write_session
from tests.web.conftest import TICK, claim_and, make_action, rows_of_post


def text(answer) -> str:
    return answer.get_data(as_text=True)


def row_state(app, action_id):
    with app.app_context(), read_session() as session:
        return session.get(ScheduledAction, action_id)


def test_cancel_rerenders_the_row_and_a_second_cancel_is_calm(acme, browser_for):
    ops = browser_for("ops")
    answer = ops.post(f"/actions/{acme.queued}/cancel", htmx=True)
    assert answer.status_code == 200
    assert text(answer).startswith(f'<tr id="action-{acme.queued}"')
    assert "status-cancelled" in text(answer) and "Cancelled." in text(answer)
    again = ops.post(f"/actions/{acme.queued}/cancel", htmx=True)
    assert again.status_code == 200 and "It was already cancelled." in text(again)


def test_cancelling_a_sent_row_says_when_it_went_out(acme, browser_for):
    answer = browser_for("ops").post(f"/actions/{acme.published}/cancel", htmx=True)
    assert answer.status_code == 409
    assert "Already sent at 08:00:00." in text(answer)  # 12:00 UTC is 08:00 in New York
    assert "HX-Retarget" not in answer.headers  # the row itself carries the message


def test_a_marketer_cancels_posts_and_their_own_rows_only(app, acme, browser_for):
    marketer = browser_for("marketer")
    refused = marketer.post(f"/actions/{acme.queued}/cancel", htmx=True)
    assert refused.status_code == 403
    assert "You need the ops role to cancel an action you did not create." in text(refused)
    assert row_state(app, acme.queued).status == "queued"
    own = make_action(app, acme.world, minutes=30, created_by=acme.world.users["marketer"])
    assert marketer.post(f"/actions/{own}/cancel", htmx=True).status_code == 200
    post_row = marketer.post(f"/actions/{acme.post_row}/cancel", htmx=True)
    assert post_row.status_code == 200 and row_state(app, acme.post_row).status == "cancelled"


def test_retry_is_the_admins(app, acme, browser_for):
    for role in ("marketer", "ops"):
        answer = browser_for(role).post(f"/actions/{acme.failed}/retry", htmx=True)
        assert answer.status_code == 403 and "You need the admin role to retry." in text(answer)
        assert 'class="chip status-failed"' in text(answer)
    answer = browser_for("admin").post(f"/actions/{acme.failed}/retry", htmx=True)
    assert answer.status_code == 200
    assert "status-queued" in text(answer) and "Retried" in text(answer)
    assert row_state(app, acme.failed).status == "queued"


def test_retry_with_no_attempts_left_says_so(app, acme, browser_for):
    action_id = make_action(app, acme.world, minutes=-10)
    with app.app_context():
        from models.core.runtime import runtime

        now = runtime().now()
        with write_session() as session:
            for attempt in range(5):
                token = lifecycle.claim(session, action_id, now=now, actor=TICK).row.claim_token
                if attempt < 4:
                    lifecycle.revert(session, action_id, claim_token=token, next_attempt_at=now, message="refused",
                                     now=now, actor=TICK)
                else:
                    lifecycle.fail(session, action_id, claim_token=token, code=FailureCode.PERMANENT,
                                   message="bad recipient", now=now, actor=TICK)
    answer = browser_for("admin").post(f"/actions/{action_id}/retry", htmx=True)
    assert answer.status_code == 409
    assert "Attempts exhausted (5 used); it cannot be retried." in text(answer)


def test_reschedule_opens_inline_and_answers_with_both_rows(app, acme, browser_for):
    ops = browser_for("ops")
    form = ops.get(f"/actions/{acme.queued}/reschedule", htmx=True)
    assert form.status_code == 200
    assert 'name="date" type="date" value="2026-06-01"' in text(form)
    assert 'name="time" type="time" value="09:00"' in text(form)
    answer = ops.post(f"/actions/{acme.queued}/reschedule", {"date": "2026-06-20", "time": "09:15"}, htmx=True)
    assert answer.status_code == 200
    body = text(answer)
    assert body.count("<tr ") == 2
    with app.app_context(), read_session() as session:
        new = session.scalar(select(ScheduledAction).where(ScheduledAction.rescheduled_from_id == acme.queued))
    assert new.publish_at.isoformat() == "2026-06-20T13:15:00+00:00"
    assert f"Rescheduled to <a href=\"/actions/{new.id}\">#{new.id}</a>" in body
    assert f"Rescheduled from <a href=\"/actions/{acme.queued}\">#{acme.queued}</a>" in body
    # A double click finds the row already rescheduled, and mints nothing.
    again = ops.post(f"/actions/{acme.queued}/reschedule", {"date": "2026-06-21", "time": "09:15"}, htmx=True)
    assert again.status_code == 409 and "Already rescheduled; change the newer row." in text(again)


def test_reschedule_says_when_the_wall_time_shifted(app, acme, browser_for):
    answer = browser_for("ops").post(f"/actions/{acme.queued}/reschedule", {"date": "2026-11-01", "time": "01:30"},
                                     htmx=True)
    assert answer.status_code == 200
    assert "happens twice on 2026-11-01" in text(answer) and "01:30 EDT" in text(answer)


def test_reschedule_refusals(app, acme, browser_for):
    ops = browser_for("ops")
    for data, words in (({"date": "someday", "time": "09:00"}, "Give a date like 2026-06-30."),
                        ({"date": "2026-06-20", "time": "25:99"}, "Give a time like 09:30."),
                        ({"date": "2020-01-01", "time": "09:00"}, "in the past")):
        answer = ops.post(f"/actions/{acme.queued}/reschedule", data, htmx=True)
        assert answer.status_code == 422, data
        assert words in text(answer) and 'name="date"' in text(answer), data  # the form stays open
    kept = ops.post(f"/actions/{acme.queued}/reschedule", {"date": "2020-01-01", "time": "07:45"}, htmx=True)
    # A refused reschedule keeps what was typed, instead of resetting the form to the row's time.
    assert 'value="2020-01-01"' in text(kept) and 'value="07:45"' in text(kept)
    assert "pick a later one" in text(kept) and "publish_at" not in text(kept)
    post_row = ops.post(f"/actions/{acme.post_row}/reschedule", {"date": "2026-06-20", "time": "09:15"}, htmx=True)
    assert post_row.status_code == 409 and "move the post instead" in text(post_row)
    marketer = browser_for("marketer").post(f"/actions/{acme.queued}/reschedule",
                                            {"date": "2026-06-20", "time": "09:15"}, htmx=True)
    assert marketer.status_code == 403 and "You need the ops role to reschedule." in text(marketer)
    assert row_state(app, acme.queued).status == "queued"


def test_a_post_row_offers_move_post_and_post_now(app, acme, browser_for):
    marketer = browser_for("marketer")
    row = marketer.get(f"/actions/{acme.post_row}/row", htmx=True)
    assert f'href="/posts/{acme.post}" aria-label="Move post of #{acme.post_row}, publish_post to main">Move post</a>' in text(row)
    assert "Reschedule</button>" not in text(row) and "Post now</button>" in text(row)
    plain = marketer.get(f"/actions/{acme.queued}/row", htmx=True)
    assert "Move post" not in text(plain) and "Post now" not in text(plain)
    answer = marketer.post(f"/actions/{acme.post_row}/post-now", htmx=True)
    assert answer.status_code == 200 and "Sending now as #" in text(answer)
    rows = rows_of_post(app, acme.world, acme.post)
    assert [r.status for r in rows] == ["cancelled", "queued"]
    assert rows[1].rescheduled_from_id == acme.post_row and rows[1].origin == "person"
    not_a_post = marketer.post(f"/actions/{acme.queued}/post-now", htmx=True)
    assert not_a_post.status_code == 422 and "does not belong to a post" in text(not_a_post)


def test_without_htmx_a_change_redirects_and_a_refusal_shows_the_page(acme, browser_for):
    ops = browser_for("ops")
    answer = ops.post(f"/actions/{acme.queued}/cancel", {"next": "/queue"})
    assert answer.status_code == 303 and answer.headers["Location"] == "/queue"
    evil = ops.post(f"/actions/{acme.queued}/cancel", {"next": "//evil.example/"})
    assert evil.headers["Location"] == f"/actions/{acme.queued}"
    refused = ops.post(f"/actions/{acme.published}/cancel")
    assert refused.status_code == 409 and "<html" in text(refused) and "Already sent at 08:00:00." in text(refused)


def test_a_submitted_row_polls_until_it_settles(app, acme, browser_for):
    action_id = make_action(app, acme.world, minutes=-1)
    claim_and(app, action_id, "submitted")
    ops = browser_for("ops")
    row = ops.get(f"/actions/{action_id}/row", htmx=True)
    assert 'hx-trigger="every 5s"' in text(row) and "Being sent" in text(row)
    settled = ops.get(f"/actions/{acme.published}/row", htmx=True)
    assert "every 5s" not in text(settled) and "prov-42" in text(settled)


def test_bulk_cancel_previews_a_count_then_cancels_on_confirmation(app, acme, browser_for):
    for n in range(3):
        make_action(app, acme.world, minutes=100 + n, target=f"bulk{n}@example.test")
    ops = browser_for("ops")
    preview = ops.get("/queue/bulk-cancel?q=bulk")
    assert preview.status_code == 200 and '<strong id="bulk-count">3</strong>' in text(preview)
    assert row_state(app, acme.queued).status == "queued"
    unconfirmed = ops.post("/queue/bulk-cancel", {"q": "bulk"})
    assert "bulk-count" in text(unconfirmed)  # still the preview: nothing changed without "yes"
    done = ops.post("/queue/bulk-cancel", {"q": "bulk", "confirm": "yes"})
    assert done.status_code == 200 and "Cancelled 3 actions." in text(done)
    assert row_state(app, acme.queued).status == "queued"  # outside the filter
    again = ops.get("/queue/bulk-cancel?q=bulk", htmx=True)
    assert "Nothing matches these filters." in text(again) and "<html" not in text(again)


def test_bulk_retry_previews_and_retries_failed_rows(app, acme, browser_for):
    admin = browser_for("admin")
    preview = admin.get("/failures/bulk-retry?reason=permanent")
    assert '<strong id="bulk-count">1</strong>' in text(preview)
    done = admin.post("/failures/bulk-retry", {"reason": "permanent", "confirm": "yes"})
    assert "Retried 1 action." in text(done)
    assert row_state(app, acme.failed).status == "queued"
    assert browser_for("ops").post("/failures/bulk-retry", {"confirm": "yes"}).status_code == 403
    assert browser_for("marketer").post("/queue/bulk-cancel", {"confirm": "yes"}).status_code == 403


def test_a_row_re_rendered_after_a_change_shows_the_event_that_change_just_wrote(acme, browser_for):
    """On SQLite a read transaction begun before the write would render the row without its own event."""
    answer = browser_for("admin").post(f"/actions/{acme.failed}/retry", htmx=True)
    assert answer.status_code == 200
    assert "failed → queued" in answer.get_data(as_text=True)
