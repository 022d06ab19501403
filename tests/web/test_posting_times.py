"""The posting-times editor: on its own page for ops and admins, on each channel's page for admins, read-only
for marketers; a bad line is refused with its message and changes nothing."""

from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session


def _slots(app, world):
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel.posting_slots).where(Channel.workspace_id == world.workspace_id,
                                                                  Channel.name == "main"))


def _main_id(app, world):
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel.id).where(Channel.workspace_id == world.workspace_id))


def test_ops_save_posting_times_from_the_editor_in_the_api_shape(app, world, browser_for):
    ops = browser_for("ops")
    page = ops.get("/posting-times")
    assert page.status_code == 200 and 'name="slots"' in page.get_data(as_text=True)
    channel_id = _main_id(app, world)
    saved = ops.post(f"/channels/{channel_id}/slots", data={"slots": "09:00 weekdays\n13:30 Saturday sun\n"},
                     htmx=True)
    assert saved.status_code == 200, saved.get_data(as_text=True)
    assert "saved" in saved.get_data(as_text=True)
    assert _slots(app, world) == [{"days": ["mon", "tue", "wed", "thu", "fri"], "time": "09:00"},
                                  {"days": ["sat", "sun"], "time": "13:30"}]
    again = ops.get("/posting-times").get_data(as_text=True)
    assert "09:00 weekdays\n13:30 weekends" in again


def test_a_bad_line_is_refused_with_its_message_and_changes_nothing(app, world, browser_for):
    ops = browser_for("ops")
    channel_id = _main_id(app, world)
    ops.post(f"/channels/{channel_id}/slots", data={"slots": "09:00 mon"})
    for typed, words in (("09:00 funday", "is not a day"), ("9 o'clock mon", "wall time like 09:00"),
                         ("09:00 mon\n09:00 mon tue", "again"), ("09:00", "should look like")):
        answer = ops.post(f"/channels/{channel_id}/slots", data={"slots": typed}, htmx=True)
        assert answer.status_code == 422, typed
        assert words in answer.get_data(as_text=True), (typed, answer.get_data(as_text=True))
        page = ops.post(f"/channels/{channel_id}/slots", data={"slots": typed})
        assert page.status_code == 422 and words in page.get_data(as_text=True)
    assert _slots(app, world) == [{"days": ["mon"], "time": "09:00"}]


def test_admins_edit_them_on_the_channel_page_and_marketers_only_read_them(app, world, browser_for):
    channel_id = _main_id(app, world)
    admin = browser_for("admin")
    assert "Posting times" in admin.get(f"/channels/{channel_id}").get_data(as_text=True)
    saved = admin.post(f"/channels/{channel_id}/slots", data={"slots": "18:00 every day", "back": "channel"})
    assert saved.status_code == 303 and saved.headers["Location"].endswith(f"/channels/{channel_id}")
    marketer = browser_for("marketer")
    page = marketer.get("/posting-times").get_data(as_text=True)
    assert "18:00 every day" in page and 'name="slots"' not in page
    assert marketer.post(f"/channels/{channel_id}/slots", data={"slots": "09:00 mon"}).status_code == 403
    assert _slots(app, world) == [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "time": "18:00"}]


def test_the_composer_adds_to_the_queue_and_previews_what_share_next_moves(app, world, browser_for):
    admin = browser_for("admin")
    admin.post(f"/channels/{_main_id(app, world)}/slots", data={"slots": "09:00 every day"})
    marketer = browser_for("marketer")
    page = marketer.get("/posts/new").get_data(as_text=True)
    assert 'value="queue"' in page and 'value="next"' in page
    first = marketer.post("/posts", data={"body": "First", "targets": "main", "when": "queue", "date": "",
                                          "time": ""})
    assert first.status_code == 303, first.get_data(as_text=True)[:2000]
    preview = marketer.get("/posts/queue-preview?when=next&targets=main", htmx=True).get_data(as_text=True)
    assert "Monday 01 June 2026, 09:00 EDT" in preview and "First" in preview and "Tue 02 Jun 09:00" in preview
    queued = marketer.get("/posts/queue-preview?when=queue&targets=main", htmx=True).get_data(as_text=True)
    assert "Tuesday 02 June 2026, 09:00 EDT" in queued and "queue-moves" not in queued
    refused = marketer.get("/posts/queue-preview?when=queue&targets=nowhere", htmx=True).get_data(as_text=True)
    assert "no channel named" in refused
    second = marketer.post("/posts", data={"body": "Urgent", "targets": "main", "when": "next", "date": "",
                                           "time": "", "intent": "approve"})
    assert second.status_code == 303
    posts = app.test_client().get("/api/v1/posts", headers=world.auth()).json["posts"]
    assert [(p["body"], p["local_time"], p["status"]) for p in posts] == [
        ("Urgent", "2026-06-01T09:00", "approved"), ("First", "2026-06-02T09:00", "draft")]


def test_the_composer_refuses_the_queue_on_a_channel_without_posting_times(app, world, browser_for):
    marketer = browser_for("marketer")
    answer = marketer.post("/posts", data={"body": "First", "targets": "main", "when": "queue"})
    assert answer.status_code == 422 and "has no posting times" in answer.get_data(as_text=True)
    assert app.test_client().get("/api/v1/posts", headers=world.auth()).json["posts"] == []


def test_the_calendar_shows_free_posting_times_as_drop_targets(app, world, browser_for):
    admin = browser_for("admin")
    admin.post(f"/channels/{_main_id(app, world)}/slots", data={"slots": "09:00 every day\n18:00 tue"})
    marketer = browser_for("marketer")
    taken = marketer.post("/posts", data={"body": "First", "targets": "main", "when": "queue"})
    assert taken.status_code == 303
    page = marketer.get("/calendar?view=month&date=2026-06-01").get_data(as_text=True)
    assert 'data-drop-date="2026-06-01" data-drop-slot="09:00"' not in page  # taken by the queued post
    assert 'data-drop-date="2026-06-02" data-drop-slot="09:00"' in page
    assert 'data-drop-date="2026-06-02" data-drop-slot="18:00"' in page
    assert 'data-drop-date="2026-06-03" data-drop-slot="18:00"' not in page  # not a posting time on Wednesdays
    week = marketer.get("/calendar?view=week&date=2026-06-01", htmx=True).get_data(as_text=True)
    assert week.count('data-drop-slot="09:00"') == 6  # Tuesday to Sunday; Monday's is taken
