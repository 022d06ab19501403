"""Calendar, queue, composer, health, channels, sign-in: what each page shows and refuses."""

import io
import re
from datetime import datetime, timedelta, timezone

from models.clock.tables import ClockRun
from models.core.database import write_session
from models.clock.tables import ConsumerHeartbeat
from tests.media_files import png_bytes
from tests.web.conftest import claim_and, make_action, make_post, rows_of_post

SCRIPT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def text(answer) -> str:
    return answer.get_data(as_text=True)


def day_cell(page: str, day: str) -> str:
    found = re.search(rf'<td class="day[^"]*" data-date="{day}".*?</td>', page, re.S)
    assert found, day
    return found.group(0)


# -- calendar -------------------------------------------------------------------------------


def test_half_past_eleven_local_sits_on_its_local_day(app, world, browser_for):
    late = make_action(app, world, publish_at=datetime(2026, 6, 11, 3, 30, tzinfo=timezone.utc))  # 23:30 EDT on 10th
    page = text(browser_for("marketer").get("/calendar?date=2026-06-15"))
    assert f'/actions/{late}"' in day_cell(page, "2026-06-10")
    assert f'/actions/{late}"' not in day_cell(page, "2026-06-11")
    assert ">23:30 main" in day_cell(page, "2026-06-10")


def test_today_is_marked_and_navigation_moves_by_month_and_week(world, browser_for):
    marketer = browser_for("marketer")
    page = text(marketer.get("/calendar"))
    assert re.search(r'class="day today[^"]*" data-date="2026-06-01"', page)
    assert "June 2026" in page and "date=2026-05-01" in page and "date=2026-07-01" in page
    week = text(marketer.get("/calendar?view=week&date=2026-06-10", htmx=True))
    assert "08 Jun – 14 Jun 2026" in week and "date=2026-06-01" in week and "date=2026-06-15" in week
    assert week.count('<td class="day') == 7
    assert 'href="/posts/new?date=2026-06-10"' in week  # click a day to compose for it


def test_a_busy_day_shows_counts_per_type_in_place_of_chips(app, world, browser_for):
    at = datetime(2026, 6, 3, 14, 0, tzinfo=timezone.utc)
    for n in range(9):
        make_action(app, world, publish_at=at + timedelta(minutes=n), target=f"e{n}", action_type="send_email")
    for n in range(3):
        make_action(app, world, publish_at=at + timedelta(minutes=n), target=f"s{n}", action_type="send_sms")
    cell = day_cell(text(browser_for("ops").get("/calendar")), "2026-06-03")
    assert "9 send_email" in cell and "3 send_sms" in cell and "chip-link" not in cell


def test_calendar_counts_link_to_a_list_that_shows_exactly_what_was_counted(app, world, browser_for):
    at = datetime(2026, 6, 3, 14, 0, tzinfo=timezone.utc)  # 10:00 in New York
    ids = [make_action(app, world, publish_at=at + timedelta(minutes=n), target=f"e{n}", action_type="publish_post")
           for n in range(9)]
    claim_and(app, ids[0], "published", at=at)
    claim_and(app, ids[1], "failed", at=at)
    ops = browser_for("ops")
    cell = day_cell(text(ops.get("/calendar?date=2026-06-03")), "2026-06-03")
    link = re.search(r'href="([^"]+)">9 publish_post<', cell)
    assert link, cell
    listing = text(ops.get(link.group(1).replace("&amp;", "&")))
    assert sum(f"/actions/{i}\"" in listing for i in ids) == 9
    assert "status-published" in listing and "status-failed" in listing
    ops.post(f"/actions/{ids[2]}/cancel", htmx=True)
    assert sum(f"/actions/{i}\"" in text(ops.get(link.group(1).replace("&amp;", "&"))) for i in ids) == 8


