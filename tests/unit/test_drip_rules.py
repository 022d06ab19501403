"""The drips' pure rules, without a database: when a step is due, what a template renders, what an
unsubscribe token proves, what a provider's webhook proves, what an ended attempt means, and how a
CSV file is read."""

from datetime import datetime, timedelta, timezone

import pytest

from models.actions.tables import ScheduledAction
from models.channels.providers.base import BadHeaders, payload_headers
from models.core.errors import InvalidInput
from models.core.secrets_box import SecretBox
from models.drips.schedule import contact_zone, plan_step, window_of
from models.drips.sending import verdict
from models.drips.tables import SendStatus
from models.drips.templates import SAMPLE_CONTACT, TemplateProblem, check_template, render, template_context
from models.drips.unsubscribe import ONE_CLICK, contact_of_token, list_unsubscribe_headers, unsubscribe_token, unsubscribe_url
from models.drips.webhooks import hard_bounce_email, is_stop, postmark_token_matches, postmark_token, twilio_signature
from models.imports.csv_file import MAX_LINE_BYTES, read_csv
from models.timing.wall_time import to_local

NY = "America/New_York"
WEEKDAYS_9_TO_8 = window_of({"start": "09:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri"]}, None)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def local(instant: datetime, zone: str = NY) -> str:
    return to_local(instant, zone).strftime("%a %Y-%m-%d %H:%M %Z")


# -- when a step is due -------------------------------------------------------------------------


def test_a_step_due_inside_the_window_goes_at_once_and_one_due_at_night_waits_for_the_morning():
    inside = plan_step(utc(2026, 6, 2, 15, 0), "PT0S", WEEKDAYS_9_TO_8, NY)  # Tue 11:00 in New York
    assert (inside.instant, inside.held_by_window, inside.note) == (utc(2026, 6, 2, 15, 0), False, None)
    night = plan_step(utc(2026, 6, 2, 7, 10), "PT0S", WEEKDAYS_9_TO_8, NY)  # Tue 03:10
    assert local(night.instant) == "Tue 2026-06-02 09:00 EDT"
    assert night.held_by_window and "held until the send window opens at 09:00" in night.note


def test_a_window_that_leaves_out_the_weekend_holds_a_saturday_step_until_monday():
    saturday = plan_step(utc(2026, 6, 6, 15, 0), "PT0S", WEEKDAYS_9_TO_8, NY)
    assert local(saturday.instant) == "Mon 2026-06-08 09:00 EDT"


def test_a_window_across_the_spring_forward_opens_at_its_wall_time_in_the_new_offset():
    # Sunday 8 March 2026, New York springs forward at 02:00; the window opens at 09:00 EDT, not EST.
    planned = plan_step(utc(2026, 3, 8, 6, 30), "PT0S", window_of({"start": "09:00", "end": "20:00",
                                                                  "days": ["sun"]}, None), NY)
    assert local(planned.instant) == "Sun 2026-03-08 09:00 EDT"
    assert planned.instant == utc(2026, 3, 8, 13, 0)


def test_day_delays_keep_the_local_time_across_dst_and_hours_are_elapsed_time():
    saturday_9am = utc(2026, 3, 7, 14, 0)  # 09:00 EST, the day before the clocks spring forward
    assert local(plan_step(saturday_9am, "P2D", None, NY).instant) == "Mon 2026-03-09 09:00 EDT"
    assert plan_step(saturday_9am, "PT48H", None, NY).instant == saturday_9am + timedelta(hours=48)
    assert local(plan_step(saturday_9am, "PT48H", None, NY).instant) == "Mon 2026-03-09 10:00 EDT"
    fall = utc(2026, 10, 31, 13, 0)  # Saturday 09:00 EDT, the day before they fall back
    assert local(plan_step(fall, "P1D", None, NY).instant) == "Sun 2026-11-01 09:00 EST"


def test_a_step_is_never_planned_before_not_before_and_its_window_still_applies():
    planned = plan_step(utc(2026, 6, 1, 12, 0), "PT0S", WEEKDAYS_9_TO_8, NY, not_before=utc(2026, 6, 2, 2, 0))
    assert local(planned.instant) == "Tue 2026-06-02 09:00 EDT"


def test_a_garbage_zone_falls_back_to_the_workspaces_then_to_utc_and_says_so():
    assert contact_zone("Europe/Paris", NY) == ("Europe/Paris", None)
    assert contact_zone(None, NY) == (NY, None)
    zone, note = contact_zone("Mars/Olympus", NY)
    assert zone == NY and "'Mars/Olympus' is not valid" in note
    zone, note = contact_zone("Mars/Olympus", "Venus/Maxwell")
    assert zone == "UTC" and "UTC was used" in note
    planned = plan_step(utc(2026, 6, 2, 7, 10), "PT0S", WEEKDAYS_9_TO_8, NY, zone_note=note)
    assert planned.note.startswith("Neither the contact's zone") and "held until" in planned.note


