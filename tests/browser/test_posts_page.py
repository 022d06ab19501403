"""In Chromium: the posts page's filters and the network's link of a published target; the queue refreshing
itself while open (a row the clock changed updates without a reload) and waiting while a form is edited;
a destructive plain form that asks before it acts."""

import re

import pytest
from playwright.sync_api import expect

from models.channels.tables import Channel
from models.core.database import write_session
from tests.web.conftest import claim_and, make_action, make_post, rows_of_post

pytestmark = pytest.mark.browser

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def _channel(live, name, kind, config):
    with live.app.app_context(), write_session() as session:
        if session.query(Channel).filter_by(workspace_id=live.world.workspace_id, name=name).first() is None:
            session.add(Channel(workspace_id=live.world.workspace_id, name=name, kind=kind, config=config,
                                created_at=live.clock.now()))


def test_the_posts_page_filters_and_links_a_published_target_to_its_network(live, open_as):
    _channel(live, "sky-page", "bluesky", {"handle": "acme.bsky.social"})
    sent = make_post(live.app, live.world, body="Posts page: sourdough is back", targets=("sky-page", "main"),
                     day="2026-07-02", at="09:00")
    row = next(r for r in rows_of_post(live.app, live.world, sent) if r.target_key == "sky-page")
    claim_and(live.app, row.id, "published", provider_id=f"at://{DID}/app.bsky.feed.post/3kpostspage22 bafy")
    make_post(live.app, live.world, body="Posts page: a draft of croissants", approve=False, role="admin",
              day="2026-07-03", at="10:00")
    page = open_as("marketer")
    page.get_by_role("link", name="Posts", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("^Posts"))).to_be_visible()
    page.get_by_label("Text").fill("posts page:")
    page.get_by_role("button", name="Filter").click()
    results = page.locator("#results")
    expect(results).to_contain_text("sourdough is back")
    expect(results).to_contain_text("a draft of croissants")
    sent_row = page.locator(f"#post-{sent}")
    link = sent_row.get_by_role("link", name=f"Post #{sent} on Bluesky (sky-page)")
    expect(link).to_have_attribute("href", f"https://bsky.app/profile/{DID}/post/3kpostspage22")
    expect(sent_row).to_contain_text("sent")
    expect(sent_row).to_contain_text("queued")
    page.get_by_label("Status").select_option("draft")
    page.get_by_role("button", name="Filter").click()
    expect(results).not_to_contain_text("sourdough is back")
    expect(results).to_contain_text("a draft of croissants")
    expect(page).to_have_url(re.compile(r"status=draft"))
    page.get_by_label("Status").select_option("")
    page.get_by_label("A target").select_option("published")
    page.get_by_role("button", name="Filter").click()
    expect(results).to_contain_text("sourdough is back")
    expect(results).not_to_contain_text("a draft of croissants")
    page.get_by_label("A target").select_option("")
    page.get_by_label("Author").select_option(label="admin@acme.test")
    page.get_by_label("From").fill("2026-07-03")
    page.get_by_role("button", name="Filter").click()
    expect(results).to_contain_text("a draft of croissants")
    expect(results).not_to_contain_text("sourdough is back")
    page.get_by_label("Channel").select_option("sky-page")
    page.get_by_role("button", name="Filter").click()
    expect(results).to_contain_text("No post matches these filters.")
    for width in (390, 1280, 1366):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/posts?q=posts+page")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
    assert page.dialogs == []


def test_the_queue_refreshes_itself_while_open_and_waits_while_a_form_is_being_edited(live, open_as):
    live.app.config["DASHBOARD_REFRESH_SECONDS"] = 1
    try:
        first = make_action(live.app, live.world, minutes=50, target="live-refresh-1@example.test")
        page = open_as("ops")
        page.goto("/queue?q=live-refresh")
        row = page.locator(f"#action-{first}")
        expect(row.locator(".chip")).to_have_text("queued")
        expect(page.locator("[data-refresh] [data-updated-at]")).to_have_text(re.compile(r"updated (just now|\d s ago)"))
        claim_and(live.app, first, "submitted")  # the clock claimed it meanwhile
        expect(row.locator(".chip")).to_have_text("submitted", timeout=5000)
        # Typing in the filter pauses the refresh: a row added meanwhile does not appear until the form is left.
        page.get_by_label("Text").click()
        page.keyboard.press("End")
        page.keyboard.type("x")
        expect(page.locator("[data-refresh] [data-updated-at]")).to_contain_text("paused while you edit",
                                                                                  timeout=5000)
        second = make_action(live.app, live.world, minutes=55, target="live-refresh-2@example.test")
        page.wait_for_timeout(2500)
        expect(page.locator(f"#action-{second}")).to_have_count(0)
        expect(page.get_by_label("Text")).to_have_value("live-refreshx")  # what was typed is kept
        page.keyboard.press("Backspace")
        page.get_by_role("button", name="Filter").click()  # submitted: no longer being edited
        expect(page.locator(f"#action-{second}")).to_have_count(1, timeout=5000)
        page.locator("h1").click()
        third = make_action(live.app, live.world, minutes=58, target="live-refresh-3@example.test")
        expect(page.locator(f"#action-{third}")).to_have_count(1, timeout=5000)
        assert page.dialogs == []
    finally:
        live.app.config.pop("DASHBOARD_REFRESH_SECONDS", None)


def test_deleting_a_work_asks_in_place_before_it_deletes(live, open_as):
    from tests.integration.works_helpers import create_work

    work = create_work(live.app.test_client(), live.world, name="Asks before deleting")
    page = open_as("ops")
    page.goto(f"/works/{work}")
    page.get_by_role("button", name="Delete work").click()
    expect(page.locator(".confirm-note")).to_contain_text("Delete work Asks before deleting?")
    expect(page).to_have_url(re.compile(rf"/works/{work}$"))
    page.get_by_role("button", name="Yes, delete it").click()
    expect(page).not_to_have_url(re.compile(rf"/works/{work}$"))
    assert page.dialogs == []


def test_the_calendar_filters_by_review_state_and_author_and_keeps_them_while_paging(live, open_as):
    make_post(live.app, live.world, body="Calendar filter: approved bread", day="2026-08-05", at="09:00")
    make_post(live.app, live.world, body="Calendar filter: draft cakes", day="2026-08-05", at="11:00",
              approve=False, role="admin")
    make_post(live.app, live.world, body="Calendar filter: next week's draft", day="2026-08-12", at="11:00",
              approve=False, role="admin")
    page = open_as("marketer")
    page.goto("/calendar?view=week&date=2026-08-03")
    grid = page.locator(".calendar-grid")
    expect(grid).to_contain_text("approved bread")
    page.locator("details.calendar-filter summary").click()
    page.get_by_label("Review state").select_option("draft")
    page.get_by_label("Author").select_option(label="admin@acme.test")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"review=draft"))
    expect(grid).to_contain_text("draft cakes")
    expect(grid).not_to_contain_text("approved bread")
    expect(page.locator("details.calendar-filter summary")).to_contain_text("review draft")
    page.get_by_role("link", name="Next →").click()
    expect(page).to_have_url(re.compile(r"date=2026-08-10.*review=draft"))
    expect(grid).to_contain_text("next week's draft")
    page.get_by_role("link", name="Show everything").click()
    expect(page).not_to_have_url(re.compile(r"review="))
    assert page.dialogs == []
