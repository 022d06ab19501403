"""The works pages and the notifications bell, for each role, with and without HX-Request."""

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.works.tables import WorkSchedule
from tests.integration.works_helpers import Dispatcher, create_work, put_schedule, schedule_row, set_plan

RANK = {"marketer": 0, "ops": 1, "admin": 2}


@pytest.fixture
def work(app, client, world):
    work_id = create_work(client, world, name="Bakery <b>site</b>")
    assert put_schedule(client, world, work_id, cadence="weekly", time="09:00").status_code == 201
    return work_id


def pages(work_id):
    """(url, least role, answer without htmx, answer with htmx)."""
    return [("/works", "marketer", 200, 200), (f"/works/{work_id}", "marketer", 200, 200),
            (f"/works/{work_id}/runs", "marketer", 302, 200), (f"/works/{work_id}/schedule-form", "marketer", 302, 200),
            ("/works/plugins", "marketer", 200, 200), ("/works/usage", "marketer", 200, 200),
            ("/notifications", "marketer", 200, 200)]


def test_every_works_page_for_every_role_with_and_without_htmx(work, browser_for):
    for role in RANK:
        browser = browser_for(role)
        for url, least, plain, htmx in pages(work):
            for as_htmx in (False, True):
                answer = browser.get(url, htmx=as_htmx)
                body = answer.get_data(as_text=True)
                assert answer.status_code == ((htmx if as_htmx else plain) if RANK[role] >= RANK[least] else 403), (
                    role, url, as_htmx)
                if answer.status_code == 200:
                    assert ("<html" in body) is not as_htmx, (role, url, as_htmx)
    signed_out = browser_for(None)
    assert signed_out.get("/works").status_code == 302
    assert signed_out.get("/works", htmx=True).status_code == 401


def test_the_list_shows_status_cadence_next_run_in_the_zone_and_failures_escaped(work, browser_for):
    page = browser_for("marketer").get("/works").get_data(as_text=True)
    assert "Bakery &lt;b&gt;site&lt;/b&gt;" in page and "<b>site</b>" not in page
    assert "Every Monday at 09:00" in page and "Mon 01 Jun 09:00" in page and "0 of 3" in page
    assert "New work" not in page  # a marketer may read, not create
    assert "New work" in browser_for("ops").get("/works").get_data(as_text=True)


def test_cadences_outside_the_plan_are_offered_disabled_with_the_reason_unless_usage_billing(work, browser_for):
    browser = browser_for("ops")
    page = browser.get(f"/works/{work}").get_data(as_text=True)
    assert '<option value="hourly"  disabled title="hourly is not in the free plan' in page
    assert '<option value="daily"  >' in page
    usage = browser.get(f"/works/{work}/schedule-form?cadence=weekly&billingMode=usage&maxFailureBeforePause=3",
                        htmx=True).get_data(as_text=True)
    assert '<option value="hourly"  >' in usage and "disabled title" not in usage
    assert 'id="schedule"' in usage and "<html" not in usage


def test_the_schedule_form_saves_in_place_and_a_refusal_is_written_on_the_card(app, work, browser_for):
    browser = browser_for("ops")
    form = {"cadence": "hourly", "billingMode": "subscription", "maxFailureBeforePause": "3", "enable": "on"}
    refused = browser.post(f"/works/{work}/schedule", form, htmx=True)
    body = refused.get_data(as_text=True)
    assert refused.status_code == 422 and 'id="schedule"' in body and "not in the free plan" in body
    assert 'aria-invalid="true"' in body and schedule_row(app, work).cadence == "weekly"
    saved = browser.post(f"/works/{work}/schedule", {**form, "billingMode": "usage"}, htmx=True)
    assert saved.status_code == 200 and "Schedule saved." in saved.get_data(as_text=True)
    assert (schedule_row(app, work).cadence, schedule_row(app, work).billing_mode) == ("hourly", "usage")
    for bad, field in (({**form, "maxFailureBeforePause": "eleven"}, "Failures before pausing"),
                       ({**form, "billingMode": "usage", "override_search": "nope"}, "is installed"),
                       ({**form, "cadence": "?"}, "is not a cadence"),
                       ({**form, "cadence": "\x00"}, "cadence must not contain NUL characters")):
        answer = browser.post(f"/works/{work}/schedule", bad, htmx=True)
        assert answer.status_code == 422 and field in answer.get_data(as_text=True), bad
    plain = browser.post(f"/works/{work}/schedule", {**form, "billingMode": "usage", "cadence": "daily"})
    assert plain.status_code == 303 and schedule_row(app, work).cadence == "daily"
    whole = browser.post(f"/works/{work}/schedule", {**form, "cadence": "hourly"})
    assert whole.status_code == 422 and "<html" in whole.get_data(as_text=True)


