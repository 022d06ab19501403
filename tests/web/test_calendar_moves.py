"""Moving a post on the calendar: a drop (or Move to…) moves every queued target with lineage, sent
ones stay and the answer says so, refusals come back in place, Undo is another guarded move."""

import pytest
import re

from sqlalchemy import select

from models.accounts.tables import Role
from models.actions.tables import Origin, ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.posts.access import may_move_post
from models.posts.tables import Post
from tests.web.conftest import claim_and, make_action, make_post, rows_of_post


def text(answer) -> str:
    return answer.get_data(as_text=True)


def add_channel(app, world, name):
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        channel = Channel(workspace_id=world.workspace_id, name=name, kind="log", config={}, created_at=runtime().now())
        channel.set_secret(runtime().secret_box, None)
        session.add(channel)


def post_of(app, post_id) -> Post:
    with app.app_context(), read_session() as session:
        return session.get(Post, post_id)


def two_target_post(app, world, **kwargs):
    add_channel(app, world, "news")
    return make_post(app, world, targets=("main", "news"), **kwargs)


def drop(browser, post_id, day, at, *, htmx=True, view="month", **extra):
    data = {"post": str(post_id), "date": day, "time": at, "view": view, "focus": day, **extra}
    return browser.post("/calendar/move", data, htmx=htmx)


def undo_fields(answer) -> dict:
    form = re.search(r'<form class="undo".*?</form>', text(answer), re.S)
    assert form, text(answer)[:2000]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form.group(0)))


def test_a_drop_moves_every_queued_target_to_the_new_day_at_the_same_local_time_with_lineage(app, world, browser_for):
    post = two_target_post(app, world)
    before = rows_of_post(app, world, post)
    answer = drop(browser_for("marketer"), post, "2026-06-17", "09:00")
    assert answer.status_code == 200
    assert "2 targets moved to Wed 17 Jun 2026, 09:00 EDT." in text(answer)
    assert "<html" not in text(answer) and 'id="calendar-notice"' in text(answer)
    rows = rows_of_post(app, world, post)
    old = [r for r in rows if r.id in {b.id for b in before}]
    new = [r for r in rows if r.id not in {b.id for b in before}]
    assert {(r.status, r.cancel_kind) for r in old} == {("cancelled", "rescheduled")}
    assert sorted(r.rescheduled_from_id for r in new) == sorted(b.id for b in before)
    assert {r.publish_at.isoformat() for r in new} == {"2026-06-17T13:00:00+00:00"}
    assert {r.status for r in new} == {"queued"}
    moved = post_of(app, post)
    assert (moved.wall_date.isoformat(), moved.wall_time.isoformat()) == ("2026-06-17", "09:00:00")


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_a_week_drop_lands_at_the_slots_time_and_says_when_the_wall_time_shifts(app, world, browser_for):
    post = make_post(app, world, day="2026-10-29", at="09:00")
    answer = drop(browser_for("ops"), post, "2026-11-01", "01:30", view="week")
    assert answer.status_code == 200
    assert "1 target moved to Sun 01 Nov 2026, 01:30 EDT." in text(answer)
    assert "happens twice on 2026-11-01" in text(answer)
    assert 'class="calendar week"' in text(answer)


def test_a_sent_target_stays_and_the_drop_says_so(app, world, browser_for):
    post = two_target_post(app, world)
    main = next(r for r in rows_of_post(app, world, post) if r.target_key == "main")
    claim_and(app, main.id, "published")
    answer = drop(browser_for("marketer"), post, "2026-06-18", "10:00")
    assert answer.status_code == 200
    assert "Main already sent at 09:00; 1 target moved to Thu 18 Jun 2026, 10:00 EDT." in text(answer)
    rows = rows_of_post(app, world, post)
    assert [r.status for r in rows if r.target_key == "main"] == ["published"]
    assert [r.status for r in rows if r.target_key == "news"] == ["cancelled", "queued"]


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_an_in_flight_target_stays_and_the_drop_says_so(app, world, browser_for):
    post = two_target_post(app, world)
    news = next(r for r in rows_of_post(app, world, post) if r.target_key == "news")
    claim_and(app, news.id, "submitted")
    answer = drop(browser_for("marketer"), post, "2026-06-18", "10:00")
    assert answer.status_code == 200
    assert "News is being sent (claimed at 09:00); 1 target moved to" in text(answer)


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_a_draft_moves_alone_it_has_no_rows(app, world, browser_for):
    post = make_post(app, world, approve=False)
    answer = drop(browser_for("marketer"), post, "2026-06-20", "08:15")
    assert answer.status_code == 200 and "Post #%d (draft) moved to Sat 20 Jun 2026, 08:15 EDT." % post in text(answer)
    assert rows_of_post(app, world, post) == []