# -- templates ---------------------------------------------------------------------------------


def test_a_template_renders_in_the_sandbox_and_a_missing_attribute_is_an_error_not_a_blank():
    context = template_context({**SAMPLE_CONTACT, "attributes": {"plan": "pro"}}, campaign_name="Welcome",
                               step_number=2, unsubscribe_url="https://t.example/u/1")
    assert render("Hi {{ contact.first_name }}, {{ attributes.plan }} ({{ step.number }})", context) == "Hi Ada, pro (2)"
    with pytest.raises(TemplateProblem) as missing:
        render("Your {{ attributes.coupon }}", context)
    assert missing.value.message == "template: missing attribute 'coupon'"
    with pytest.raises(TemplateProblem) as undefined:
        render("{{ nobody }}", context)
    assert undefined.value.message == "template: missing attribute 'nobody'"
    with pytest.raises(TemplateProblem, match="not allowed"):
        render("{{ contact.__class__.__mro__ }}", context)
    with pytest.raises(TemplateProblem, match="template: ZeroDivisionError"):
        render("{{ 1 / 0 }}", context)


def test_a_template_that_does_not_compile_is_refused_at_save_naming_its_field_and_line():
    assert check_template("Hi {{ contact.name }}", "steps[0].body") == "Hi {{ contact.name }}"
    with pytest.raises(InvalidInput) as refused:
        check_template("line one\n{% if %}", "steps[1].body")
    assert refused.value.field == "steps[1].body" and "(line 2)" in refused.value.message
    assert check_template("", "steps[0].subject", required=False) is None
    with pytest.raises(InvalidInput):
        check_template(None, "steps[0].body")



def test_names_a_template_makes_itself_are_its_own_not_unknown_fields():
    """A macro, a loop variable and a ``set`` are the template's own; only outside names are checked."""
    own = ("{% macro greet(who) %}Hi {{ who }}{% endmacro %}{{ greet(contact.first_name) }}"
           "{% set plan = attributes.plan | default('free') %}{% for word in ['a', 'b'] %}{{ word }}{{ plan }}{% endfor %}")
    assert check_template(own, "steps[0].body") == own
    with pytest.raises(InvalidInput) as refused:
        check_template("{{ greeting(contact.name) }}", "steps[0].body")
    assert refused.value.code == "unknown_field" and "greeting" in refused.value.message

# -- the unsubscribe link ------------------------------------------------------------------------


