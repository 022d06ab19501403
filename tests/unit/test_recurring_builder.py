"""The rule builder's choices and a payload's placeholders: pure, no database."""

from datetime import datetime

import pytest

from models.core.errors import InvalidInput
from models.core.policy import Policy
from models.recurring.checks import check_template, choices_from_rrule, rrule_from_choices
from models.recurring.reading import occurrence_values, render_payload


@pytest.mark.parametrize("choices, rrule", [
    ({"repeat": "daily"}, "FREQ=DAILY"),
    ({"repeat": "daily", "interval": "2"}, "FREQ=DAILY;INTERVAL=2"),
    ({"repeat": "weekdays", "interval": "3"}, "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"),  # every weekday, always
    ({"repeat": "weekly", "weekdays": ["TH", "TU"]}, "FREQ=WEEKLY;BYDAY=TU,TH"),
    ({"repeat": "monthly_day", "month_day": "15", "count": "6"}, "FREQ=MONTHLY;BYMONTHDAY=15;COUNT=6"),
    ({"repeat": "monthly_day", "month_day": "last"}, "FREQ=MONTHLY;BYMONTHDAY=-1"),
    ({"repeat": "monthly_weekday", "ordinal": "-1", "weekday": "FR"}, "FREQ=MONTHLY;BYDAY=-1FR"),
    ({"repeat": "custom", "raw": " FREQ=YEARLY;BYMONTH=12 "}, "FREQ=YEARLY;BYMONTH=12"),
])
def test_the_builder_writes_the_common_rules_and_reads_them_back(choices, rrule):
    assert rrule_from_choices(**choices) == rrule
    read = choices_from_rrule(rrule)
    assert read["repeat"] == ("weekdays" if choices["repeat"] == "weekdays" else choices["repeat"])


@pytest.mark.parametrize("choices, field", [
    ({"repeat": "fortnightly"}, "repeat"),
    ({"repeat": "weekly", "weekdays": []}, "weekdays"),
    ({"repeat": "weekly", "weekdays": ["XX"]}, "weekdays"),
    ({"repeat": "monthly_day", "month_day": "0"}, "month_day"),
    ({"repeat": "monthly_weekday", "ordinal": "5", "weekday": "FR"}, "ordinal"),
    ({"repeat": "monthly_weekday", "ordinal": "1", "weekday": "Friday"}, "weekday"),
    ({"repeat": "daily", "interval": "-1"}, "interval"),
    ({"repeat": "daily", "count": "0"}, "count"),
    ({"repeat": "custom", "raw": "  "}, "rrule"),
])
def test_a_wrong_choice_is_refused_naming_its_form_field(choices, field):
    with pytest.raises(InvalidInput) as refused:
        rrule_from_choices(**choices)
    assert refused.value.field == field


def test_a_rule_written_another_way_stays_custom():
    assert choices_from_rrule("FREQ=WEEKLY;BYDAY=TU;WKST=SU")["repeat"] == "custom"
    assert choices_from_rrule("FREQ=WEEKLY;BYDAY=TH,TU")["repeat"] == "custom"  # the builder writes TU,TH


def test_only_the_two_placeholders_are_filled_in_and_everything_else_is_copied_as_it_is():
    template = {"subject": "Digest of {{occurrence.local_date}} at {{ occurrence.local_time }}",
                "postmark": "Hello {{ name }}", "list": ["{{ occurrence.local_time }}", 3, None], "n": 1.5}
    values = occurrence_values(datetime(2026, 11, 1, 1, 30))
    assert render_payload(template, values) == {
        "subject": "Digest of 2026-11-01 at 01:30", "postmark": "Hello {{ name }}", "list": ["01:30", 3, None],
        "n": 1.5}
    assert check_template(template, Policy()) is template
    for bad in ({"a": "{{ occurrence }}"}, {"a": ["{{ occurrence.local_date|upper }}"]},
                {"a": {"b": "{{ occurrence.__class__ }}"}}, ["not", "an", "object"]):
        with pytest.raises(InvalidInput) as refused:
            check_template(bad, Policy())
        assert refused.value.field == "payload"
