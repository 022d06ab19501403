"""Scheduling posts from a CSV file in real Chromium (the dry run's report, then the commit), and the
calendar page's feed panel (an address made, shown once, and served as iCalendar)."""

import pytest
from icalendar import Calendar
from playwright.sync_api import expect
from sqlalchemy import select

from models.core.database import read_session
from models.posts.tables import Post

pytestmark = pytest.mark.browser

CSV = ("body,targets,date,time,media\n"
       "Autumn menu,main,2026-09-14,09:00,\n"
       "Spring forward,main,2027-03-14,02:30,\n"
       "No such day,main,2026-09-31,09:00,\n"
       "Nowhere,instagram,2026-09-14,09:00,\n"
       "Autumn menu,main,2026-09-14,09:00,\n")


def test_a_csv_upload_shows_each_lines_fate_then_schedules_exactly_those(open_as, live, screens):
    page = open_as("marketer")
    page.goto("/calendar")
    page.get_by_role("link", name="Import posts from a CSV file").click()
    expect(page.get_by_role("heading", name="Import posts from a CSV file")).to_be_visible()
    page.get_by_label("CSV file").set_input_files(
        {"name": "september.csv", "mimeType": "text/csv", "buffer": CSV.encode()})
    page.get_by_role("button", name="Check the file").click()
    report = page.locator("table.import-report tbody tr")
    expect(report).to_have_count(5)
    expect(report.nth(0)).to_contain_text("will schedule")
    expect(report.nth(1)).to_contain_text("does not exist")
    expect(report.nth(1)).to_contain_text("moved to 03:30 EDT")
    expect(report.nth(2)).to_contain_text("bad time")
    expect(report.nth(3)).to_contain_text("unknown channel")
    expect(report.nth(4)).to_contain_text("duplicate line")
    page.screenshot(path=str(screens / "posts-import-dry-run.png"), full_page=True)
    with live.app.app_context(), read_session() as session:
        assert session.scalar(select(Post.id).where(Post.body == "Spring forward")) is None  # a dry run writes none
    page.get_by_role("button", name="Schedule 2 approved posts").click()
    expect(page.locator("#import-result")).to_contain_text("2 posts made as approved posts; 2 rows queued.")
    with live.app.app_context(), read_session() as session:
        made = list(session.scalars(select(Post).where(Post.body.in_(["Autumn menu", "Spring forward"]))))
    assert sorted((p.body, p.status) for p in made) == [("Autumn menu", "approved"), ("Spring forward", "approved")]


def test_the_calendar_offers_a_feed_address_once_and_serves_it(open_as, live, screens):
    live.app.config["TICKWORK_BASE_URL"] = live.url  # the address must be reachable from this test
    try:
        page = open_as("ops")
        page.goto("/calendar")
        panel = page.locator("#feed-panel")
        expect(panel).to_contain_text("You have no feed address for this workspace yet.")
        panel.get_by_role("button", name="Make my feed address").click()
        address = page.get_by_label("Feed address")
        expect(address).to_be_visible()
        url = address.input_value()
        assert url.startswith(live.url + "/calendar/feed/twcal_") and url.endswith(".ics")
        panel.screenshot(path=str(screens / "calendar-feed.png"))
        served = page.request.get(url)
        assert served.status == 200 and served.headers["content-type"].startswith("text/calendar")
        assert [str(z["TZID"]) for z in Calendar.from_ical(served.body()).walk("VTIMEZONE")] == ["America/New_York"]
        page.reload()
        expect(page.locator("#feed-panel")).to_contain_text("You have a feed address, made")
        assert url not in page.content()
        page.locator("#feed-panel").get_by_role("button", name="Revoke the feed address").click()
        expect(page.locator("#feed-panel")).to_contain_text("Feed address revoked")
        assert page.request.get(url).status == 404
    finally:
        live.app.config["TICKWORK_BASE_URL"] = None
