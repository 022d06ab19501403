"""The rule builder in real Chromium: its live preview of the next 10 occurrences, DST notes included; the action
types of the chosen channel only, and the chosen type's form filled in instead of a JSON payload."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.recurring.tables import RecurringSchedule

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
    page.get_by_label("Channel", exact=True).select_option("main")
    page.get_by_label("Action type").select_option("publish_post")
    page.get_by_label("Target").fill("team@example.test")
    page.get_by_label("Post text").fill("The month's last Friday: open late")
    page.get_by_role("button", name="Save rule").click()
    expect(page.locator("#messages")).to_contain_text("is active")
    expect(page.get_by_role("heading", name="Rule #")).to_contain_text("active")
    expect(page.locator("table.occurrences").first).to_contain_text("Fri 30 Oct 2026, 01:30 EDT")
    shot(page, screens, "recurring-rule")


def _channel(live, name, config):
    with live.app.app_context(), write_session() as session:
        if session.scalar(select(Channel).where(Channel.workspace_id == live.world.workspace_id,
                                                Channel.name == name)) is None:
            session.add(Channel(workspace_id=live.world.workspace_id, name=name, kind="log", config=config,
                                created_at=live.clock.now()))


def _offered(page) -> list[str]:
    return page.locator("#action_type").evaluate("s => [...s.options].filter(o => !o.disabled).map(o => o.value)")


def test_a_person_picks_a_channel_sees_only_its_types_and_fills_the_posts_form_without_json(live, open_as):
    _channel(live, "rf-posts", {"sends": "publish_post"})
    _channel(live, "rf-letters", {"sends": "send_email"})
    page = open_as("marketer")
    page.goto("/recurring/new")
    channel, action_type = page.get_by_label("Channel", exact=True), page.get_by_label("Action type")
    channel.select_option("rf-letters")
    assert _offered(page) == ["send_email"]
    expect(action_type).to_have_value("send_email")
    expect(page.get_by_label("Subject")).to_be_visible()
    expect(page.get_by_label("Post text")).to_be_hidden()
    channel.select_option("main")  # a log channel without a sends setting sends every type
    assert _offered(page) == ["publish_post", "send_email", "send_sms"]
    channel.select_option("rf-posts")
    assert _offered(page) == ["publish_post"]
    expect(action_type).to_have_value("publish_post")
    expect(page.get_by_label("Post text")).to_be_visible()
    expect(page.get_by_label("Media")).to_be_visible()
    for other in ("Subject", "Message"):
        expect(page.get_by_label(other)).to_be_hidden()
    expect(page.locator("details.payload-json")).not_to_have_attribute("open", "")  # the JSON stays folded away
    expect(page.locator("#rule-preview")).to_contain_text("FREQ=WEEKLY")  # the RRULE stays in sight
    page.get_by_label("Target").fill("@bakery")
    page.get_by_label("Post text").fill("Fresh rye today, {{ occurrence.local_date }}")
    page.get_by_role("button", name="Save rule").click()
    expect(page.locator("#messages")).to_contain_text("is active")
    rule_id = int(page.url.rsplit("/", 1)[1])
    with live.app.app_context(), read_session() as session:
        rule = session.get(RecurringSchedule, rule_id)
        channel_name = session.get(Channel, rule.channel_id).name
        assert (rule.action_type, channel_name, rule.target_key) == ("publish_post", "rf-posts", "@bakery")
        assert rule.payload == {"body": "Fresh rye today, {{ occurrence.local_date }}"}
    page.get_by_role("link", name="Edit the rule").click()
    expect(page.get_by_label("Post text")).to_have_value("Fresh rye today, {{ occurrence.local_date }}")