def test_the_week_view_shows_each_hours_rows_or_counts_on_a_busy_day(app, world, browser_for):
    at = datetime(2026, 6, 3, 14, 0, tzinfo=timezone.utc)  # 10:00 in New York
    for n in range(9):
        make_action(app, world, publish_at=at + timedelta(minutes=n), target=f"e{n}", action_type="send_email")
    lone = make_action(app, world, publish_at=datetime(2026, 6, 3, 17, 59, tzinfo=timezone.utc), target="lone")
    week = text(browser_for("ops").get("/calendar?view=week&date=2026-06-03"))
    slots = re.findall(r'<td class="slot[^"]*" data-slot-date="2026-06-03"[^>]*data-drop-time="(\d\d):00">(.*?)</td>',
                       week, re.S)
    by_hour = dict(slots)
    assert f'/actions/{lone}"' in by_hour["13"]  # 13:59 local, on its hour
    assert "9 send_email" in by_hour["10"]


def test_chips_are_coloured_by_status_and_cancelled_rows_are_optional(app, acme, browser_for):
    ops = browser_for("ops")
    page = text(ops.get("/calendar"))
    today = day_cell(page, "2026-06-01")
    assert "status-failed" in today and "status-published" in today and "status-queued" in today
    ops.post(f"/actions/{acme.queued}/cancel", htmx=True)
    assert f"/actions/{acme.queued}\"" not in day_cell(text(ops.get("/calendar")), "2026-06-01")
    assert f"/actions/{acme.queued}\"" in day_cell(text(ops.get("/calendar?cancelled=1")), "2026-06-01")


def test_drafts_appear_on_their_day(app, world, browser_for):
    draft = make_post(app, world, body="Draft for Friday", day="2026-06-12", approve=False)
    cell = day_cell(text(browser_for("marketer").get("/calendar")), "2026-06-12")
    assert f'href="/posts/{draft}"' in cell and "status-draft" in cell and "Draft for Friday" in cell


def test_a_day_spans_25_hours_when_the_clocks_fall_back(app, world):
    from models.overview.calendar import lay_out
    from models.core.database import read_session

    from datetime import date

    # 00:30 and 23:30 local on 1 November 2026 in New York: both on the 1st, 24 h 60 min apart.
    make_action(app, world, publish_at=datetime(2026, 11, 1, 4, 30, tzinfo=timezone.utc), target="early")
    make_action(app, world, publish_at=datetime(2026, 11, 2, 4, 30, tzinfo=timezone.utc), target="late")
    with app.app_context(), read_session() as session:
        days = lay_out(session, world.workspace_id, date(2026, 10, 31), 3, "America/New_York", ("queued",))
    assert [d.total for d in days] == [0, 2, 0]
    assert days[1].end - days[1].start == timedelta(hours=25)


# -- queue and failures ---------------------------------------------------------------------


def test_queue_is_in_publish_at_then_id_order_with_a_cursor(app, world, browser_for):
    at = datetime(2026, 6, 2, 13, 0, tzinfo=timezone.utc)
    ids = [make_action(app, world, publish_at=at + timedelta(minutes=60 - n), target=f"r{n}") for n in range(3)]
    twins = [make_action(app, world, publish_at=at, target=f"twin{n}") for n in range(55)]
    expected = twins + ids[::-1]
    ops = browser_for("ops")
    first = text(ops.get("/queue"))
    shown = [int(n) for n in re.findall(r'<tr id="action-(\d+)"', first)]
    assert shown == expected[:50]
    assert "queued</span> 58" in first
    cursor = re.search(r'href="/queue\?cursor=([^"]+)"', first).group(1)
    second = text(ops.get(f"/queue?cursor={cursor}", htmx=True))
    assert [int(n) for n in re.findall(r'<tr id="action-(\d+)"', second)] == expected[50:]
    assert "End of the list" in second


