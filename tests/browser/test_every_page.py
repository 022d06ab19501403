"""One shared Chromium walking every HTML page of the navigation, and one detail page of each kind,
at a phone's width and at the two laptop widths people use most (390, 1280 and 1366 px): no page
scrolls sideways, and axe-core finds no WCAG 2.1 A or AA violation at 1280 px. Then the row
widget's keyboard focus: Enter on Cancel leaves the focus on the row that replaced it."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session
from tests.browser.test_accessibility import RUN, WCAG, with_axe
from tests.web.conftest import claim_and, make_action, make_post
from tests.web.test_alert_pages import raise_alert

pytestmark = pytest.mark.browser

WIDTHS = (390, 1280, 1366)


@pytest.fixture(scope="module")
def every_kind(live):
    """One of each thing a detail page shows: a post, a row, a rule, a campaign, a contact, an enrollment, a work,
    an alert, a channel."""
    from tests.integration.drip_helpers import campaign, contacts, enroll, enrollments
    from tests.integration.recurring_helpers import make_rule
    from tests.integration.works_helpers import create_work

    app, world = live.app, live.world
    client = app.test_client()
    long_target = "a-very-long-recipient-address-that-does-not-break@an-even-longer-domain.example.test"
    queued = make_action(app, world, minutes=30, target=long_target, payload={"body": "Width check " + "word " * 30})
    failed = make_action(app, world, minutes=-4, target="every-page-failed@example.test")
    claim_and(app, failed, "failed", message="mailbox unavailable (550): " + "x" * 100)
    post = make_post(app, world, body="Every page walks past this post", day="2026-06-18", at="10:00")
    rule = make_rule(client, world)["id"]
    campaign_id = campaign(app, world.workspace_id, name="Every page")
    [person] = contacts(app, world.workspace_id, 1, prefix="walker")
    enroll(app, world.workspace_id, campaign_id, [person])
    enrollment = enrollments(app, campaign_id)[0].id
    work = create_work(client, world, name="Every page digest")
    alert = raise_alert(app, world)
    with app.app_context(), read_session() as session:
        channel = session.scalar(select(Channel.id).where(Channel.workspace_id == world.workspace_id)
                                 .order_by(Channel.id))
    return type("Kinds", (), dict(queued=queued, failed=failed, post=post, rule=rule, campaign=campaign_id,
                                  contact=person, enrollment=enrollment, work=work, alert=alert, channel=channel))


def pages(k) -> list[str]:
    # Every link of the navigation bar (test_the_walk_covers_every_link_of_the_navigation holds this list to it).
    navigation = ["/calendar", "/calendar?date=2026-07-15", "/calendar?view=week&date=2026-06-15", "/posts/new",
                  "/posts", "/media", "/recurring", "/campaigns", "/contacts", "/queue", "/failures", "/works",
                  "/outbox", "/history", "/alerts", "/health", "/posting-times", "/channels", "/members", "/settings",
                  "/notifications", "/account", "/actions"]
    details = [f"/posts/{k.post}", f"/actions/{k.queued}", f"/actions/{k.failed}", f"/recurring/{k.rule}",
               "/recurring/new", f"/campaigns/{k.campaign}", "/campaigns/new", f"/contacts/{k.contact}",
               f"/enrollments/{k.enrollment}", f"/works/{k.work}", "/works/plugins", "/works/usage",
               f"/alerts/{k.alert}", f"/channels/{k.channel}"]
    return navigation + details


def test_no_page_scrolls_sideways_at_390_1280_or_1366_px_and_axe_finds_nothing_at_1280(
        chromium, live, every_kind, axe_source, open_as):
    page = with_axe(open_as("admin", bypass_csp=True), axe_source)
    wide, violations = [], []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for url in pages(every_kind):
            page.goto(url, wait_until="load")
            scroll = page.evaluate("document.documentElement.scrollWidth")
            if scroll > width:
                wide.append(f"{url} is {scroll} px wide at {width} px")
            if width == 1280:
                violations += [f"{url}: {v['id']} {v['help']} {v['nodes']}" for v in page.evaluate(RUN)
                               if WCAG & set(v["tags"])]
    assert wide + violations == [], "\n".join(wide + violations)


def test_the_walk_covers_every_link_of_the_navigation(live, every_kind, open_as):
    page = open_as("admin")
    page.goto("/calendar")
    links = page.eval_on_selector_all("header a[href^='/']", "els => els.map(e => e.getAttribute('href'))")
    walked = {url.split("?")[0] for url in pages(every_kind)}
    assert {link.split("?")[0] for link in links} - {"/"} <= walked


def test_focus_after_cancel_stays_on_the_replaced_row(live, open_as):
    row = make_action(live.app, live.world, minutes=90, target="focus-after-cancel@example.test")
    page = open_as("ops")
    page.goto("/queue?q=focus-after-cancel")
    cancel = page.locator(f"#action-{row} button", has_text="Cancel")
    cancel.focus()
    page.keyboard.press("Enter")  # asks, in place
    expect(page.locator(f"#action-{row} .confirm-note")).to_be_visible()
    page.keyboard.press("Enter")  # and cancels
    expect(page.locator(f"#action-{row}")).to_contain_text("cancelled")
    focused = page.evaluate("document.activeElement && (document.activeElement.closest('[id^=action-]') || {}).id")
    assert focused == f"action-{row}", page.evaluate("document.activeElement.outerHTML.slice(0, 200)")