def test_an_unsubscribe_token_names_its_contact_in_its_workspace_only_and_cannot_be_altered():
    box = SecretBox("app-secret")
    token = unsubscribe_token(box, 7, 42)
    assert token == unsubscribe_token(box, 7, 42)  # the same link every time: it never expires
    assert contact_of_token(box, 7, token) == 42
    assert contact_of_token(box, 8, token) is None  # made for workspace 7, shown to workspace 8
    payload, signature = token.split(".")
    assert contact_of_token(box, 7, f"NDM.{signature}") is None  # another contact, same signature
    assert contact_of_token(box, 7, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert contact_of_token(SecretBox("another-secret"), 7, token) is None
    assert contact_of_token(box, 7, "x" * 500) is None
    assert unsubscribe_url("https://t.example/", box, 7, 42) == f"https://t.example/unsubscribe/7/{token}"


def test_the_list_unsubscribe_headers_are_rfc_8058_one_click_with_mailto_only_when_a_mailbox_is_named():
    assert list_unsubscribe_headers("https://t.example/u") == {
        "List-Unsubscribe": "<https://t.example/u>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    assert list_unsubscribe_headers("https://t.example/u", "leave@shop.example")["List-Unsubscribe"] == (
        "<https://t.example/u>, <mailto:leave@shop.example?subject=unsubscribe>")
    assert ONE_CLICK == "List-Unsubscribe=One-Click"


def test_a_payloads_headers_are_one_line_each_and_never_the_providers_own():
    assert payload_headers({"headers": {"List-Unsubscribe": "<https://x>"}}) == [("List-Unsubscribe", "<https://x>")]
    for bad in ({"X-A": "one\r\nBcc: everyone@example.com"}, {"Bcc": "x@example.com"}, {"Bad Name": "x"},
                {"X-A": 3}, "not a dict"):
        with pytest.raises(BadHeaders):
            payload_headers({"headers": bad})


# -- providers' webhooks -------------------------------------------------------------------------


def test_the_twilio_signature_matches_twilios_published_vectors():
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    params = [("CallSid", "CA1234567890ABCDE"), ("Caller", "+14158675309"), ("Digits", "1234"),
              ("From", "+14158675309"), ("To", "+18005551212")]
    assert twilio_signature("12345", url, params) == "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    repeated = [("Sid", "CA123"), ("SidAccount", "AC123"), ("Digits", "5678"), ("Digits", "1234"), ("Digits", "1234")]
    assert twilio_signature("12345", url, repeated) == "IK+Dwps556ElfBT0I3Rgjkr1wJU="
    assert [is_stop(word) for word in ("STOP", " stop ", "Quit", "StopAll", "stop please", None)] == [
        True, True, True, True, False, False]


def test_a_postmark_webhook_token_is_made_with_the_channels_secret_and_only_hard_bounces_count():
    token = postmark_token(3, "server-token")
    assert postmark_token_matches(3, "server-token", token)
    assert not postmark_token_matches(4, "server-token", token)
    assert not postmark_token_matches(3, "other-token", token)
    assert not postmark_token_matches(3, None, token)
    assert hard_bounce_email({"RecordType": "Bounce", "Type": "HardBounce", "Email": " Ann@Example.com"}) == (
        "ann@example.com")
    assert hard_bounce_email({"RecordType": "Bounce", "Type": "SoftBounce", "Email": "a@example.com"}) is None
    assert hard_bounce_email({"RecordType": "Delivery", "Email": "a@example.com"}) is None
    assert hard_bounce_email("not a record") is None


# -- what an ended attempt means -----------------------------------------------------------------


def attempt(status: str, failure_code: str | None = None, cancel_kind: str | None = None) -> ScheduledAction:
    return ScheduledAction(id=1, status=status, failure_code=failure_code, cancel_kind=cancel_kind,
                           last_error="words", provider_id="p-1")


@pytest.mark.parametrize("status, code, kind, send, goes_on, failure, exits, hold", [
    ("published", None, None, SendStatus.SENT, True, None, False, False),
    ("failed", "duplicate_of_published", None, SendStatus.SENT, True, None, False, False),
    ("failed", "permanent", None, SendStatus.FAILED, False, "send_failed", False, False),
    ("failed", "content_error", None, SendStatus.FAILED, False, "send_failed", False, False),
    ("failed", "attempts_exhausted", None, SendStatus.FAILED, False, "send_failed", False, False),
    ("failed", "outcome_unknown", None, SendStatus.UNKNOWN, True, None, False, False),
    ("failed", "worker_lost", None, SendStatus.UNKNOWN, True, None, False, False),
    ("failed", "missed_window", None, SendStatus.MISSED, False, "missed_window", False, False),
    ("cancelled", None, "exited", SendStatus.EXITED, False, None, True, False),
    ("cancelled", None, "person", SendStatus.SKIPPED, True, None, False, False),
    ("cancelled", None, "paused", None, True, None, False, True),
])
def test_each_way_an_attempt_ends_settles_its_send_once_as_the_outcome_table_says(status, code, kind, send, goes_on,
                                                                                  failure, exits, hold):
    said = verdict(attempt(status, code, kind))
    assert (said.status, said.go_on, said.failure, said.exits, said.hold) == (send, goes_on, failure, exits, hold)
    if kind == "person":
        assert said.reason == "cancelled_by_person"


# -- reading a CSV file --------------------------------------------------------------------------


def test_a_csv_file_is_read_as_utf8_with_or_without_a_bom_with_its_header_and_line_numbers():
    text = "Email,Name\nann@example.com,Ann\n\n\"bob@example.com\",\"Bob, \"\"the builder\"\"\"\nc@example.com\n"
    for data in (text.encode(), b"\xef\xbb\xbf" + text.encode()):
        read = read_csv(data)
        assert read.columns == ["email", "name"]
        assert [(line.number, line.values) for line in read.lines] == [
            (2, {"email": "ann@example.com", "name": "Ann"}),
            (4, {"email": "bob@example.com", "name": 'Bob, "the builder"'}),
            (5, {"email": "c@example.com", "name": ""})]
    extra = read_csv(b"email\na@example.com,surplus\n").lines[0]
    assert extra.problem == "has 2 fields; the header has 1"


@pytest.mark.parametrize("data, code, line, words", [
    ("email\nann@example.com\nzo\u00eb@example.com\n".encode("latin-1"), "not_utf8", 3, "line 3 is not UTF-8"),
    ("email\nann@example.com\n".encode("utf-16"), "not_utf8", 1, "UTF-16"),
    (b"email\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", "line_too_long", 2, "line 2 is 65,537 bytes long"),
    (b"email\n\"unclosed\n", "bad_csv", 2, "line 2"),
    (b"email,email\na,b\n", "bad_header", 1, "twice"),
    (b"", "empty", None, "empty"),
    (b"email\n\n", "empty", None, "no lines"),
    (b"ok\x00\n", "not_text", 1, "NUL"),
])
def test_a_file_that_cannot_be_read_is_refused_whole_with_its_line(data, code, line, words):
    with pytest.raises(InvalidInput) as refused:
        read_csv(data)
    assert (refused.value.code, refused.value.field, refused.value.detail.get("line")) == (code, "file", line)
    assert words in refused.value.message
