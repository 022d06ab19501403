"""Recurring rules and the workspace's settings on the dashboard, through the Flask test client.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

import re
from datetime import datetime, timezone

from sqlalchemy import func, select

from models.accounts.tables import Workspace
from models.core.database import read_session
from models.recurring.tables import RecurringSchedule
from tests.integration.recurring_helpers import expand, make_rule, queued, rule_rows
from tests.web.conftest import claim_and

UTC = timezone.utc
RANK = {"marketer": 0, "ops": 1, "admin": 2}
WEEKLY = {"repeat": "weekly", "interval": "1", "weekdays": ["TU", "TH"], "start_date": "2026-06-02",
          "start_time": "09:00", "ends": "never", "action_type": "send_email", "channel": "main",
          "target_key": "team@example.test", "send_email-subject": "Standup {{ occurrence.local_date }}",
          "send_email-body": "What happened, what is next.", "payload": "",
          "misfire": "skip", "month_day": "1", "ordinal": "-1", "weekday": "FR", "rrule": "", "exdates": ""}


def text(answer) -> str:
    return answer.get_data(as_text=True)


def _rules(app) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(RecurringSchedule))


def test_every_recurring_page_and_fragment_for_every_role(client, app, world, browser_for):
    rule = make_rule(client, world)["id"]
    pages = [
        ("/recurring", "marketer", 200, 200),
        ("/recurring/new", "marketer", 200, 200),
        (f"/recurring/{rule}", "marketer", 200, 200),
        (f"/recurring/{rule}?edit=1", "marketer", 200, 200),
        ("/recurring/preview?repeat=daily&start_date=2026-06-02&start_time=09:00", "marketer", 302, 200),
        ("/settings", "admin", 200, 200),
    ]
    for role in RANK:
        browser = browser_for(role)
        for url, least, plain, htmx in pages:
            allowed = RANK[role] >= RANK[least]
            for as_htmx in (False, True):
                answer = browser.get(url, htmx=as_htmx)
                expected = (htmx if as_htmx else plain) if allowed else 403
                assert answer.status_code == expected, (role, url, as_htmx, text(answer)[:300])
                if answer.status_code == 200:
                    assert ("<html" in text(answer)) is not as_htmx, (role, url, as_htmx)
    signed_out = browser_for(None)
    for url, *_ in pages:
        assert signed_out.get(url).status_code == 302
        assert signed_out.get(url, htmx=True).status_code == 401


def test_the_builder_makes_a_weekly_rule_without_an_rrule_and_its_page_links_each_row(app, world, browser_for):
    marketer = browser_for("marketer")
    saved = marketer.post("/recurring", WEEKLY)
    assert saved.status_code == 303, text(saved)[:800]
    page = marketer.get(saved.headers["Location"])
    body = text(page)
    assert "Every Tuesday and Thursday at 09:00" in body and "FREQ=WEEKLY;BYDAY=TU,TH" in body
    assert "4 occurrence(s) queued" in body  # 2, 4, 9 and 11 June
    rule = int(saved.headers["Location"].rsplit("/", 1)[1])
    for row in queued(app, rule):
        assert f'href="/actions/{row.id}"' in body
    assert body.count("status-planned") >= 6  # the next 10, beyond the window, not yet rows
    listing = text(marketer.get("/recurring"))
    assert f"#{rule} every Tuesday and Thursday at 09:00" in listing and "Tue 02 Jun 2026, 09:00 EDT" in listing


def test_the_builder_refuses_bad_input_in_place_and_keeps_what_was_typed(app, world, browser_for):
    marketer = browser_for("marketer")
    cases = [
        ({"repeat": "custom", "rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, "rrule", "no occurrence"),
        ({"repeat": "weekly", "weekdays": []}, "weekdays", "at least one day"),
        ({"payload": "{not json"}, "payload", "must be JSON"),
        ({"payload": '{"a": "{{ occurrence.nope }}"}'}, "payload", "is not filled in"),
        ({"start_date": "30/02/2026"}, "start_date", "start_date must be a date"),
        ({"ends": "on", "end_date": "2026-05-01"}, "end_date", "before starts_local"),
        ({"repeat": "monthly_day", "month_day": "32"}, "month_day", "1 to 31"),
        ({"channel": "nope"}, "channel", "no channel named"),
        ({"repeat": "sometimes"}, "repeat", "choose how often"),
    ]
    for change, field, words in cases:
        answer = marketer.post("/recurring", {**WEEKLY, **change})
        body = text(answer)
        assert answer.status_code == 422, (change, body[:500])
        assert words in body, (change, re.findall(r'role="alert">([^<]*)', body))
        assert re.search(rf'(id="{field}"|data-for="weekly")[^>]*aria-invalid="true"', body), (change, field)
        assert "team@example.test" in body  # what was typed is kept
    assert _rules(app) == 0


def test_the_live_preview_shows_the_next_10_with_dst_notes_and_refusals_in_place(world, browser_for):
    marketer = browser_for("marketer")
    fall = marketer.get("/recurring/preview", htmx=True, query_string={
        "repeat": "daily", "start_date": "2026-10-28", "start_time": "01:30", "ends": "never"})
    body = text(fall)
    assert body.count("<li") == 10 and "Every day at 01:30" in body
    assert "Sun 01 Nov 2026, 01:30 EDT" in body and "01:30 happens twice that day" in body
    spring = text(marketer.get("/recurring/preview", htmx=True, query_string={
        "repeat": "custom", "rrule": "FREQ=YEARLY;BYMONTH=3;BYDAY=2SU", "start_date": "2027-01-01",
        "start_time": "02:30"}))
    assert "Sun 14 Mar 2027, 03:30 EDT" in spring and "02:30 does not exist that day" in spring
    short_months = text(marketer.get("/recurring/preview", htmx=True, query_string={
        "repeat": "monthly_day", "month_day": "31", "start_date": "2026-06-01", "start_time": "09:00"}))
    assert "Months without a day 31 are skipped" in short_months and "Fri 31 Jul 2026" in short_months
    last_friday = text(marketer.get("/recurring/preview", htmx=True, query_string={
        "repeat": "monthly_weekday", "ordinal": "-1", "weekday": "FR", "start_date": "2026-06-01",
        "start_time": "17:30"}))
    assert "Fri 26 Jun 2026, 17:30 EDT" in last_friday and "the last Friday" in last_friday
    refused = marketer.get("/recurring/preview", htmx=True, query_string={
        "repeat": "custom", "rrule": "FREQ=MINUTELY", "start_date": "2026-06-01", "start_time": "09:00"})
    assert refused.status_code == 200 and "finer than hourly" in text(refused) and 'role="alert"' in text(refused)


def test_pause_with_a_note_resume_run_now_and_end_from_the_rules_page(client, app, world, browser_for, clock):
    rule = make_rule(client, world)["id"]
    marketer = browser_for("marketer")
    paused = marketer.post(f"/recurring/{rule}/pause", {"note": "office closed"})
    assert paused.status_code == 303
    page = text(marketer.get(f"/recurring/{rule}"))
    assert "Paused: 14 queued occurrence(s) cancelled." in page and "office closed" in page
    assert "Resume" in page and "Ending a rule for good is for ops" in page
    assert marketer.post(f"/recurring/{rule}/resume").status_code == 303
    assert len(queued(app, rule)) == 14
    ran = marketer.post(f"/recurring/{rule}/run")
    assert ran.status_code == 303 and "Running now as #" in text(marketer.get(f"/recurring/{rule}"))
    refused = marketer.post(f"/recurring/{rule}/end")
    assert refused.status_code == 403 and "You need the ops role" in text(refused)
    ops = browser_for("ops")
    assert ops.post(f"/recurring/{rule}/end", {"note": "done"}).status_code == 303
    page = text(ops.get(f"/recurring/{rule}"))
    assert "Ended: 14 queued occurrence(s) cancelled." in page and "Run now</button>" not in page
    again = ops.post(f"/recurring/{rule}/run")
    assert again.status_code == 409 and "is ended" in text(again)


def test_an_edit_through_the_form_moves_the_rows(client, app, world, browser_for):
    rule = make_rule(client, world)["id"]
    marketer = browser_for("marketer")
    form = text(marketer.get(f"/recurring/{rule}?edit=1"))
    assert 'value="daily" selected' in form and 'name="revision" value="1"' in form
    fields = {**WEEKLY, "repeat": "daily", "start_date": "2026-06-01", "start_time": "10:30",
              "target_key": "list@example.test", "send_email-subject": "Daily digest {{ occurrence.local_date }}",
              "revision": "1"}
    saved = marketer.post(f"/recurring/{rule}", fields)
    assert saved.status_code == 303, text(saved)[:500]
    assert "14 queued occurrence(s) moved" in text(marketer.get(f"/recurring/{rule}"))
    assert {row.publish_at.strftime("%H:%M") for row in queued(app, rule)} == {"14:30"}
    stale = marketer.post(f"/recurring/{rule}", fields)  # the same form again: its revision is old
    assert stale.status_code == 409 and "was changed meanwhile" in text(stale)


def test_the_calendar_shows_occurrences_beyond_the_window_as_lighter_planned_entries(client, world, browser_for):
    rule = make_rule(client, world, rrule="FREQ=WEEKLY;BYDAY=MO,WE")["id"]
    marketer = browser_for("marketer")
    june = text(marketer.get("/calendar?view=month&date=2026-06-01"))
    day = lambda date: re.search(rf'data-date="{date}".*?</td>', june, re.S).group(0)  # noqa: E731
    assert "status-queued" in day("2026-06-10") and "status-planned" not in day("2026-06-10")
    assert f'href="/recurring/{rule}"' in day("2026-06-15") and "status-planned" in day("2026-06-15")
    assert "09:00 send_email → list@example.test" in day("2026-06-17")
    july = text(marketer.get("/calendar?view=week&date=2026-07-06", htmx=True))
    grid = july.split('class="agenda"', 1)[0]  # the same entries are listed again in the narrow screen's agenda
    assert grid.count("chip-link chip status-planned") == 2 and "<html" not in july


def test_the_settings_page_previews_a_zone_change_then_makes_it(client, app, world, browser_for, clock):
    rule = make_rule(client, world)["id"]
    first = queued(app, rule)[0]
    clock.set(datetime(2026, 6, 1, 13, 0, 30, tzinfo=UTC))
    claim_and(app, first.id, "published")
    admin = browser_for("admin")
    for role in ("marketer", "ops"):
        assert browser_for(role).post("/settings/timezone", {"zone": "Europe/London"}).status_code == 403
    before = [(row.id, row.status) for row in rule_rows(app, rule)]
    preview = admin.post("/settings/timezone", {"zone": "Europe/London", "intent": "preview"})
    body = " ".join(text(preview).split())
    assert preview.status_code == 200 and "From America/New_York to Europe/London" in body
    assert "13 moved" in body and "Change the zone to Europe/London" in body
    assert "is 13:00 UTC now and would be 08:00 UTC" in body
    assert [(row.id, row.status) for row in rule_rows(app, rule)] == before  # a preview changes nothing
    bad = admin.post("/settings/timezone", {"zone": "Mars/Olympus", "intent": "change"})
    assert bad.status_code == 422 and "is not an IANA time zone" in text(bad)
    changed = admin.post("/settings/timezone", {"zone": "Europe/London", "intent": "change"})
    assert changed.status_code == 303
    assert "zone is now Europe/London (was America/New_York)" in text(admin.get("/settings"))
    with app.app_context(), read_session() as session:
        assert session.get(Workspace, world.workspace_id).timezone == "Europe/London"
    rows = {row.id: row for row in rule_rows(app, rule)}
    assert rows[first.id].status == "published"  # sent: kept as it went
    assert {row.publish_at.hour for row in queued(app, rule)} == {8}  # 09:00 BST
    assert expand(app)["minted"] == 0


def test_the_rules_gauge_and_the_expanders_run_show_on_health_and_metrics(client, app, world, browser_for):
    make_rule(client, world)
    expand(app)
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'tickwork_recurring_rules{status="active"} 1.0' in metrics
    health = text(browser_for("ops").get("/health"))
    assert "expand" in health and "rules seen" in health


def test_the_rule_builder_offers_the_action_types_of_the_chosen_channel_and_refuses_any_other(app, world,
                                                                                              browser_for):
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="instagram", kind="log",
                            config={"sends": "publish_post"}, created_at=runtime().now()))
    marketer = browser_for("marketer")
    page = text(marketer.get("/recurring/new"))
    # The defaults agree with each other: the first channel, and the first type it sends.
    assert re.search(r'<option value="instagram" selected', page)
    assert re.search(r'<option value="publish_post" data-channels="instagram main " selected', page)
    assert 'value="send_email" data-channels="main "' in page
    before = _rules(app)
    refused = marketer.post("/recurring", {**WEEKLY, "channel": "instagram", "action_type": "send_email"})
    assert refused.status_code == 422
    assert "instagram (log) sends publish_post, not send_email" in text(refused)
    assert _rules(app) == before
    made = marketer.post("/recurring", {**WEEKLY, "channel": "instagram", "action_type": "publish_post",
                                        "publish_post-body": "Fresh bread on {{ occurrence.local_date }}"})
    assert made.status_code == 303, text(made)[:500]
