"""The review step in real Chromium: a marketer submits a post, an admin makes a review link, and an
outside reviewer, in a second browser context with no account and a zone of their own, approves it."""

import re

import pytest
from playwright.sync_api import expect

from models.accounts.workspaces import set_review_settings
from models.core.database import read_session, write_session
from models.posts.tables import Post
from tests.web.conftest import make_post

pytestmark = pytest.mark.browser


def _review(live, setting: str) -> None:
    with live.app.app_context(), write_session() as session:
        set_review_settings(session, live.world.workspace_id, review=setting)


def test_a_submitted_post_is_approved_through_a_review_link_in_another_browser(open_as, live, chromium, screens):
    live.app.config["TICKWORK_BASE_URL"] = live.url
    _review(live, "required")
    post_id = make_post(live.app, live.world, body="Harvest festival on Saturday", day="2026-07-21", at="09:00",
                        approve=False)
    outside = None
    try:
        marketer = open_as("marketer")
        marketer.goto(f"/posts/{post_id}")
        expect(marketer.get_by_role("button", name="Save and approve")).to_have_count(0)
        marketer.get_by_role("button", name="Submit for review").click()
        expect(marketer.locator("h1 .chip")).to_have_text("in_review")

        admin = open_as("admin")
        admin.goto(f"/posts/{post_id}")
        admin.get_by_label("Outside reviewer's name").fill("Dana at Client Co")
        admin.get_by_role("button", name="Make a review link").click()
        flashed = admin.get_by_text("Review link for Dana at Client Co").inner_text()
        url = re.search(r"(https?://\S+/review/\S+)", flashed).group(1)

        outside = chromium.new_context(timezone_id="Europe/Paris", viewport={"width": 1000, "height": 900})
        page = outside.new_page()
        page.goto(url)
        expect(page.get_by_role("heading", name="Review a post for Acme")).to_be_visible()
        expect(page.locator("article.network-preview")).to_contain_text("Harvest festival on Saturday")
        # 09:00 in New York is 15:00 in Paris: the time is shown in the reader's own zone.
        expect(page.locator("#review-time")).to_contain_text("15:00")
        expect(page.locator("#review-time")).to_contain_text("Europe/Paris")
        page.screenshot(path=str(screens / "review-link.png"), full_page=True)
        page.get_by_label("Comment").fill("Lovely, go ahead")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("heading", name="Approved. Thank you.")).to_be_visible()
        with live.app.app_context(), read_session() as session:
            assert session.get(Post, post_id).status == "approved"
        page.goto(url)  # used for a decision: it no longer works
        expect(page.get_by_role("heading", name="This review link no longer works")).to_be_visible()
        admin.goto(f"/posts/{post_id}")
        expect(admin.locator("#review")).to_contain_text("outside:Dana at Client Co")
    finally:
        if outside is not None:
            outside.close()
        _review(live, "off")
        live.app.config["TICKWORK_BASE_URL"] = None
        from models.core.moves import Actor
        from models.core.runtime import runtime
        from models.posts.operations import archive_post

        with live.app.app_context():
            rt = runtime()
            with write_session() as session:
                archive_post(session, live.world.workspace_id, post_id, actor=Actor(label="test"), now=rt.now(),
                             policy=rt.policy)