def test_pause_resume_and_run_now_re_render_their_cards(app, work, browser_for):
    browser = browser_for("ops")
    paused = browser.post(f"/works/{work}/pause", htmx=True)
    assert paused.status_code == 200 and "status-paused" in paused.get_data(as_text=True)
    resumed = browser.post(f"/works/{work}/resume", htmx=True)
    assert "status-active" in resumed.get_data(as_text=True) and schedule_row(app, work).status == "active"
    ran = browser.post(f"/works/{work}/run", htmx=True)
    body = ran.get_data(as_text=True)
    assert ran.status_code == 200 and 'id="runs"' in body and "started." in body and "succeeded" in body
    assert browser.post(f"/works/{work}/run").status_code == 303


def test_run_now_while_generating_answers_409_in_place(app, world, work, browser_for):
    dispatcher = Dispatcher(app)
    from tests.integration.works_helpers import run_now_held

    run_now_held(dispatcher, world, work)
    answer = browser_for("ops").post(f"/works/{work}/run", htmx=True)
    body = answer.get_data(as_text=True)
    assert answer.status_code == 409 and "is generating" in body and 'id="runs"' in body
    assert 'hx-trigger="every 3s"' in body  # the card polls while the generation runs


def test_a_marketer_may_not_change_a_work(work, browser_for):
    browser = browser_for("marketer")
    for url in (f"/works/{work}/schedule", f"/works/{work}/pause", f"/works/{work}/run", f"/works/{work}/delete",
                "/works"):
        answer = browser.post(url, {"cadence": "daily", "maxFailureBeforePause": "3"}, htmx=True)
        assert answer.status_code == 403 and "You need the ops role" in answer.get_data(as_text=True), url


def test_creating_and_deleting_a_work_from_the_dashboard(app, world, browser_for):
    browser = browser_for("ops")
    refused = browser.post("/works", {"name": "", "pipeline": "log"})
    assert refused.status_code == 422 and "name is required" in refused.get_data(as_text=True)
    webhook = browser.post("/works", {"name": "Hooked", "pipeline": "webhook", "url": "https://hook.test/x"})
    assert webhook.status_code == 422 and "TICKWORK_BASE_URL" in webhook.get_data(as_text=True)
    created = browser.post("/works", {"name": "Digest", "pipeline": "log"})
    assert created.status_code == 303
    page = browser.get(created.headers["Location"]).get_data(as_text=True)
    assert "signing secret, shown this once" in page and "Disabled: this work has no schedule yet." in page
    work_id = int(created.headers["Location"].rsplit("/", 1)[1])
    deleted = browser.post(f"/works/{work_id}/delete")
    assert deleted.status_code == 303 and browser.get(f"/works/{work_id}").status_code == 404


def test_the_bell_counts_unread_notifications_per_member_and_marking_read_clears_it(app, world, browser_for):
    from models.works.notify import notify

    with app.app_context(), write_session() as session:
        for n in range(2):
            notify(session, world.workspace_id, kind="work_auto_paused", title=f"Paused #{n}",
                   body="after <3> failures", dedupe_key=f"k{n}", now=datetime(2026, 6, 1, 12, tzinfo=timezone.utc),
                   actor=Actor(label="test"), subject="work:1")
    ops, admin = browser_for("ops"), browser_for("admin")
    assert 'aria-label="2 unread">2</span>' in ops.get("/works").get_data(as_text=True)
    inbox = ops.get("/notifications").get_data(as_text=True)
    assert "Paused #1" in inbox and "after &lt;3&gt; failures" in inbox
    marked = ops.post("/notifications/read", htmx=True)
    assert marked.status_code == 200 and 'id="inbox"' in marked.get_data(as_text=True)
    assert "unread" not in ops.get("/works").get_data(as_text=True).split("<main")[0]
    assert 'aria-label="2 unread"' in admin.get("/works").get_data(as_text=True)  # each member reads for themselves
    assert admin.post("/notifications/read", {"id": "999999"}).status_code == 404


def test_only_admins_choose_where_notifications_are_sent(app, world, browser_for):
    from models.notifications.tables import NotificationSettings

    assert browser_for("ops").post("/notifications/settings", {"channel": "main", "recipient": "x"}).status_code == 403
    admin = browser_for("admin")
    refused = admin.post("/notifications/settings", {"channel": "nope", "recipient": "ops@acme.test"})
    assert refused.status_code == 422 and "no channel named" in refused.get_data(as_text=True)
    assert admin.post("/notifications/settings", {"channel": "main", "recipient": ""}).status_code == 422
    assert admin.post("/notifications/settings", {"channel": "main", "recipient": "ops@acme.test"}).status_code == 303
    with app.app_context(), read_session() as session:
        saved = session.scalar(select(NotificationSettings))
    assert saved.recipient == "ops@acme.test"
    assert "Sent through main to ops@acme.test" in browser_for("ops").get("/notifications").get_data(as_text=True)


def test_the_usage_and_plugins_pages(app, client, world, work, clock, browser_for):
    set_plan(app, world.workspace_id, "business")
    put_schedule(client, world, work, cadence="hourly", billingMode="usage")
    clock.set(schedule_row(app, work).next_run_at + timedelta(seconds=5))
    Dispatcher(app).pass_()
    usage = browser_for("marketer").get("/works/usage").get_data(as_text=True)
    assert "<td>2026-06</td><td>1</td><td>1</td><td>0</td>" in usage and "business plan" in usage
    plugins = browser_for("marketer").get("/works/plugins").get_data(as_text=True)
    assert "<code>log</code>" in plugins and "<code>webhook</code>" in plugins