def test_a_published_or_archived_post_and_a_drop_in_the_past_are_refused_in_place_and_change_nothing(
        app, world, browser_for):
    from models.posts.operations import archive_post
    from models.core.runtime import runtime
    from models.core.moves import Actor

    marketer = browser_for("marketer")
    post = make_post(app, world)
    before = [(r.id, r.status) for r in rows_of_post(app, world, post)]
    past = drop(marketer, post, "2026-05-31", "09:00")
    assert past.status_code == 422
    assert "That is in the past: a post cannot be moved before now. Nothing changed." in text(past)
    assert "HX-Retarget" not in past.headers and 'id="calendar-notice"' in text(past)  # in place, on the calendar
    earlier_today = drop(marketer, post, "2026-06-01", "07:00")  # 08:00 in New York now
    assert earlier_today.status_code == 422
    assert [(r.id, r.status) for r in rows_of_post(app, world, post)] == before
    with app.app_context(), write_session() as session:
        archive_post(session, world.workspace_id, post, actor=Actor(label="user:test"), now=runtime().now(),
                     policy=runtime().policy)
    archived = drop(marketer, post, "2026-06-12", "09:00")
    assert archived.status_code == 409
    assert f"Post #{post} is archived; it can no longer be moved." in text(archived)
    assert post_of(app, post).wall_date.isoformat() == "2026-06-10"


def test_undo_is_another_move_with_lineage(app, world, browser_for):
    post = two_target_post(app, world)
    marketer = browser_for("marketer")
    moved = drop(marketer, post, "2026-06-17", "09:00")
    fields = undo_fields(moved)
    assert (fields["date"], fields["time"], fields["undo"]) == ("2026-06-10", "09:00", "1")
    undone = marketer.post("/calendar/move", fields, htmx=True)
    assert undone.status_code == 200 and "2 targets moved back to Wed 10 Jun 2026, 09:00 EDT." in text(undone)
    assert '<form class="undo"' not in text(undone)
    rows = rows_of_post(app, world, post)
    assert len(rows) == 6 and [r.status for r in rows].count("queued") == 2
    for target in ("main", "news"):
        chain = [r for r in rows if r.target_key == target]
        assert chain[1].rescheduled_from_id == chain[0].id and chain[2].rescheduled_from_id == chain[1].id
        assert chain[2].publish_at.isoformat() == "2026-06-10T13:00:00+00:00"
    # The same Undo again finds the post changed since: refused, nothing moves.
    again = marketer.post("/calendar/move", fields, htmx=True)
    assert again.status_code == 409 and "Undo refused" in text(again)


