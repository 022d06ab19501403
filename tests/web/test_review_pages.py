"""The review step on the dashboard: the settings page turns it on, the composer submits, requests changes
and comments, and a review link's decision is refused while the browser holds the author's session."""

import re

import pytest
from sqlalchemy import select

from models.core.database import read_session
from models.posts.tables import Post, PostComment
from tests.conftest import add_member_with_token
from tests.web.conftest import make_post

BASE_URL = "https://tickwork.example"


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL)
    return app_config


def _status(app, post_id) -> str:
    with app.app_context(), read_session() as session:
        return session.get(Post, post_id).status


def _require_review(browser_for) -> None:
    admin = browser_for("admin")
    assert admin.post("/settings/review", {"review": "required"}).status_code == 303
    assert "Required: a post is submitted for review" in admin.get("/settings").get_data(as_text=True)


def test_the_composer_submits_then_a_reviewer_requests_changes_with_a_comment_on_the_thread(app, world,
                                                                                             browser_for):
    add_member_with_token(app, world, "reviewer")
    _require_review(browser_for)
    post_id = make_post(app, world, approve=False)
    marketer, reviewer = browser_for("marketer"), browser_for("reviewer")
    page = marketer.get(f"/posts/{post_id}").get_data(as_text=True)
    assert "Submit for review" in page and "Save and approve" not in page
    assert marketer.post(f"/posts/{post_id}/submit").status_code == 303
    assert _status(app, post_id) == "in_review"
    assert marketer.post(f"/posts/{post_id}/approve").status_code == 403  # only admins and reviewers
    refused = reviewer.post(f"/posts/{post_id}/request-changes", {"comment": "  "})
    assert refused.status_code == 422 and _status(app, post_id) == "in_review"
    assert reviewer.post(f"/posts/{post_id}/request-changes", {"comment": "Name the bakery"}).status_code == 303
    assert _status(app, post_id) == "draft"
    assert reviewer.post(f"/posts/{post_id}/comments", {"comment": "Thanks!"}).status_code == 303
    thread = marketer.get(f"/posts/{post_id}").get_data(as_text=True)
    assert "requested changes" in thread and "Name the bakery" in thread and "Thanks!" in thread


def test_a_review_link_decision_is_refused_while_the_browser_holds_the_authors_session(app, world, browser_for):
    _require_review(browser_for)
    post_id = make_post(app, world, approve=False)
    marketer, admin = browser_for("marketer"), browser_for("admin")
    marketer.post(f"/posts/{post_id}/submit")
    made = admin.post(f"/posts/{post_id}/review-links", {"reviewer_name": "Dana"}, follow_redirects=True)
    path = re.search(rf"{re.escape(BASE_URL)}(/review/[A-Za-z0-9_-]+)", made.get_data(as_text=True)).group(1)
    refused = marketer.client.post(path, data={"decision": "approve"})
    assert refused.status_code == 403 and "author" in refused.get_data(as_text=True)
    assert _status(app, post_id) == "in_review"
    # The same link, from a browser without the author's session, decides.
    assert app.test_client().post(path, data={"decision": "approve"}).status_code == 200
    assert _status(app, post_id) == "approved"
    with app.app_context(), read_session() as session:
        authors = list(session.scalars(select(PostComment.author).where(PostComment.post_id == post_id,
                                                                         PostComment.kind == "approve")))
    assert authors == ["outside:Dana"]


def test_a_reviewer_reads_what_a_marketer_reads_and_is_offered_no_composing(app, world, browser_for):
    add_member_with_token(app, world, "reviewer")
    post_id = make_post(app, world, approve=False)
    reviewer, marketer = browser_for("reviewer"), browser_for("marketer")
    for path in ("/calendar", f"/posts/{post_id}", "/queue", "/history", "/media", "/campaigns", "/recurring",
                 "/notifications"):
        assert (reviewer.get(path).status_code, path) == (marketer.get(path).status_code, path)
    calendar = reviewer.get("/calendar?date=2026-06-10").get_data(as_text=True)
    assert 'class="compose"' not in calendar
    assert 'class="compose"' in marketer.get("/calendar?date=2026-06-10").get_data(as_text=True)
    assert reviewer.post("/posts", {"body": "Mine", "targets": "main", "date": "2026-06-20",
                                    "time": "10:00"}).status_code == 403


def test_the_review_page_shows_each_target_what_it_is_sent_so_no_media_on_one_network_shows_none(app, world,
                                                                                                 client):
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime
    from tests.integration.chat_helpers import upload
    from tests.media_files import png_bytes

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="plain", kind="log", config={},
                            created_at=runtime().now()))
    image = upload(client, world, png_bytes())
    created = client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": "Fresh bread at nine", "targets": ["main", "plain"], "local_time": "2026-06-10T09:00",
        "media": [image], "variants": {"plain": {"body": "Bread at nine, words only", "media": []}}})
    assert created.status_code == 201, created.json
    made = client.post(f"/api/v1/posts/{created.json['id']}/review-links", headers=world.auth("admin"),
                       json={"reviewer_name": "Dana"})
    assert made.status_code == 201, made.json
    page = app.test_client().get(made.json["url"].removeprefix(BASE_URL)).get_data(as_text=True)
    cards = dict(re.findall(r'data-channel="([^"]+)">(.*?)</article>', page, flags=re.S))
    assert "Fresh bread at nine" in cards["main"] and "1 image" in cards["main"]
    assert "Bread at nine, words only" in cards["plain"] and "image" not in cards["plain"]
    # Each card is the network's own preview, as in the composer: who posts, and the network's counter.
    assert 'class="who"' in cards["main"] and 'class="count"' in cards["main"]
    assert "19 / " in cards["main"] and "25 / " in cards["plain"]


