"""Posts on the dashboard through the house's shared pieces: a refused move in place, the posts'
gauge on the health page and in /metrics, drafts on the calendar through the calendar source."""

from tests.integration.test_reconciler import _call, _post


def test_a_refused_post_move_is_written_in_place_on_the_dashboard(app, client, world, browser_for):
    post_id = _post(client, world, approve=False)
    _call(client, world, post_id, "archive")
    marketer = browser_for("marketer")
    answer = marketer.post(f"/posts/{post_id}/approve", htmx=True)
    assert answer.status_code == 409
    assert f"post #{post_id} is archived; it cannot be approved" in answer.get_data(as_text=True)
    assert answer.headers.get("HX-Retarget") is None  # the composer re-rendered with the refusal, not an error page


def test_posts_show_on_the_health_page_and_in_metrics_through_their_gauge(app, client, world, browser_for):
    _post(client, world)
    _post(client, world, approve=False, local_time="2026-06-02T09:00")
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'tickwork_posts{status="approved"} 1.0' in metrics and 'tickwork_posts{status="draft"} 1.0' in metrics
    page = browser_for("ops").get("/health").get_data(as_text=True)
    assert "Posts by status" in page and "approved 1" in page


def test_drafts_reach_the_calendar_through_the_posts_calendar_source(app, client, world, browser_for):
    post_id = _post(client, world, approve=False, local_time="2026-06-03T10:15")
    page = browser_for("marketer").get("/calendar?date=2026-06-03", htmx=False).get_data(as_text=True)
    assert f'href="/posts/{post_id}"' in page and "10:15 Fresh bread" in page
    fragment = browser_for("marketer").get("/calendar?date=2026-06-03", htmx=True).get_data(as_text=True)
    assert f'href="/posts/{post_id}"' in fragment


def test_post_now_on_a_draft_in_the_composer_approves_it_first_and_the_published_post_never_says_goes_out(
        app, client, world, browser_for, clock):
    from sqlalchemy import select

    from models.actions.tables import ScheduledAction
    from models.core.database import read_session
    from models.posts.tables import Post
    from tests.integration.clock_helpers import tick
    from tests.integration.test_reconciler import _reconcile

    post_id = _post(client, world, approve=False, local_time="2026-06-10T09:00")
    marketer = browser_for("marketer")
    answer = marketer.post(f"/posts/{post_id}/post-now")
    assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
    tick(app)
    sent_at = clock.now()
    clock.advance(minutes=3)
    assert _reconcile(app)["posts_published"] == 1
    with app.app_context(), read_session() as session:
        post = session.get(Post, post_id)
        rows = list(session.scalars(select(ScheduledAction).order_by(ScheduledAction.id)))
        assert post.status == "published" and post.published_at == sent_at  # the send's time, not the pass's
        assert post.approved_at is not None
        assert [(r.status, r.origin) for r in rows] == [("cancelled", "reconciler"), ("published", "person")]
    page = marketer.get(f"/posts/{post_id}").get_data(as_text=True)
    assert "Goes out" not in page and "nothing is scheduled" not in page
    assert "Post now" not in page and ">Approve<" not in page
    assert "Published to every target" in page
