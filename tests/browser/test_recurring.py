"""The rule builder in real Chromium: its live preview of the next 10 occurrences, DST notes included."""

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def shot(page, screens, name):
    page.screenshot(path=str(screens / f"{name}.png"), full_page=True)


def test_the_rule_builder_previews_the_next_10_occurrences_as_it_changes(open_as, live, screens):
    page = open_as("marketer")
    page.get_by_role("link", name="Recurring").click()
    page.get_by_role("link", name="New rule").click()
    preview = page.locator("#rule-preview")
    # The default: weekly on tomorrow's weekday (T0 is Monday 1 June), at 09:00 New York time.
    expect(preview).to_contain_text("Every Tuesday at 09:00")
    expect(preview.locator("li")).to_have_count(10)
    page.get_by_label("Repeats").select_option("daily")
    page.get_by_label("First occurrence").fill("2026-10-28")
    page.get_by_label("Time of day").fill("01:30")
    page.get_by_label("Time of day").dispatch_event("change")
    # New York falls back on 1 November: 01:30 happens twice; the rule takes the first, once.
    expect(preview).to_contain_text("Sun 01 Nov 2026, 01:30 EDT")
    expect(preview.locator("li.dst")).to_have_text(
        "Sun 01 Nov 2026, 01:30 EDT = 2026-11-01 05:30 UTC 01:30 happens twice that day (clocks fall back): "
        "the first one", use_inner_text=True)
    expect(preview).to_contain_text("Mon 02 Nov 2026, 01:30 EST")
    shot(page, screens, "recurring-rule-builder")
    page.get_by_label("Repeats").select_option("custom")
    page.get_by_label("RRULE").fill("FREQ=MINUTELY")
    expect(preview.get_by_role("alert")).to_contain_text("finer than hourly")  # typed, not yet saved
    page.get_by_label("RRULE").fill("FREQ=MONTHLY;BYDAY=-1FR")
    expect(preview).to_contain_text("Every month on the last Friday at 01:30")
    page.get_by_label("Target").fill("team@example.test")
    page.get_by_role("button", name="Save rule").click()
    expect(page.locator("#messages")).to_contain_text("is active")
    expect(page.get_by_role("heading", name="Rule #")).to_contain_text("active")
    expect(page.locator("table.occurrences").first).to_contain_text("Fri 30 Oct 2026, 01:30 EDT")
    shot(page, screens, "recurring-rule")