def test_the_composer_and_the_review_page_draw_the_same_media_grid_with_their_own_addresses(app, world, client,
                                                                                             browser_for):
    from tests.integration.chat_helpers import upload
    from tests.media_files import png_bytes
    from tests.web.conftest import HX

    images = [upload(client, world, png_bytes(), alt=f"Loaf {n}") for n in range(6)]
    # The composer: four tiles from the library's own address, and how many more there are.
    page = browser_for("marketer").client.get("/posts/previews", headers=HX, query_string={
        "body": "Six loaves", "targets": ["main"], "media": "\n".join(map(str, images))}).get_data(as_text=True)
    tiles = re.findall(r'<img src="([^"]+)" alt="([^"]+)"', page.split('class="preview-media grid-4"')[1])
    assert [alt for _, alt in tiles] == ["Loaf 0", "Loaf 1", "Loaf 2", "Loaf 3"]
    assert tiles[0][0] == f"/media/{images[0]}/file" and '<span class="more">+2</span>' in page
    # The outside reviewer's page: the same grid, each image at a signed address the reader may open.
    created = client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": "Six loaves", "targets": ["main"], "local_time": "2026-06-10T09:00", "media": images})
    assert created.status_code == 201, created.json
    made = client.post(f"/api/v1/posts/{created.json['id']}/review-links", headers=world.auth("admin"),
                       json={"reviewer_name": "Dana"})
    review = app.test_client().get(made.json["url"].removeprefix(BASE_URL)).get_data(as_text=True)
    signed = re.findall(r'<img src="([^"]+)" alt="Loaf \d"', review)
    assert len(signed) == 4 and all(src.startswith(BASE_URL) and src != tiles[0][0] for src in signed)
    assert '<span class="more">+2</span>' in review
    assert app.test_client().get(signed[0].removeprefix(BASE_URL)).status_code == 200


def test_the_outside_reviewers_zone_is_chosen_from_the_list_with_its_region_and_offset(app, world, browser_for):
    post_id = make_post(app, world, approve=False)
    made = browser_for("admin").post(f"/posts/{post_id}/review-links", {"reviewer_name": "Dana"},
                                     follow_redirects=True)
    path = re.search(rf"{re.escape(BASE_URL)}(/review/[A-Za-z0-9_-]+)", made.get_data(as_text=True)).group(1)
    page = app.test_client().get(path).get_data(as_text=True)
    assert 'list="review-zones"' in page and '<datalist id="review-zones">' in page
    assert '<option value="Europe/Berlin" label="Europe · UTC+02:00">' in page  # June: summer time
    assert '<option value="Asia/Kolkata" label="Asia · UTC+05:30">' in page


def test_post_now_on_a_draft_never_approves_it_for_its_author_while_review_is_required(app, world, browser_for):
    from models.actions.tables import ScheduledAction

    _require_review(browser_for)
    post_id = make_post(app, world, approve=False, role="marketer")
    refused = browser_for("marketer").post(f"/posts/{post_id}/post-now")
    assert refused.status_code == 403, refused.get_data(as_text=True)[:300]
    assert "only admins and reviewers approve" in refused.get_data(as_text=True)
    assert _status(app, post_id) == "draft"
    own = make_post(app, world, approve=False, role="admin")  # an admin may review, but not their own post
    refused = browser_for("admin").post(f"/posts/{own}/post-now")
    assert refused.status_code == 403 and "never approves their own post" in refused.get_data(as_text=True)
    assert _status(app, own) == "draft"
    with app.app_context(), read_session() as session:
        assert list(session.scalars(select(ScheduledAction.id))) == []  # nothing sent, nothing queued


def test_saving_a_change_to_an_approved_posts_text_sends_it_back_to_review_and_says_so(app, world, browser_for):
    add_member_with_token(app, world, "reviewer")
    _require_review(browser_for)
    post_id = make_post(app, world)  # approved
    marketer = browser_for("marketer")
    page = marketer.get(f"/posts/{post_id}").get_data(as_text=True)
    assert "sends it back to review" in page and "a new date or time alone does not" in page
    moved = marketer.post(f"/posts/{post_id}", {"body": "Fresh bread at nine", "targets": ["main"],
                                                "date": "2026-06-11", "time": "09:00", "intent": "save"},
                          follow_redirects=True)
    assert moved.status_code == 200 and _status(app, post_id) == "approved"  # a new time alone
    assert "back in review" not in moved.get_data(as_text=True)
    saved = marketer.post(f"/posts/{post_id}", {"body": "Fresh rye at nine", "targets": ["main"],
                                                "date": "2026-06-11", "time": "09:00", "intent": "save"},
                          follow_redirects=True)
    page = saved.get_data(as_text=True)
    assert saved.status_code == 200 and _status(app, post_id) == "in_review"
    assert f"Saved: post #{post_id} is in_review." in page
    assert "changed after it was approved (text) and this workspace requires review: it is back in review, " \
           "1 queued row withdrawn" in page
    assert "In review: an admin or a reviewer approves it" in page
    assert "Changed after it was approved (text): back to review." in page  # the step, on the post's thread


def test_saving_an_approved_post_unchanged_keeps_it_approved_though_the_browser_sends_its_line_breaks_as_crlf(
        app, world, browser_for):
    _require_review(browser_for)
    post_id = make_post(app, world, body="Fresh bread\nat nine")  # written through the API: LF
    marketer = browser_for("marketer")
    saved = marketer.post(f"/posts/{post_id}", {"body": "Fresh bread\r\nat nine", "targets": ["main"],
                                                "date": "2026-06-10", "time": "09:00", "intent": "save"})
    assert saved.status_code == 303 and _status(app, post_id) == "approved"
