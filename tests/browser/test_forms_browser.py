"""The forms a person fills in, in real Chromium, the way a person reaches them: a wait typed as a number
and a unit, a zone picked from the searchable list, a weekly work schedule's day and time."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_a_wait_is_a_number_and_a_unit_and_comes_back_in_words(open_as, live):
    page = open_as("marketer")
    page.get_by_role("link", name="Campaigns").click()
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Name").fill("Forms: two days later")
    page.locator("#step-0-subject").fill("Hello")
    page.locator("#step-0-body").fill("Welcome")
    page.get_by_role("button", name="Add a step").click()
    expect(page.locator("#step-1-wait")).to_be_focused()
    page.locator("#step-1-wait").fill("2")
    page.locator("#step-1-unit").select_option("days")
    page.locator("#step-1-subject").fill("Again")
    page.locator("#step-1-body").fill("Two days on")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("#messages")).to_contain_text("is a draft")
    expect(page.locator("main")).to_contain_text("Step 2 · 2 days later")
    expect(page.locator("#step-1-wait")).to_have_value("2")
    expect(page.locator("#step-1-unit")).to_have_value("days")
    expect(page.locator("main")).not_to_contain_text("P2D")
    assert page.dialogs == []


def test_a_contacts_zone_is_picked_from_the_list_of_zones_with_their_region_and_offset(open_as, live):
    page = open_as("marketer")
    page.get_by_role("link", name="Contacts").click()
    zone = page.get_by_label("Time zone")
    options = page.locator(f"datalist#{zone.get_attribute('list')} option")
    expect(options.filter(has=page.locator("xpath=self::*[@value='Europe/Berlin']"))).to_have_attribute(
        "label", "Europe · UTC+02:00")  # June: summer time
    page.locator("#new-email").fill("forms.zone@example.com")
    page.locator("#new-name").fill("Zone Picker")
    zone.fill("Europe/Berlin")
    page.get_by_role("button", name="Add").click()
    expect(page.get_by_role("heading", name="Zone Picker")).to_be_visible()
    expect(page.locator("main")).to_contain_text("their own zone is Europe/Berlin")
    expect(page.get_by_label("Time zone")).to_have_value("Europe/Berlin")
    assert page.dialogs == []


def test_a_weekly_work_schedule_takes_a_day_and_a_time_and_reads_them_back(open_as, live):
    created = live.app.test_client().post("/api/v1/works", json={"name": "Forms: Friday digest", "pipeline": "log"},
                                          headers=live.world.auth("ops"))
    page = open_as("ops")
    page.get_by_role("link", name="Works").click()
    page.get_by_role("link", name="Forms: Friday digest").click()
    card = page.locator("#schedule")
    card.get_by_label("Cadence", exact=True).select_option("weekly")
    card.get_by_label("Weekday").select_option("friday")
    card.get_by_label("Time", exact=True).fill("17:30")
    card.get_by_role("button", name="Save schedule").click()
    card = page.locator("#schedule")
    expect(card.locator(".message.ok")).to_have_text("Schedule saved.")
    # T0 is Monday 1 June 2026, 08:00 in New York: the first Friday at 17:30 is the 5th.
    expect(card).to_contain_text(re.compile(r"active\s+Every Friday at 17:30 ·\s+next run Fri 05 Jun 2026, 17:30 EDT"))
    page.get_by_role("link", name="All works").click()
    expect(page.locator("table.works tr", has_text="Forms: Friday digest")).to_contain_text("Every Friday at 17:30")
    assert created.status_code == 201 and page.dialogs == []
