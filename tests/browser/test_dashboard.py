"""The dashboard in real Chromium: sign in, compose, calendar, queue, reschedule, retry, escaping, health."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from jobs.periodic import CLOCK_JOBS
from models.clock.tables import ClockRun
from models.core.database import write_session
from tests.rollup_history import hour_of, job, rollup, seed, tick_run
from tests.web.conftest import claim_and, make_action

pytestmark = pytest.mark.browser

PAYLOAD = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2; alert(1)">'


def shot(page, screens, name):
    page.screenshot(path=str(screens / f"{name}.png"))


def assert_nothing_ran(page):
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.dialogs == []


def test_compose_approve_and_find_it_on_its_local_day(open_as, live, screens):
    page = open_as("marketer")
    expect(page).to_have_url(f"{live.url}/calendar")
    shot(page, screens, "calendar-month-empty")
    page.get_by_label("New post on 10 June 2026").click()
    expect(page.get_by_role("heading", name="New post")).to_be_visible()
    page.get_by_label("Post").fill("Summer menu goes live at midnight")
    page.get_by_role("checkbox", name="main").check()
    expect(page.get_by_label("Date")).to_have_value("2026-06-10")
    page.get_by_label("Time").fill("23:30")
    page.get_by_label("Time").dispatch_event("change")
    # 23:30 in New York is 03:30 the next day in UTC; the composer says so before saving.
    expect(page.locator("#time-preview")).to_contain_text("2026-06-11 03:30 UTC")
    shot(page, screens, "composer")
    page.get_by_role("button", name="Save and approve").click()
    expect(page.locator("#messages")).to_contain_text("is approved")
    page.get_by_role("link", name="Calendar").click()
    day = page.locator('td[data-date="2026-06-10"]')
    chip = day.locator("a.chip-link", has_text="Summer menu")  # the day may hold other tests' rows too
    expect(chip).to_contain_text("23:30")
    expect(chip).to_have_class(re.compile(r"\bstatus-queued\b"))
    expect(page.locator('td[data-date="2026-06-11"]')).not_to_contain_text("Summer menu")
    expect(page.locator("td.today")).to_have_attribute("data-date", "2026-06-01")
    shot(page, screens, "calendar-month")
    page.get_by_role("link", name="Week").click()
    # The month grid holds the same dates: wait for the week's own URL before paging on.
    expect(page).to_have_url(re.compile(r"view=week"))
    expect(page.locator('td[data-date="2026-06-01"]')).to_be_visible()
    page.get_by_role("link", name="Next →").click()
    expect(page).to_have_url(re.compile(r"view=week&date=2026-06-08"))
    # The week is laid out by hour: 23:30 sits in the 23:00 slot of its local day.
    slot = page.locator('td.slot[data-slot-date="2026-06-10"][data-drop-time="23:00"]')
    expect(slot).to_contain_text("Summer menu")
    shot(page, screens, "calendar-week")
    # The chip opens the action's detail, which links back to the post.
    slot.locator("a.chip-link").first.click()
    expect(page.get_by_role("link", name="open the post")).to_be_visible()


def test_cancel_from_the_queue_rerenders_the_row(open_as, live, screens):
    action_id = make_action(live.app, live.world, minutes=90, target="cancel-me@example.test")
    page = open_as("ops")
    page.goto("/queue")
    row = page.locator(f"#action-{action_id}")
    expect(row.locator(".chip")).to_have_text("queued")
    shot(page, screens, "queue")
    # Each row's buttons are named after their row, so a screen reader tells one Cancel from another.
    row.get_by_role("button", name=f"Cancel #{action_id}, send_email to cancel-me@example.test", exact=True).click()
    # Cancelling is for good: the first press asks, in place, and only a second one cancels.
    expect(row.locator(".confirm-note")).to_contain_text("for good? Press again to confirm.")
    expect(row.locator(".chip")).to_have_text("queued")
    row.get_by_role("button", name=f"Yes, cancel: Cancel #{action_id}, send_email to cancel-me@example.test",
                    exact=True).click()
    expect(row.locator(".chip")).to_have_text("cancelled")
    expect(row).to_contain_text("Cancelled.")
    expect(row.get_by_role("button", name=f"Cancel #{action_id}", exact=False)).to_have_count(0)


def test_reschedule_shows_both_rows_with_lineage(open_as, live, screens):
    action_id = make_action(live.app, live.world, minutes=120, target="move-me@example.test")
    page = open_as("ops")
    page.goto("/queue?q=move-me")
    row = page.locator(f"#action-{action_id}")
    row.get_by_role("button", name=f"Reschedule #{action_id}").click()
    row.get_by_label("New date").fill("2026-06-20")
    row.get_by_label("Time (America/New_York)").fill("09:15")
    row.get_by_role("button", name="Move").click()
    expect(row.locator(".chip")).to_have_text("cancelled")
    expect(row).to_contain_text("Moved to Sat 20 Jun 09:15 EDT")
    new_row = page.locator(f"#action-{action_id} + tr")
    expect(new_row.locator(".chip")).to_have_text("queued")
    expect(new_row).to_contain_text(f"Rescheduled from #{action_id}")
    shot(page, screens, "queue-rescheduled")
    new_row.get_by_role("link", name=f"#{action_id}").click()
    expect(page.get_by_role("heading", name=f"Action #{action_id}")).to_be_visible()
    expect(page.locator("dl.facts")).to_contain_text("Rescheduled to #")
    shot(page, screens, "action-detail")


def test_retry_is_the_admins_and_hidden_from_a_marketer(open_as, live, screens):
    """Retry is not offered to roles that may not retry (the server refuses them anyway: tests/web)."""
    action_id = make_action(live.app, live.world, minutes=-2, target="retry-me@example.test")
    claim_and(live.app, action_id, "failed", message="mailbox unavailable (550)")
    marketer = open_as("marketer")
    marketer.goto("/failures?q=retry-me")
    row = marketer.locator(f"#action-{action_id}")
    expect(row).to_contain_text("Refused for good: mailbox unavailable (550)")
    expect(row.get_by_role("button", name=f"Retry #{action_id}")).to_have_count(0)
    admin = open_as("admin")
    admin.goto("/failures?q=retry-me")
    shot(admin, screens, "failures")
    row = admin.locator(f"#action-{action_id}")
    row.get_by_role("button", name=f"Retry #{action_id}, send_email to retry-me@example.test", exact=True).click()
    row.get_by_role("button", name=f"Yes, retry: Retry #{action_id}, send_email to retry-me@example.test",
                    exact=True).click()
    expect(row.locator(".chip")).to_have_text("queued")
    expect(row).to_contain_text("Retried")


def test_typed_markup_executes_nowhere(open_as, live, screens):
    sent = make_action(live.app, live.world, minutes=-3, target="xss@example.test", payload={"body": PAYLOAD},
                       action_type="publish_post")
    claim_and(live.app, sent, "failed", message=f"provider said: {PAYLOAD}")
    queued = make_action(live.app, live.world, minutes=30, target="xss@example.test", payload={"body": PAYLOAD})
    page = open_as("admin")
    page.goto("/posts/new?date=2026-06-12")
    page.get_by_label("Post").fill(PAYLOAD)
    page.get_by_role("checkbox", name="main").check()
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("#body")).to_have_value(PAYLOAD)
    for url in ("/calendar", "/queue?q=xss", "/failures?q=xss", f"/actions/{sent}", f"/actions/{queued}",
                "/calendar?view=week&date=2026-06-12"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        assert_nothing_ran(page)
    expect(page.locator('td.slot[data-slot-date="2026-06-12"][data-drop-time="09:00"]')).to_contain_text("<script>")
    page.goto(f"/actions/{sent}")
    expect(page.locator("pre.payload")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.locator("dl.facts")).to_contain_text('onerror="window.__pwned = 2')
    row = page.locator(f"#action-{sent}")
    row.get_by_role("button", name="Retry").click()  # an htmx swap carrying the same text
    row.get_by_role("button", name="Yes, retry").click()
    expect(row.locator(".chip")).to_have_text("queued")
    assert_nothing_ran(page)


def test_health_warns_when_the_tick_is_stale(open_as, live, screens):
    page = open_as("ops")
    with live.app.app_context(), write_session() as session:
        session.add(ClockRun(kind="tick", started_at=live.clock.now() - timedelta(minutes=7),
                             finished_at=live.clock.now() - timedelta(minutes=7), summary={"due": 3, "dispatched": 3}))
    page.goto("/health")
    expect(page.get_by_role("alert")).to_contain_text("The tick has not run for 3 minutes")
    shot(page, screens, "health-stale")
    with live.app.app_context(), write_session() as session:
        session.add(ClockRun(kind="tick", started_at=live.clock.now() - timedelta(seconds=20),
                             finished_at=live.clock.now() - timedelta(seconds=19), summary={"due": 0, "dispatched": 0}))
    page.reload()
    expect(page.locator(".banner.ok")).to_contain_text("The tick ran 20 s ago")
    shot(page, screens, "health")


def test_health_draws_a_day_and_a_week_of_trends_with_their_numbers(open_as, live, screens):
    """A week as the tick leaves it, a run a minute carrying its minute's rollup and, hourly, the hour's:
    quiet nights, a 09:00 burst each morning, a late spike, a reconciler error, 25 minutes with no consumer."""
    now = live.clock.now()
    runs = []
    for hours_ago in range(7 * 24, 0, -1):
        hour = now.replace(minute=0) - timedelta(hours=hours_ago)
        local_hour = (hour.hour - 4) % 24  # New York in June
        busy = 300 if local_hour == 9 else 40 if 8 <= local_hour <= 18 else 4
        spike = hours_ago == 30
        minutes = []
        for m in range(60):
            if hours_ago == 75 and 10 <= m < 35:
                continue  # no consumer ran: no tick, no reconcile, no rollup
            at = hour + timedelta(minutes=m)
            sent = busy // 60 + (m == 0) * busy % 60
            minutes.append(rollup(at, claims=sent, p50=0.3 + 0.2 * (local_hour == 9),
                                  p95=(42.0 if spike else 0.9 + 0.6 * (local_hour == 9)),
                                  latest=(95.0 if spike else 2.1), published=sent,
                                  failed=1 if m == 7 and local_hour in (10, 15) else 0,
                                  missed=3 if spike and m == 1 else 0,
                                  backlog=(120 if spike and m < 5 else busy // 30 if m == 0 else 0),
                                  jobs={"tick": job(at), "reconcile": job(at, errors=int(hours_ago == 50 and m == 3))}))
            runs.append(tick_run(at + timedelta(minutes=2), [minutes[-1]],
                                 hours=[hour_of(minutes)] if m == 59 else []))
    seed(live.app, runs)
    page = open_as("ops")
    page.goto("/health")
    day = page.get_by_role("region", name="Last 24 hours")
    expect(day.get_by_role("img", name="Firing lateness")).to_be_visible()
    expect(day.get_by_role("img", name="Lag of reconcile")).to_be_visible()
    expect(page.get_by_role("region", name="Last 7 days").get_by_role("img", name="Throughput")).to_be_visible()
    assert page.locator("figure.chart").count() == 2 * (3 + len(CLOCK_JOBS))  # and each clock job's lag
    numbers = day.locator("figure.chart").first.locator("details")
    numbers.locator("summary").click()
    expect(numbers.get_by_role("table")).to_contain_text("p95 (worst minute)")
    numbers.locator("summary").click()
    assert page.evaluate("document.querySelectorAll('svg script, svg [onload]').length") == 0
    day.screenshot(path=str(screens / "health-trends.png"))
    page.get_by_role("region", name="Last 7 days").screenshot(path=str(screens / "health-week.png"))


def test_the_outbox_shows_what_the_log_channel_sent(open_as, live, screens):
    from jobs.clock import tick_once

    for n, (target, body) in enumerate([("ada@example.test", "Your order is ready"),
                                        ("grace@example.test", "Fresh bread at nine"),
                                        ("+15555550123", "Pickup reminder: today 17:00")]):
        make_action(live.app, live.world, target=target, payload={"subject": "Hello", "body": body},
                    publish_at=live.clock.now() - timedelta(seconds=10 * (3 - n)))
    with live.app.app_context():
        tick_once()
    page = open_as("marketer")
    page.get_by_role("link", name="Outbox").click()
    rows = page.locator("table.outbox tbody tr")
    expect(rows.first).to_contain_text("+15555550123")
    expect(rows.first.locator("pre")).to_contain_text("Pickup reminder")
    shot(page, screens, "outbox")


def test_channels_page(open_as, screens):
    page = open_as("admin")
    page.goto("/channels")
    page.get_by_role("row", name="main").get_by_role("button", name="Send test").click()
    expect(page.locator(".message.ok")).to_contain_text("Sent")
    shot(page, screens, "channels")
    page.get_by_role("link", name="Members").click()
    expect(page.get_by_role("combobox", name="Role of admin@acme.test")).to_have_value("admin")
    shot(page, screens, "members")


def test_error_answers_land_in_the_message_area_not_the_row(open_as, live):
    action_id = make_action(live.app, live.world, minutes=45, target="errors@example.test")
    page = open_as("ops")
    page.goto("/queue?q=errors")
    row = page.locator(f"#action-{action_id}")
    # A stale token: the 400 is retargeted to #messages; the row stays as it was.
    page.evaluate("""document.body.setAttribute('hx-headers:inherited', '{"X-CSRFToken": "stale"}')""")
    row.get_by_role("button", name="Cancel").click()
    row.get_by_role("button", name="Yes, cancel").click()
    expect(page.locator("#messages")).to_contain_text("This form has expired")
    expect(row.locator(".chip")).to_have_text("queued")
    expect(page.locator("table.actions")).to_have_count(1)
    # A session that ended: htmx is sent to the sign-in page whole.
    page.context.clear_cookies()
    row.get_by_role("button", name="Reschedule").click()
    expect(page).to_have_url(re.compile(r"/login\?next="))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