def test_queue_filters(app, acme, browser_for):
    make_action(app, acme.world, minutes=60 * 24 * 5, target="later@example.test", action_type="send_sms",
                payload={"body": "Flash sale"})
    ops = browser_for("ops")
    assert re.findall(r'<tr id="action-(\d+)"', text(ops.get("/queue?q=flash+sale")))
    assert "later@example.test" in text(ops.get("/queue?type=send_sms"))
    assert "later@example.test" not in text(ops.get("/queue?type=send_email"))
    assert "later@example.test" in text(ops.get("/queue?from=2026-06-06&to=2026-06-06"))
    assert "later@example.test" not in text(ops.get("/queue?from=2026-06-01&to=2026-06-05"))
    assert "queued@example.test" in text(ops.get("/queue?channel=main&status=queued"))
    assert "Nothing is waiting to fire." in text(ops.get("/queue?status=submitted"))
    assert "Nothing is waiting to fire." in text(ops.get("/queue?q=100%25_"))  # wildcards are literal


def test_bad_filters_are_reported_not_crashed(acme, browser_for):
    ops = browser_for("ops")
    for query, words in (("status=published", "Unknown status"), ("channel=nope", "No channel named"),
                         ("from=yesterday", "from must be a date"), ("to=2026-13-45", "to must be a date"),
                         ("cursor=!!!", "out of date")):
        answer = ops.get(f"/queue?{query}")
        assert answer.status_code == 200 and words in text(answer), query


def test_failures_show_the_reason_in_words_attempts_and_timeline(acme, browser_for):
    page = text(browser_for("marketer").get("/failures"))
    assert "Refused for good: mailbox unavailable (550)" in page
    assert "1 of 5" in page and "Timeline (3 events)" in page
    assert "queued → submitted" in page and "by job:tick" in page


# -- action detail --------------------------------------------------------------------------


def test_detail_shows_timeline_lineage_provider_id_and_escaped_payload(app, acme, browser_for):
    ops = browser_for("ops")
    ops.post(f"/actions/{acme.queued}/reschedule", {"date": "2026-06-20", "time": "09:15"}, htmx=True)
    old = text(ops.get(f"/actions/{acme.queued}"))
    new_id = int(re.search(r"Rescheduled to <a href=\"/actions/(\d+)\"", old).group(1))
    assert "queued</span> → <span class=\"chip status-cancelled\">cancelled" in old and "by user:ops@acme.test" in old
    new = text(ops.get(f"/actions/{new_id}"))
    assert f'Rescheduled from <a href="/actions/{acme.queued}">#{acme.queued}</a>' in new
    sent = text(ops.get(f"/actions/{acme.published}"))
    assert "<code>prov-42</code>" in sent
    post_row = text(ops.get(f"/actions/{acme.post_row}"))
    assert f'href="/posts/{acme.post}">open the post' in post_row


def test_everything_typed_is_escaped(app, world, browser_for):
    failed = make_action(app, world, minutes=-2, payload={"body": SCRIPT}, target=SCRIPT)
    claim_and(app, failed, "failed", message=f"provider said {SCRIPT}")
    make_post(app, world, body=SCRIPT, day="2026-06-05", approve=False)
    admin = browser_for("admin")
    for url in ("/calendar", "/queue", "/failures", f"/actions/{failed}", f"/actions/{failed}/row"):
        for htmx in (False, True):
            answer = admin.get(url, htmx=htmx)
            if answer.status_code == 302:
                continue
            page = text(answer)
            assert "<script>window.__pwned" not in page and "<img src=x" not in page, url
            assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page or url == "/queue", url
    answer = admin.get("/failures")
    assert answer.headers["Content-Security-Policy"].startswith("default-src 'self'; script-src 'self'")


# -- composer -------------------------------------------------------------------------------


