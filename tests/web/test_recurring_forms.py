"""The rule builder's payload forms, through the Flask test client: a form per action type instead of JSON, each
filled back from a stored rule, the advanced JSON box kept beside them, and every bad input refused in place.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

import io
import re

import pytest
from sqlalchemy import func, select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.recurring.tables import RecurringSchedule
from tests.integration.recurring_helpers import make_rule
from tests.media_files import png_bytes

RULE = {"repeat": "weekly", "interval": "1", "weekdays": ["TU"], "start_date": "2026-06-02", "start_time": "09:00",
        "ends": "never", "channel": "main", "target_key": "team@example.test", "misfire": "skip", "month_day": "1",
        "ordinal": "-1", "weekday": "FR", "rrule": "", "exdates": "", "payload": ""}


def text(answer) -> str:
    return answer.get_data(as_text=True)


def _stored(app) -> list[RecurringSchedule]:
    with app.app_context(), read_session() as session:
        rules = list(session.scalars(select(RecurringSchedule).order_by(RecurringSchedule.id)))
        session.expunge_all()
        return rules


def _count(app) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(RecurringSchedule))


def _channel(app, world, name, kind, config):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name=name, kind=kind, config=config,
                            created_at=runtime().now()))


def _image(app, world) -> int:
    answer = app.test_client().post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                                    data={"file": (io.BytesIO(png_bytes()), "bread.png")})
    assert answer.status_code == 201, answer.json
    return answer.json["id"]


def _saved_id(answer) -> int:
    assert answer.status_code == 303, re.findall(r'role="alert">([^<]*)', text(answer)) or text(answer)[:600]
    return int(answer.headers["Location"].rsplit("/", 1)[1])


def test_each_action_type_has_its_own_form_and_the_typed_fields_make_the_payload(app, world, browser_for):
    media = [_image(app, world), _image(app, world)]
    marketer = browser_for("marketer")
    page = text(marketer.get("/recurring/new"))
    for label in ("Post text", "Media", "Subject", "Body", "HTML body", "Message", "More payload keys"):
        assert re.search(rf"<label for=\"[a-z_-]+\">{label}\b", page), label
    assert "{{ occurrence.local_date }}</code> (such as 2026-12-01)" in page  # the placeholders, beside the fields
    assert "FREQ=WEEKLY;BYDAY=TU" in page  # the RRULE stays in sight
    post = marketer.post("/recurring", {**RULE, "action_type": "publish_post",
                                        "publish_post-body": "Fresh bread, {{ occurrence.local_date }}\r\nCome early",
                                        "publish_post-media": f"{media[0]}, {media[1]}",
                                        "send_email-subject": "typed for another type, and ignored"})
    email = marketer.post("/recurring", {**RULE, "action_type": "send_email",
                                         "send_email-subject": "  Standup {{ occurrence.local_date }} ",
                                         "send_email-body": "Notes at {{ occurrence.local_time }}",
                                         "send_email-html": "<p>Notes</p>",
                                         "payload": '{"headers": {"Reply-To": "lead@example.test"}}'})
    sms = marketer.post("/recurring", {**RULE, "action_type": "send_sms", "target_key": "+15555550100",
                                       "send_sms-body": "Bins out tonight"})
    ids = [_saved_id(answer) for answer in (post, email, sms)]
    stored = {rule.id: rule.payload for rule in _stored(app)}
    assert stored[ids[0]] == {"body": "Fresh bread, {{ occurrence.local_date }}\nCome early", "media": media}
    assert stored[ids[1]] == {"subject": "Standup {{ occurrence.local_date }}", "body": "Notes at {{ occurrence.local_time }}",
                              "html": "<p>Notes</p>", "headers": {"Reply-To": "lead@example.test"}}
    assert stored[ids[2]] == {"body": "Bins out tonight"}


def test_editing_a_rule_fills_its_types_fields_keeps_extra_keys_in_the_json_box_and_saving_keeps_them(client, app,
                                                                                                      world,
                                                                                                      browser_for):
    payload = {"subject": "Digest {{ occurrence.local_date }}", "body": "Hello", "from": "news@example.test",
               "html": 7}  # a value no field can show stays in the box
    rule = make_rule(client, world, payload=payload)["id"]
    marketer = browser_for("marketer")
    form = text(marketer.get(f"/recurring/{rule}?edit=1"))
    assert 'name="send_email-subject" type="text" maxlength="2000" value="Digest {{ occurrence.local_date }}"' in form
    assert re.search(r'name="send_email-body"[^>]*>Hello</textarea>', form)
    box = re.search(r'<details class="payload-json" open>.*?<textarea id="payload" name="payload"[^>]*>(.*?)</textarea>',
                    form, re.S)
    assert box and '&#34;from&#34;: &#34;news@example.test&#34;' in box.group(1) and "&#34;html&#34;: 7" in box.group(1)
    assert "subject" not in box.group(1)  # each key in one place
    fields = dict(re.findall(r'<input id="([\w-]+)" name="\1" type="(?:text|date|time|number)"[^>]*value="([^"]*)"',
                             form))
    edited = {**RULE, "repeat": "daily", "start_date": "2026-06-01", "target_key": "list@example.test",
              "action_type": "send_email", "revision": "1", "start_time": "09:00",
              "send_email-subject": fields["send_email-subject"].replace("Digest", "Weekly digest"),
              "send_email-body": "Hello", "payload": '{"from": "news@example.test", "html": 7}'}
    saved = marketer.post(f"/recurring/{rule}", edited)
    assert saved.status_code == 303, re.findall(r'role="alert">([^<]*)', text(saved))
    [stored] = _stored(app)
    assert stored.payload == {**payload, "subject": "Weekly digest {{ occurrence.local_date }}"}
    assert stored.revision == 2
    again = marketer.post(f"/recurring/{rule}", {**edited, "revision": "2"})  # the form as it was: the same payload
    assert again.status_code == 303 and "Nothing changed." in text(marketer.get(f"/recurring/{rule}"))
    # Those who want JSON may leave the fields empty and write the whole payload in the box.
    as_json = marketer.post(f"/recurring/{rule}", {**edited, "revision": "2", "send_email-subject": "",
                                                   "send_email-body": "",
                                                   "payload": '{"subject": "S", "body": "B", "html": "<b>B</b>"}'})
    assert as_json.status_code == 303, re.findall(r'role="alert">([^<]*)', text(as_json))
    assert _stored(app)[0].payload == {"subject": "S", "body": "B", "html": "<b>B</b>"}


@pytest.mark.parametrize("action_type, payload, shown", [
    ("publish_post", {"body": "Line one\nLine two", "media": [3, 4]}, {"publish_post-body": "Line one\nLine two",
                                                                      "publish_post-media": "3\n4"}),
    ("send_sms", {"body": "Bins out", "to": "+15555550101"}, {"send_sms-body": "Bins out"}),
])
def test_each_types_edit_form_shows_what_its_stored_payload_says(client, app, world, browser_for, action_type,
                                                                 payload, shown):
    if "media" in payload:
        payload["media"] = [_image(app, world) for _ in payload["media"]]
        shown["publish_post-media"] = "\n".join(map(str, payload["media"]))
    rule = make_rule(client, world, action_type=action_type, payload=payload)["id"]
    form = text(browser_for("marketer").get(f"/recurring/{rule}?edit=1"))
    for name, value in shown.items():
        assert re.search(rf'name="{name}"[^>]*>{re.escape(value)}</textarea>', form), (name, value)
    extra = {key: value for key, value in payload.items() if key not in ("body", "media")}
    box = re.search(r'<textarea id="payload" name="payload"[^>]*>(.*?)</textarea>', form, re.S).group(1)
    assert ("&#34;to&#34;" in box) is bool(extra) and ("body" in box) is False


def test_bad_input_in_a_form_is_refused_on_its_field_keeps_what_was_typed_and_stores_nothing(app, world, browser_for):
    _channel(app, world, "short", "log", {"sends": "publish_post send_sms", "max_length": 20})
    _channel(app, world, "toots", "mastodon", {"url": "https://masto.example"})
    media = [_image(app, world) for _ in range(5)]
    email = {**RULE, "action_type": "send_email", "send_email-subject": "Standup", "send_email-body": "Notes"}
    post = {**RULE, "channel": "short", "action_type": "publish_post", "publish_post-body": "Short enough"}
    cases = [
        ({**email, "send_email-subject": "  "}, "send_email-subject", "The email needs a subject"),
        ({**email, "send_email-body": "", "send_email-html": ""}, "send_email-body", "needs a body or an HTML body"),
        ({**email, "send_email-subject": "One\r\ntwo"}, "send_email-subject", "Subject is one line"),
        ({**email, "send_email-body": "On {{ occurrence.weekday }}"}, "send_email-body", "is not filled in"),
        ({**email, "payload": '{"subject": "Another"}'}, "send_email-subject", "given differently in the JSON"),
        ({**email, "payload": "[1, 2]"}, "payload", "must be a JSON object"),
        ({**email, "payload": "{oops"}, "payload", "must be JSON"),
        ({**post, "publish_post-body": "x" * 21}, "publish_post-body",
         "short (log) refuses the payload&#39;s body: the text is 21 characters; at most 20"),
        ({**post, "publish_post-body": ""}, "publish_post-body", "The post needs its text"),
        ({**post, "publish_post-media": "999999"}, "publish_post-media", "there is no media item 999999"),
        ({**post, "publish_post-media": "12abc"}, "publish_post-media", "is not a media id"),
        ({**post, "publish_post-media": "99999999999999999999"}, "publish_post-media", "is not a media id"),
        ({**post, "publish_post-media": "https://example.test/a.png"}, "publish_post-media", "is a link"),
        ({**post, "publish_post-media": f"{media[0]}\n{media[0]}"}, "publish_post-media", "named twice"),
        ({**post, "channel": "toots", "publish_post-media": ",".join(map(str, media))}, "publish_post-media",
         "toots (mastodon) refuses the payload&#39;s media: 5 media items; at most 4"),
        ({**post, "channel": "short", "action_type": "send_sms", "send_sms-body": "y" * 30}, "send_sms-body",
         "the text is 30 characters; at most 20"),
        ({**post, "payload": '{"media": "3"}', "publish_post-media": ""}, "payload", "payload.media must be a list"),
        ({**post, "action_type": "send_sms", "send_sms-body": " "}, "send_sms-body", "The SMS needs a message"),
    ]
    marketer = browser_for("marketer")
    for change, field, words in cases:
        answer = marketer.post("/recurring", change)
        body = text(answer)
        assert answer.status_code == 422, (field, words, body[:300])
        assert words in body, (field, re.findall(r'role="alert">([^<]*)', body))
        assert re.search(rf'id="{field}"[^>]*aria-invalid="true"', body), (field, words)
        assert "team@example.test" in body  # what was typed is kept
        for name in ("send_email-subject", "publish_post-body"):
            typed = change.get(name, "").strip()
            if typed and field != name:
                assert typed.replace("'", "&#39;") in body, (name, typed)
    assert _count(app) == 0
    # The limit holds the text as an occurrence fills it in (19 characters here), not the placeholders' length.
    filled = marketer.post("/recurring", {**post, "publish_post-body": "{{ occurrence.local_date }} at "
                                                                       "{{ occurrence.local_time }}"})
    assert _saved_id(filled) and _count(app) == 1


def test_a_refused_edit_changes_nothing_and_re_shows_the_form_as_typed(client, app, world, browser_for):
    rule = make_rule(client, world, payload={"subject": "Digest", "body": "Hello"})["id"]
    before = _stored(app)[0]
    marketer = browser_for("marketer")
    refused = marketer.post(f"/recurring/{rule}", {**RULE, "action_type": "send_email", "revision": "1",
                                                   "send_email-subject": "", "send_email-body": "Changed body"})
    body = text(refused)
    assert refused.status_code == 422 and "The email needs a subject" in body
    assert re.search(r'id="send_email-subject"[^>]*aria-invalid="true"', body) and "Changed body</textarea>" in body
    after = _stored(app)[0]
    assert (after.payload, after.revision) == (before.payload, before.revision)


def test_the_api_meets_the_same_channel_checks_naming_the_payloads_key(client, app, world):
    _channel(app, world, "short", "log", {"sends": "publish_post", "max_length": 20})
    long = make_rule(client, world, expect=422, channel="short", action_type="publish_post",
                     payload={"body": "x" * 21})
    assert long["error"]["field"] == "payload.body" and long["error"]["code"] == "too_long"
    missing = make_rule(client, world, expect=422, channel="short", action_type="publish_post",
                        payload={"body": "Hi", "media": [424242]})
    assert missing["error"]["field"] == "payload.media" and "no media item 424242" in missing["error"]["message"]
    assert _count(app) == 0
