"""The campaign editor in real Chromium, as a person fills it in: three steps added before saving, one moved up
with the keyboard, one removed, each keeping what was typed in the others; saved once, the stored steps are in
the order on the page with the waits typed."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

pytestmark = pytest.mark.browser


def _stored(live, name: str) -> list[tuple[str, str, str]]:
    from models.core.database import read_session
    from models.drips.reading import current_version, version_steps
    from models.drips.tables import Campaign

    with live.app.app_context(), read_session() as session:
        campaign = session.scalar(select(Campaign).where(Campaign.name == name))
        return [(step.delay, step.subject, step.body)
                for step in version_steps(session, current_version(session, campaign.id).id)]


def _campaign_named(live, name: str):
    from models.core.database import read_session
    from models.drips.tables import Campaign

    with live.app.app_context(), read_session() as session:
        return session.scalar(select(Campaign.id).where(Campaign.name == name))


def _fill(page, index: int, wait: str, unit: str, subject: str, body: str) -> None:
    page.locator(f"#step-{index}-wait").fill(wait)
    page.locator(f"#step-{index}-unit").select_option(unit)
    page.locator(f"#step-{index}-subject").fill(subject)
    page.locator(f"#step-{index}-body").fill(body)


def test_a_person_adds_three_steps_reorders_one_removes_one_and_saves_them_in_order(open_as, live, screens):
    page = open_as("marketer")
    page.get_by_role("link", name="Campaigns").click()
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Name").fill("Three steps")
    page.evaluate("window.__samePage = true")  # gone if a button reloaded the page instead of swapping the steps
    _fill(page, 0, "0", "minutes", "Welcome", "Hello {{ contact.first_name }}")
    for index, (wait, unit, subject, body) in enumerate([("2", "days", "Day two", "A tip"),
                                                         ("3", "hours", "Soon", "A reminder"),
                                                         ("1", "weeks", "A week on", "A last word")], start=1):
        page.get_by_role("button", name="Add a step").click()
        expect(page.locator(f"#step-{index}-wait")).to_be_focused()  # the keyboard lands in the new step
        _fill(page, index, wait, unit, subject, body)
    expect(page.locator("fieldset.step")).to_have_count(4)

    # The third step ("Soon") goes up with the keyboard: Tab to its button, Enter; the focus stays on it.
    page.locator("#step-2-up").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#steps-said")).to_contain_text("Step 3 moved up: it is step 2 now")
    expect(page.locator("#step-1-up")).to_be_focused()
    expect(page.locator("#step-1-subject")).to_have_value("Soon")
    expect(page.locator("#step-1-unit")).to_have_value("hours")
    expect(page.locator("#step-2-subject")).to_have_value("Day two")
    expect(page.locator("#step-0-body")).to_have_value("Hello {{ contact.first_name }}")

    page.get_by_role("button", name="Remove step 4").click()
    expect(page.locator("#steps-said")).to_contain_text("Step 4 removed")
    expect(page.locator("fieldset.step")).to_have_count(3)
    expect(page.get_by_label("Name")).to_have_value("Three steps")
    assert _campaign_named(live, "Three steps") is None  # nothing is stored before Save
    assert page.evaluate("window.__samePage") is True

    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("#messages")).to_contain_text("Saved: campaign Three steps is a draft.")
    assert _stored(live, "Three steps") == [("PT0S", "Welcome", "Hello {{ contact.first_name }}"),
                                            ("PT3H", "Soon", "A reminder"), ("P2D", "Day two", "A tip")]
    expect(page.locator("table.funnel tbody tr").nth(1)).to_contain_text("Step 2 · 3 hours later")
    page.screenshot(path=str(screens / "campaign-steps.png"), full_page=True)
    assert page.dialogs == []


def test_a_refused_save_keeps_every_step_and_points_at_the_one_it_concerns(open_as, live):
    page = open_as("marketer")
    page.goto(live.url + "/campaigns/new")
    page.get_by_label("Name").fill("Refused steps")
    _fill(page, 0, "0", "minutes", "Hi", "Hello")
    page.get_by_role("button", name="Add a step").click()
    _fill(page, 1, "2", "days", "Oops", "Hi {{ contact.nonexistent }}")
    page.locator("#step-1-subject").press("Enter")  # Enter in a field saves; it never presses a step's button
    expect(page.locator("#step-1-error")).to_contain_text("Step 2's body refers to 'contact.nonexistent'")
    expect(page.locator("#step-1-body")).to_be_focused()
    expect(page.locator("#step-0-body")).to_have_value("Hello")
    expect(page.locator("#step-1-wait")).to_have_value("2")
    assert _campaign_named(live, "Refused steps") is None


def test_a_steps_template_fields_follow_the_channel_chosen_for_it(open_as, live):
    from models.channels.tables import Channel
    from models.core.database import write_session

    with live.app.app_context(), write_session() as session:
        sms = Channel(workspace_id=live.world.workspace_id, name="sms-steps", kind="log", config={"address": "phone"},
                      created_at=live.clock.now())
        session.add(sms)
    try:
        page = open_as("marketer")
        page.goto(live.url + "/campaigns/new")
        _fill(page, 0, "0", "minutes", "Hi", "Hello")
        page.get_by_role("button", name="Add a step").click()
        _fill(page, 1, "2", "days", "Kept", "By text")
        page.locator("#step-1-channel").select_option("sms-steps")
        expect(page.locator("#step-1 label[for=step-1-body]")).to_contain_text("Text message")
        expect(page.locator("#step-1-subject")).to_have_count(0)
        expect(page.locator("#step-1-channel")).to_be_focused()
        expect(page.locator("#step-1-body")).to_have_value("By text")
        expect(page.locator("#step-0-subject")).to_have_value("Hi")
        page.locator("#step-1-channel").select_option("")
        expect(page.locator("#step-1-subject")).to_have_value("Kept")  # back with the email channel
    finally:
        with live.app.app_context(), write_session() as session:
            session.delete(session.get(Channel, sms.id))