def test_compose_save_approve_unapprove_archive(app, world, browser_for):
    marketer = browser_for("marketer")
    photo = app.test_client().post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                                   data={"file": (io.BytesIO(png_bytes()), "a.png")}).json
    saved = marketer.post("/posts", {"body": "Bread", "targets": "main", "date": "2026-06-10", "time": "23:30",
                                     "media": f"{photo['id']}\n", "intent": "save"})
    assert saved.status_code == 303
    post_id = int(saved.headers["Location"].rsplit("/", 1)[1])
    page = text(marketer.get(f"/posts/{post_id}"))
    assert "is draft" in page and f">{photo['id']}</textarea>" in page and "2026-06-11 03:30 UTC" in page
    assert rows_of_post(app, world, post_id) == []
    assert marketer.post(f"/posts/{post_id}/approve").status_code == 303
    rows = rows_of_post(app, world, post_id)
    assert [r.status for r in rows] == ["queued"]
    assert rows[0].publish_at.isoformat() == "2026-06-11T03:30:00+00:00"
    moved = marketer.post(f"/posts/{post_id}", {"body": "Bread!", "targets": "main", "date": "2026-06-12",
                                                "time": "08:00"})
    assert moved.status_code == 303
    assert [r.status for r in rows_of_post(app, world, post_id)] == ["cancelled", "queued"]
    assert marketer.post(f"/posts/{post_id}/unapprove").status_code == 303
    assert marketer.post(f"/posts/{post_id}/archive").status_code == 303
    archived = text(marketer.get(f"/posts/{post_id}"))
    assert "status-archived" in archived and "Archive</button>" not in archived
    again = marketer.post(f"/posts/{post_id}/approve")
    assert again.status_code == 409 and "archived" in text(again)


def test_composer_says_when_a_wall_time_does_not_exist_or_happens_twice(world, browser_for):
    marketer = browser_for("marketer")
    gap = text(marketer.get("/posts/preview-time?date=2027-03-14&time=02:30", htmx=True))
    assert "does not exist" in gap and "03:30 EDT" in gap
    twice = text(marketer.get("/posts/preview-time?date=2026-11-01&time=01:30", htmx=True))
    assert "happens twice" in twice and "01:30 EDT" in twice
    plain = text(marketer.get("/posts/preview-time?date=2026-07-01&time=09:00", htmx=True))
    assert "2026-07-01 13:00 UTC" in plain and "message warn" not in plain
    nonsense = marketer.get("/posts/preview-time?date=soon&time=later", htmx=True)
    assert nonsense.status_code == 200 and "Pick a date and a time" in text(nonsense)


def test_composer_refuses_bad_input_with_the_form_kept(world, browser_for):
    marketer = browser_for("marketer")
    cases = [
        ({"body": "", "targets": "main", "date": "2026-06-10", "time": "09:00"}, "body must not be empty"),
        ({"body": "Hi", "date": "2026-06-10", "time": "09:00"}, "at least one target"),
        ({"body": "Hi", "targets": "nope", "date": "2026-06-10", "time": "09:00"}, "no channel named"),
        ({"body": "Hi", "targets": "main", "date": "June", "time": "09:00"}, "Give a date like"),
        ({"body": "Hi", "targets": "main", "date": "2026-06-10", "time": "nine"}, "Give a time like"),
        ({"body": "Hi", "targets": "main", "date": "2020-06-10", "time": "09:00", "intent": "approve"}, "past"),
        ({"body": "Hi", "targets": "main", "date": "2026-06-10", "time": "09:00", "media": "ftp://x"}, "not a media id"),
        ({"body": "x" * 20000, "targets": "main", "date": "2026-06-10", "time": "09:00"}, "at most"),
    ]
    for data, words in cases:
        answer = marketer.post("/posts", data)
        assert answer.status_code == 422, (data, answer.status_code)
        assert words in text(answer), (words, text(answer)[:2000])
        assert 'name="body"' in text(answer)


# -- health ---------------------------------------------------------------------------------