def test_no_500_for_garbage_on_any_works_route(app, work, browser_for):
    garbage = {"cadence": "' OR 1=1", "billingMode": "\x00", "maxFailureBeforePause": "9" * 50, "enable": "maybe",
               "override_ai": "x" * 300, "name": "é" * 500, "pipeline": ["a", "b"], "url": "javascript:alert(1)",
               "id": "-1", "channel": "\x00", "recipient": "r" * 1000}
    admin = browser_for("admin")
    for rule in app.url_map.iter_rules():
        if not (rule.rule.startswith("/works") or rule.rule.startswith("/notifications")):
            continue
        url = rule.rule.replace("<int:work_id>", str(work))
        for htmx in (False, True):
            if "GET" in rule.methods:
                answer = admin.get(url, query_string={k: v for k, v in garbage.items() if isinstance(v, str)},
                                   htmx=htmx)
                assert answer.status_code < 500, (url, answer.status_code)
            if "POST" in rule.methods:
                answer = admin.post(url, garbage, htmx=htmx)
                assert answer.status_code < 500, (url, answer.status_code)
    assert schedule_row(app, work) is not None
    with app.app_context(), read_session() as session:
        assert session.scalar(select(WorkSchedule.cadence)) == "weekly"


def test_the_documented_notifications_settings_page_answers_a_get(app, world, browser_for):
    for role in ("marketer", "admin"):
        answer = browser_for(role).get("/notifications/settings")
        assert answer.status_code == 303 and answer.headers["Location"].endswith("/notifications#notification-settings")
    page = browser_for("admin").get("/notifications").get_data(as_text=True)
    assert 'id="notification-settings"' in page
    assert browser_for(None).get("/notifications/settings").status_code == 302


def test_the_day_and_time_picker_previews_the_next_run_saves_nothing_then_saves_it(app, work, browser_for):
    browser = browser_for("ops")
    before = schedule_row(app, work)
    typed = "cadence=weekly&weekday=friday&time=17:30&billingMode=subscription&maxFailureBeforePause=3&enable=on"
    preview = browser.get(f"/works/{work}/schedule-form?preview=1&{typed}", htmx=True)
    body = preview.get_data(as_text=True)
    assert preview.status_code == 200 and "the next run would be Fri 05 Jun 2026, 17:30" in body
    assert 'value="friday" selected' in body and "Run now" in body
    assert schedule_row(app, work).next_run_at == before.next_run_at
    bad = browser.get(f"/works/{work}/schedule-form?preview=1&{typed.replace('17:30', '25:00')}", htmx=True)
    assert "time is a wall time HH:MM" in bad.get_data(as_text=True)
    form = {"cadence": "weekly", "weekday": "friday", "time": "17:30", "dayOfMonth": "", "billingMode": "subscription",
            "maxFailureBeforePause": "3", "enable": "on"}
    assert browser.post(f"/works/{work}/schedule", form, htmx=True).status_code == 200
    saved = schedule_row(app, work)
    assert (saved.anchor_local.weekday(), saved.anchor_local.strftime("%H:%M")) == (4, "17:30")
    # Shown back as people say it, on the card and in the list, never as a bare cadence name.
    card = browser.get(f"/works/{work}").get_data(as_text=True)
    assert '<span class="chip status-active">active</span> Every Friday at 17:30 ·' in card
    assert "Every Friday at 17:30" in browser.get("/works").get_data(as_text=True)
    assert browser.post(f"/works/{work}/schedule", {**form, "maxFailureBeforePause": "4"}, htmx=True).status_code == 200
    assert schedule_row(app, work).next_run_at == saved.next_run_at  # naming the same day and time keeps the grid


def test_a_works_status_reads_as_its_runs_do_and_a_failed_one_never_says_generated(app, client, world, browser_for):
    ok = create_work(client, world, name="Goes well")
    bad = create_work(client, world, name="Goes badly", settings={"fail": "the printer is on fire"})
    browser = browser_for("ops")
    assert "never run" in browser.get("/works").get_data(as_text=True)
    for work_id in (ok, bad):
        assert browser.post(f"/works/{work_id}/run", htmx=True).status_code == 200
    good = browser.get(f"/works/{ok}").get_data(as_text=True)
    assert 'status-generated">succeeded</span>' in good and "<dt>Last generated</dt>" in good
    failed = browser.get(f"/works/{bad}").get_data(as_text=True)
    assert 'status-error">failed</span>' in failed and "<dt>Last run failed</dt>" in failed
    assert "Generated" not in failed and ">error<" not in failed
    listing = browser.get("/works").get_data(as_text=True)
    assert 'status-generated">succeeded</span>' in listing and 'status-error">failed</span>' in listing
