"""Drip campaigns in real Chromium: write one, preview a step through htmx, activate it, enroll a contact,
and read the funnel and the enrollment's timeline; nothing a marketer types runs as script."""

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PAYLOAD = '<img src="x" onerror="window.__pwned = 1">'


def test_write_preview_activate_and_enroll_a_drip_campaign(open_as, live, screens):
    live.app.config["TICKWORK_BASE_URL"] = "https://tickwork.example"
    try:
        page = open_as("marketer")
        page.get_by_role("link", name="Campaigns").click()
        page.get_by_role("link", name="New campaign").click()
        page.get_by_label("Name").fill("Browser welcome")
        page.locator("#step-0-subject").fill("Welcome, {{ contact.first_name }}")
        page.locator("#step-0-body").fill("Fresh bread for {{ contact.name }} " + PAYLOAD)
        page.locator("#step-0").get_by_role("button", name="Preview").click()
        expect(page.locator("#preview-0")).to_contain_text("Welcome, Ada")
        expect(page.locator("#preview-0")).to_contain_text("Fresh bread for Ada Lovelace <img")
        page.get_by_role("button", name="Add a step").click()
        page.locator("#step-1-body").fill("Your code: {{ attributes.coupon }}")
        page.locator("#step-1-subject").fill("A gift")
        page.locator("#step-1").get_by_role("button", name="Preview").click()
        expect(page.locator("#preview-1")).to_contain_text("template: missing attribute 'coupon'")
        page.get_by_role("button", name="Save as draft").click()
        expect(page.locator("#messages")).to_contain_text("is a draft")
        page.get_by_role("button", name="Activate").click()
        expect(page.locator("#messages")).to_contain_text("Active.")
        page.get_by_role("link", name="Contacts").click()
        page.locator("#new-email").fill("bread.lover@example.com")
        page.locator("#new-name").fill("Bread Lover")
        page.get_by_role("button", name="Add").click()
        expect(page.get_by_role("heading", name="Bread Lover")).to_be_visible()
        page.get_by_role("link", name="Campaigns").click()
        page.get_by_role("link", name="Browser welcome").click()
        page.get_by_label("Contact").fill("bread.lover@example.com")
        page.get_by_role("button", name="Enroll", exact=True).click()
        expect(page.locator("#messages")).to_contain_text("Enrolled as #")
        expect(page.locator("table.funnel tbody tr").first).to_contain_text("1")
        page.screenshot(path=str(screens / "campaign.png"), full_page=True)
        page.locator("table").last.get_by_role("link").first.click()
        expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
        expect(page.locator("ol.timeline")).to_contain_text("enroll: new → active")
        # 08:00 in New York, before the editor's default window (09:00–20:00) opens: the step waits for it.
        expect(page.locator("dl.facts")).to_contain_text("held until the send window opens at 09:00")
        page.screenshot(path=str(screens / "enrollment.png"), full_page=True)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.dialogs == []
    finally:
        live.app.config["TICKWORK_BASE_URL"] = None