def test_health_warns_when_the_tick_is_stale_and_healthz_agrees(app, acme, clock, browser_for):
    make_action(app, acme.world, minutes=-1)  # due and not yet claimed
    make_action(app, acme.world, minutes=-3)
    ops = browser_for("ops")
    assert "The tick has not run for 3 minutes or more" in text(ops.get("/health"))
    stale = app.test_client().get("/healthz")
    assert stale.status_code == 503 and stale.json["status"] == "stale" and stale.json["last_tick"] is None
    with app.app_context(), write_session() as session:
        session.add(ClockRun(kind="tick", started_at=clock.now() - timedelta(seconds=30),
                             finished_at=clock.now() - timedelta(seconds=29), summary={"due": 2, "dispatched": 2}))
        session.add(ConsumerHeartbeat(name="box:12", host="box", pid=12, started_at=clock.now() - timedelta(hours=1),
                                      beat_at=clock.now() - timedelta(seconds=10)))
    page = text(ops.get("/health"))
    assert "The tick ran 30 s ago." in page and "box:12" in page and "dispatched" in page
    fresh = app.test_client().get("/healthz").json
    assert fresh["status"] == "ok" and fresh["consumer_alive"] is True and fresh["backlog"] == 2
    clock.advance(minutes=4)
    assert app.test_client().get("/healthz").status_code == 503
    assert "The tick has not run for 3 minutes or more" in text(ops.get("/health", htmx=True))


