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
