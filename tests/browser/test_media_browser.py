"""The media library in real Chromium: upload an image on the Media page, attach it in the composer, and watch each
target's counter, and its refusal, as the post is written."""

import pytest
from playwright.sync_api import expect

from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.media_files import jpeg_with_gps

pytestmark = pytest.mark.browser


def test_upload_attach_and_see_each_targets_counter_and_refusal(open_as, live, screens):
    with live.app.app_context(), write_session() as session:
        if session.query(Channel).filter_by(name="toots").first() is None:
            session.add(Channel(workspace_id=live.world.workspace_id, name="toots", kind="mastodon",
                                config={"url": "https://masto.example"}, created_at=runtime().now()))
    page = open_as("marketer")
    page.goto("/media")
    page.get_by_label("Drop files here, or choose them").set_input_files(
        {"name": "loaf.jpg", "mimeType": "image/jpeg", "buffer": jpeg_with_gps(size=(320, 240))})
    page.locator("#alt").fill("A loaf on a board")
    page.get_by_role("button", name="Upload").click()
    item = page.locator(".media-item").first
    expect(item).to_contain_text("image/jpeg")
    expect(item.locator("img")).to_have_attribute("alt", "A loaf on a board")
    media_id = item.get_attribute("id").removeprefix("media-")
    page.screenshot(path=str(screens / "media-library.png"), full_page=True)
    page.goto("/posts/new")
    page.locator("#media").fill(media_id)
    page.get_by_role("checkbox", name="toots").check()
    page.get_by_role("checkbox", name="main").check()
    counters = page.locator("#counters")
    expect(counters).to_contain_text("toots")
    page.locator("#body").fill("Fresh bread at nine https://example.com/" + "a" * 200)
    expect(counters.locator("[data-channel=toots]")).to_contain_text("43 / 500 characters (links 23)")
    page.locator("#body").fill("x" * 501)
    expect(counters.locator("[data-channel=toots]")).to_contain_text("Refused: the text is 501 characters")
    expect(counters.locator("[data-channel=main]")).not_to_contain_text("Refused")
    page.screenshot(path=str(screens / "composer-counters.png"), full_page=True)
    page.locator("#body").fill("Fresh bread at nine")
    expect(counters.locator("[data-channel=toots]")).not_to_contain_text("Refused")
    page.locator("#date").fill("2026-06-10")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("body")).to_contain_text("is draft")
    page.goto("/media")
    expect(page.locator(f"#media-{media_id}")).to_contain_text("Used by post")