def test_a_backlog_above_what_is_counted_live_shows_the_last_ticks_count_and_costs_no_full_count(
        app, world, clock, browser_for, monkeypatch):
    import models.overview.health as health

    monkeypatch.setattr(health, "BACKLOG_COUNTED_AT_MOST", 3)
    for n in range(5):
        make_action(app, world, minutes=-1 - n, target=f"late{n}")
    ops = browser_for("ops")
    # No tick has counted them: the page says only that there are more than it counts live.
    page = text(ops.get("/health"))
    assert re.search(r'<h2>Backlog</h2>\s*<p class="figure">more than 3</p>', page)
    assert app.test_client().get("/healthz").json["backlog_exact"] is False
    with app.app_context(), write_session() as session:
        session.add(ClockRun(kind="tick", started_at=clock.now() - timedelta(seconds=30),
                             finished_at=clock.now() - timedelta(seconds=29), summary={"due": 0, "backlog": 5}))
    page = text(ops.get("/health"))
    assert re.search(r'<h2>Backlog</h2>\s*<p class="figure">5</p>', page)
    assert "counted them; more than 3 now" in page
    assert app.test_client().get("/healthz").json["backlog"] == 5
    assert "tickwork_backlog_actions 5.0" in text(app.test_client().get("/metrics"))
    # The oldest due is still read from the rows: the oldest of those counted, five minutes late.
    assert app.test_client().get("/healthz").json["oldest_due"] == (clock.now() - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    monkeypatch.setattr(health, "BACKLOG_COUNTED_AT_MOST", 10)
    assert app.test_client().get("/healthz").json["backlog_exact"] is True


def test_a_listings_counts_stop_at_what_it_counts_and_say_more_than(app, world, browser_for, monkeypatch):
    import webapp.views.queue as queue

    for n in range(5):
        make_action(app, world, minutes=10 + n, target=f"soon{n}")
    ops = browser_for("ops")
    assert "queued</span> 5<" in text(ops.get("/queue"))
    monkeypatch.setattr(queue, "COUNTED_AT_MOST", 3)
    assert "queued</span> more than 3<" in text(ops.get("/queue"))


def test_health_summaries_read_as_sentences_not_key_dumps(app, world, clock, browser_for):
    from webapp.views.wording import summary_sentence

    assert summary_sentence({"due": 0, "dispatched": 0, "outcomes": {}}) == "Last pass: 0 due, nothing sent."
    assert summary_sentence({"due": 3, "dispatched": 2, "outcomes": {"published": 2, "stopped_orphaned": 0}}) == \
        "Last pass: 3 due, 2 sent, outcomes: 2 published."
    assert summary_sentence({"inserted": 0, "removed": 0}) == "Last pass: nothing to do."
    assert summary_sentence({"posts": 4, "inserted": 1, "errors": [{"workspace": "x"}]}) == \
        "Last pass: 1 inserted, 4 posts, 1 error."
    with app.app_context(), write_session() as session:
        session.add(ClockRun(kind="tick", started_at=clock.now() - timedelta(seconds=30),
                             finished_at=clock.now() - timedelta(seconds=29), summary={"due": 0, "dispatched": 0}))
    page = text(browser_for("ops").get("/health"))
    assert "Last pass: 0 due, nothing sent." in page


def test_metrics_speak_prometheus(app, acme):
    make_action(app, acme.world, minutes=-1)
    make_action(app, acme.world, minutes=-3)
    answer = app.test_client().get("/metrics")
    assert answer.status_code == 200 and answer.mimetype == "text/plain"
    body = text(answer)
    assert "tickwork_backlog_actions 2.0" in body and "tickwork_tick_stale 1.0" in body
    # acme's two claims came 5 and 4 minutes after their rows fell due.
    assert 'tickwork_claim_lateness_seconds{quantile="1"} 300.0' in body
    assert 'tickwork_claim_lateness_seconds{quantile="0.5"} 300.0' in body


# -- channels -------------------------------------------------------------------------------


def test_channel_secrets_are_write_only(app, world, browser_for):
    admin = browser_for("admin")
    made = admin.post("/channels", {"name": "hooks", "kind": "webhook", "settings": "url = https://example.com/h",
                                    "secret": "s3cr3t-value"})
    assert made.status_code == 303
    edit_url = made.headers["Location"]
    page = text(admin.get(edit_url))
    assert "s3cr3t-value" not in page and "a secret is set; leave blank to keep it" in page
    kept = admin.post(edit_url, {"name": "hooks", "kind": "webhook", "settings": "url = https://example.com/h\nrate = 5/s"})
    assert kept.status_code == 303  # the same destination: the stored secret stays
    moved = admin.post(edit_url, {"name": "hooks", "kind": "webhook", "settings": "url = https://example.com/h2"})
    assert moved.status_code == 422 and "needs its secret again" in text(moved)  # a new one: type it again
    with app.app_context():
        from sqlalchemy import select

        from models.channels.tables import Channel
        from models.core.database import read_session
        from models.core.runtime import runtime

        with read_session() as session:
            channel = session.scalar(select(Channel).where(Channel.name == "hooks"))
            assert channel.secret(runtime().secret_box) == "s3cr3t-value"
            assert channel.config == {"url": "https://example.com/h", "rate": "5/s"}
    for page_url in ("/channels", edit_url):
        assert "s3cr3t-value" not in text(admin.get(page_url))


def test_channel_form_refuses_bad_input(world, browser_for):
    admin = browser_for("admin")
    for data, status, words in (
        ({"name": "bad name!", "kind": "log"}, 422, "channel name"),
        ({"name": "x", "kind": "carrier-pigeon"}, 422, "Unknown channel kind &#39;carrier-pigeon&#39;"),
        ({"name": "h", "kind": "webhook", "settings": "url = ftp://x"}, 422, "http(s) url"),
        ({"name": "h", "kind": "log", "settings": "no equals sign"}, 422, "key = value"),
        ({"name": "main", "kind": "log"}, 409, "already exists"),
    ):
        answer = admin.post("/channels", data)
        assert answer.status_code == status and words in text(answer), (data, text(answer)[:300])


def test_test_send_reports_how_it_went(app, world, browser_for):
    admin = browser_for("admin")
    ok = admin.post("/channels/1/test", {"target": "me"}, htmx=True)
    assert ok.status_code == 200 and "Sent" in text(ok) and "outbox:" in text(ok)
    made = admin.post("/channels", {"name": "nowhere", "kind": "webhook", "settings": "url = http://127.0.0.1:9/h"})
    channel_id = int(made.headers["Location"].rsplit("/", 1)[1])
    failed = admin.post(f"/channels/{channel_id}/test", htmx=True)
    assert failed.status_code == 502 and "Not sent" in text(failed)


# -- sign-in, sessions, workspaces ----------------------------------------------------------


def test_sign_in_out_and_cookie_flags(app, world, browser_for):
    browser = browser_for(None)
    token = browser.fresh_token()
    wrong = browser.client.post("/login", data={"email": "ops@acme.test", "password": "nope", "csrf_token": token})
    assert wrong.status_code == 401 and "do not match" in text(wrong)
    right = browser.client.post("/login", data={"email": "OPS@acme.test ", "password": "correct horse battery",
                                                "csrf_token": token, "next": "//evil.example/"})
    assert right.status_code == 303 and right.headers["Location"] == "/"
    browser.role = "ops"
    cookie = right.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    token = browser.fresh_token()
    out = browser.client.post("/logout", data={"csrf_token": token})
    assert out.status_code == 303
    assert browser.client.get("/queue").status_code == 302


def test_the_workspace_switcher(app, world, browser_for):
    from models.accounts.tables import Membership

    from tests.conftest import make_world

    other = make_world(app, name="Globex", zone="Europe/Paris")
    with app.app_context(), write_session() as session:
        session.add(Membership(user_id=world.users["ops"], workspace_id=other.workspace_id, role="marketer"))
    ops = browser_for("ops")
    page = text(ops.get("/queue"))
    assert 'id="workspace-switch"' in page and "Globex (marketer)" in page
    switched = ops.post("/workspace", {"workspace_id": str(other.workspace_id)})
    assert switched.status_code == 303
    calendar = text(ops.get("/calendar"))
    assert "Globex · Europe/Paris" in calendar
    assert ops.get("/health").status_code == 403  # a marketer there
    third = make_world(app, name="Initech")
    refused = ops.post("/workspace", {"workspace_id": str(third.workspace_id)})
    assert refused.status_code == 403 and "not a member" in text(refused)
    assert ops.post("/workspace", {"workspace_id": "abc"}).status_code == 403


def test_the_queue_shows_a_throttled_channel_and_how_far_behind_it_is(app, world, clock, browser_for):
    from models.actions import lifecycle
    from models.channels.tables import Channel
    from models.clock import pacing
    from models.core.moves import Actor
    from models.core.runtime import runtime

    action_id = make_action(app, world, minutes=0, action_type="send_sms", target="+15555550100")
    with app.app_context(), write_session() as session:
        channel = session.query(Channel).filter_by(workspace_id=world.workspace_id, name="main").one()
        channel.kind, channel.config = "twilio", {"account_sid": "AC1", "from": "+15555550000"}
        now = runtime().now()
        pacing.pause(session, channel.id, until=now + timedelta(minutes=2), reason="Twilio answered 429", now=now)
        assert lifecycle.hold(session, action_id, channel_id=channel.id, until=now + timedelta(minutes=5),
                              late_from=now + timedelta(minutes=5), cause="rate", message="held", now=now,
                              actor=Actor.job("test")).ok
    page = text(browser_for("marketer").get("/queue"))
    assert "Throttled channels" in page and "1/s" in page and "paused</span> until" in page
    assert "Twilio answered 429" in page and "1 held" in page and "5m00s" in page


def test_channel_form_refuses_a_garbled_limit_and_keeps_a_good_one(world, browser_for):
    admin = browser_for("admin")
    refused = admin.post("/channels", {"name": "h", "kind": "webhook", "settings": "url = https://x.test\nrate = fast"})
    assert refused.status_code == 422 and "like 20/s or 600/min" in text(refused)
    saved = admin.post("/channels", {"name": "h", "kind": "webhook",
                                     "settings": "url = https://x.test\nrate = 20/s\nconcurrency = 4"})
    assert saved.status_code == 303
    page = text(admin.get(saved.headers["Location"]))
    assert "rate = 20/s" in page and "concurrency = 4" in page and "Retry-After pauses the channel" in page
