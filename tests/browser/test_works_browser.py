"""The work schedule form in real Chromium: off-plan cadences open up with usage billing, the card saves in
place, Run Now adds a run."""

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_the_schedule_form_offers_off_plan_cadences_only_with_usage_billing_and_saves_in_place(open_as, live, screens):
    client = live.app.test_client()
    created = client.post("/api/v1/works", json={"name": "Weekly <i>digest</i>", "pipeline": "log"},
                          headers=live.world.auth("ops"))
    work_id = created.json["id"]
    page = open_as("ops")
    page.goto(f"/works/{work_id}")
    expect(page.get_by_role("heading", name="Weekly <i>digest</i>")).to_be_visible()
    card = page.locator("#schedule")
    expect(card).to_contain_text("Disabled: this work has no schedule yet.")
    cadence = card.get_by_label("Cadence", exact=True)
    expect(cadence.locator('option[value="hourly"]')).to_be_disabled()
    expect(cadence.locator('option[value="daily"]')).to_be_enabled()
    card.get_by_label("Usage (any cadence, billed per generation)").check()
    # The card comes back from the server with the same choices and every cadence open.
    expect(page.locator('#schedule select[name="cadence"] option[value="hourly"]')).to_be_enabled()
    expect(page.get_by_label("Usage (any cadence, billed per generation)")).to_be_checked()
    page.locator("#schedule").get_by_label("Cadence", exact=True).select_option("hourly")
    page.locator("#schedule").get_by_label("Failures before pausing").fill("4")
    page.locator("#schedule").get_by_role("button", name="Save schedule").click()
    card = page.locator("#schedule")
    expect(card.locator(".message.ok")).to_have_text("Schedule saved.")
    # T0 is 08:00 in New York: an hourly grid laid now runs first at 09:00.
    expect(card).to_contain_text("active Every hour ·")
    expect(card).to_contain_text("Mon 01 Jun 2026, 09:00 EDT")
    expect(card).to_contain_text("0 of 4 failures before pausing")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(screens / "work-schedule.png"))
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#schedule .chip")).to_have_text("paused")
    page.locator("#runs").get_by_role("button", name="Run now").click()
    expect(page.locator("#runs")).to_contain_text("started.")
    expect(page.locator("#runs tbody tr").first).to_contain_text("succeeded")
    assert page.dialogs == []