def test_undo_is_refused_when_a_row_was_claimed_meanwhile_and_nothing_moves_back(app, world, browser_for):
    post = two_target_post(app, world, day="2026-06-02", at="09:00")
    marketer = browser_for("marketer")
    moved = drop(marketer, post, "2026-06-01", "10:00")  # due in two hours
    fields = undo_fields(moved)
    news = next(r for r in rows_of_post(app, world, post) if r.target_key == "news" and r.status == "queued")
    claim_and(app, news.id, "submitted", at=news.publish_at)
    before = [(r.id, r.status) for r in rows_of_post(app, world, post)]
    refused = marketer.post("/calendar/move", fields, htmx=True)
    assert refused.status_code == 409
    assert "Undo refused: news is being sent meanwhile; nothing was moved back." in text(refused)
    assert [(r.id, r.status) for r in rows_of_post(app, world, post)] == before
    assert post_of(app, post).wall_date.isoformat() == "2026-06-01"


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_bad_move_input_is_a_4xx_and_changes_nothing(app, world, browser_for):
    from tests.conftest import make_world

    post = make_post(app, world)
    marketer = browser_for("marketer")
    before = [(r.id, r.status, r.publish_at) for r in rows_of_post(app, world, post)]
    cases = [
        ({"post": "x", "date": "2026-06-12", "time": "09:00"}, 422),
        ({"post": "99999999999", "date": "2026-06-12", "time": "09:00"}, 422),
        ({"post": str(post), "date": "someday", "time": "09:00"}, 422),
        ({"post": str(post), "date": "2026-02-30", "time": "09:00"}, 422),
        ({"post": str(post), "date": "2026-06-12", "time": "25:00"}, 422),
        ({"post": str(post), "date": "9999-12-31", "time": "23:59"}, 422),
        ({"post": str(post), "date": "2026-06-12", "time": "09:00", "undo": "1", "revision": "x"}, 422),
        ({"post": str(post), "date": "2026-06-12", "time": "09:00", "undo": "1", "revision": "2", "rows": "1,a"}, 422),
        ({"post": str(post), "date": "2026-06-12", "time": "09:00", "undo": "1", "revision": "1",
          "rows": "99999"}, 422),
        ({"post": str(post), "date": "2026-06-12", "time": "09:00", "undo": "1", "revision": "7"}, 409),
        ({"post": str(post + 500), "date": "2026-06-12", "time": "09:00"}, 404),
    ]
    for data, status in cases:
        for htmx in (True, False):
            answer = marketer.post("/calendar/move", {**data, "view": "bogus", "focus": "never"}, htmx=htmx)
            assert answer.status_code == status, (data, htmx, text(answer)[:300])
    assert [(r.id, r.status, r.publish_at) for r in rows_of_post(app, world, post)] == before
    other = make_world(app, name="Globex")
    other_post = make_post(app, other)
    assert drop(marketer, other_post, "2026-06-12", "09:00").status_code == 404


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_without_htmx_a_move_redirects_to_the_calendar_and_a_refusal_shows_the_move_page(app, world, browser_for):
    post = make_post(app, world)
    marketer = browser_for("marketer")
    answer = drop(marketer, post, "2026-06-16", "09:00", htmx=False)
    assert answer.status_code == 303 and answer.headers["Location"] == "/calendar?view=month&date=2026-06-16"
    page = marketer.get(answer.headers["Location"])
    assert "1 target moved to Tue 16 Jun 2026, 09:00 EDT." in text(page)
    refused = drop(marketer, post, "2020-01-01", "09:00", htmx=False)
    assert refused.status_code == 422 and "<html" in text(refused) and "That is in the past" in text(refused)
    assert 'name="date" type="date" value="2020-01-01"' in text(refused)


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_chips_of_posts_drag_and_rows_that_follow_something_else_say_why_not(app, world, browser_for):
    post = make_post(app, world, day="2026-06-11", at="09:00")
    draft = make_post(app, world, day="2026-06-11", at="11:00", approve=False)
    recurring = make_action(app, world, minutes=10 * 24 * 60, origin=Origin.RECURRING, thing_id="rule:1:2026-06-11T10:00")
    drip = make_action(app, world, minutes=10 * 24 * 60 + 5, origin=Origin.DRIP, thing_id="drip:1:0")
    adhoc = make_action(app, world, minutes=10 * 24 * 60 + 10)
    page = text(browser_for("marketer").get("/calendar?date=2026-06-11"))
    assert re.search(rf'draggable="true" data-move-post="{post}" data-wall-date="2026-06-11" data-wall-time="09:00"', page)
    assert re.search(rf'draggable="true" data-move-post="{draft}" data-wall-date="2026-06-11" data-wall-time="11:00"', page)
    for row_id, words in ((recurring, "A recurring occurrence: edit the rule to move it."),
                          (drip, "A drip send follows its enrollment; it cannot be moved here."),
                          (adhoc, "reschedule it from the queue")):
        chip = re.search(rf'<a href="/actions/{row_id}" [^>]*>', page).group(0)
        assert 'draggable="true"' not in chip and f'data-unmovable="' in chip and words in chip, chip
    # Each post has one Move to… control per day, named after the post, for the keyboard and screen readers.
    assert page.count(f'aria-label="Move to… post #{post},') == 2  # the grid, and the agenda list
    assert 'id="drop-form"' in page


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_move_to_opens_a_form_and_previews_where_the_post_lands_with_any_dst_note(app, world, browser_for):
    post = make_post(app, world)
    marketer = browser_for("marketer")
    panel = marketer.get(f"/calendar/move?post={post}&view=week&focus=2026-06-10", htmx=True)
    assert panel.status_code == 200 and "<html" not in text(panel)
    assert 'name="date" type="date" value="2026-06-10"' in text(panel) and 'hx-target="#calendar"' in text(panel)
    page = marketer.get(f"/calendar/move?post={post}")
    assert page.status_code == 200 and "<html" in text(page) and 'hx-post="/calendar/move"' not in text(page)
    preview = marketer.get(f"/calendar/move-preview?post={post}&date=2027-03-14&time=02:30", htmx=True)
    assert "Lands on <strong>Sun 14 Mar 2027, 03:30 EDT</strong>" in text(preview)
    assert "does not exist on 2027-03-14" in text(preview)
    past = marketer.get(f"/calendar/move-preview?post={post}&date=2026-05-01&time=09:00", htmx=True)
    assert "That is in the past" in text(past)
    garbage = marketer.get(f"/calendar/move-preview?post={post}&date=x&time=y", htmx=True)
    assert garbage.status_code == 200 and "Give a date like 2026-06-30." in text(garbage)
    assert marketer.get("/calendar/move?post=abc").status_code == 422
    assert marketer.get(f"/calendar/move?post={post + 99}", htmx=True).status_code == 404
    assert marketer.get(f"/calendar/move-preview?post={post}").status_code == 302


@pytest.mark.only_backend("sqlite")  # no database rule here; the moves themselves run on both
def test_every_role_that_composes_may_move_a_post_and_the_domain_says_so(app, world, browser_for):
    assert {role: may_move_post(role) for role in Role} == {
        Role.MARKETER: True, Role.OPS: True, Role.ADMIN: True, Role.REVIEWER: False}
    post = make_post(app, world)
    for n, role in enumerate(("marketer", "ops", "admin")):
        answer = drop(browser_for(role), post, f"2026-06-1{n + 2}", "09:00")
        assert answer.status_code == 200, role
    with app.app_context(), read_session() as session:
        queued = session.scalars(select(ScheduledAction).where(ScheduledAction.status == "queued")).all()
    assert [r.publish_at.isoformat() for r in queued] == ["2026-06-14T13:00:00+00:00"]
