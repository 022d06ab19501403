"""A phone's width (390 px): the queue, failures and an action's page without sideways scrolling,
and the calendar as an agenda list."""

import pytest
from playwright.sync_api import expect

from tests.web.conftest import claim_and, make_action, make_post

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def assert_no_sideways_scroll(page):
    # A phone widens its layout viewport to fit what overflows, so compare with the device's width.
    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.viewport_size["width"]
    assert width <= viewport, f"{page.url}: the page is {width} px wide on a {viewport} px screen"


def test_the_queue_failures_and_an_action_fit_a_phone_and_the_calendar_is_an_agenda(open_as, live, screens):
    long_target = "a-very-long-recipient-address-that-does-not-break@an-even-longer-domain.example.test"
    queued = make_action(live.app, live.world, minutes=40, target=long_target,
                         payload={"body": "Phone-width check: " + "word " * 40})
    failed = make_action(live.app, live.world, minutes=-6, target="narrow-failed@example.test")
    claim_and(live.app, failed, "failed", message="mailbox unavailable (550): " + "x" * 120)
    post = make_post(live.app, live.world, body="On the agenda at nine", day="2026-06-19", at="09:00")
    page = open_as("admin", viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto("/queue")
    expect(page.locator(f"#action-{queued}")).to_be_visible()
    assert_no_sideways_scroll(page)
    page.screenshot(path=str(screens / "narrow-queue.png"), full_page=True)
    page.goto("/failures")
    expect(page.locator(f"#action-{failed}")).to_contain_text("mailbox unavailable")
    assert_no_sideways_scroll(page)
    page.screenshot(path=str(screens / "narrow-failures.png"), full_page=True)
    page.goto(f"/actions/{failed}")
    assert_no_sideways_scroll(page)
    page.screenshot(path=str(screens / "narrow-action.png"), full_page=True)
    page.goto(f"/actions/{queued}")
    page.get_by_role("button", name=f"Reschedule #{queued}").click()
    expect(page.get_by_label("New date")).to_be_visible()
    assert_no_sideways_scroll(page)
    for url in ("/calendar", "/calendar?view=week&date=2026-06-15", "/queue/bulk-reschedule?shift=%2B1h",
                f"/posts/{post}", "/health"):
        page.goto(url)
        assert_no_sideways_scroll(page)
    page.goto("/calendar")
    expect(page.locator("table.calendar")).to_be_hidden()
    agenda = page.get_by_role("region", name="Agenda")
    expect(agenda).to_be_visible()
    expect(agenda.get_by_role("heading", name="Friday 19 June")).to_be_visible()
    expect(agenda).to_contain_text("On the agenda at nine")
    page.screenshot(path=str(screens / "narrow-calendar-agenda.png"), full_page=True)
    # Moving a post from the agenda: its Move to… control, as on a wide screen.
    agenda.get_by_role("link", name=f"Move to… post #{post}").click()
    page.get_by_label("New date").fill("2026-06-26")
    page.get_by_role("button", name=f"Move post #{post}").click()
    expect(page.locator("#calendar-notice")).to_contain_text("1 target moved to Fri 26 Jun 2026, 09:00 EDT.")
    expect(agenda.get_by_role("heading", name="Friday 26 June")).to_be_visible()
    assert_no_sideways_scroll(page)
