"""The operator's alert settings: a bad value stops the start with one line naming it."""

from datetime import timedelta

import pytest

from models.alerts.operator import direct_destinations, rule_settings
from models.alerts.rules import RULES
from models.core.errors import ConfigurationError


def test_the_defaults_make_sense_on_day_one():
    assert RULES["clock_stale"].defaults.threshold == 5
    assert all(rule.defaults.cooldown == timedelta(minutes=60) for rule in RULES.values())
    assert RULES["lateness_p95"].defaults.window == timedelta(minutes=10)


def test_the_operators_rule_settings_override_the_defaults():
    chosen = rule_settings('{"clock_stale": {"threshold": 10, "cooldown": 7200}, "disk_full": {"enabled": false}}')
    assert chosen["clock_stale"].threshold == 10 and chosen["clock_stale"].cooldown == timedelta(hours=2)
    assert chosen["disk_full"].enabled is False


@pytest.mark.parametrize("text, words", [
    ("[1]", "JSON object"),
    ("nope", "TICKWORK_ALERT_RULES_JSON"),
    ('{"no_such_rule": {}}', "unknown alert rule 'no_such_rule'"),
    ('{"clock_stale": 5}', "clock_stale: expected an object"),
    ('{"clock_stale": {"threshold": -1}}', "clock_stale.threshold"),
    ('{"clock_stale": {"threshold": true}}', "clock_stale.threshold"),
    ('{"clock_stale": {"cooldown": 5}}', "clock_stale.cooldown is from 60 seconds"),
    ('{"clock_stale": {"often": 5}}', "unknown setting 'often'"),
    ('{"clock_stale": {"enabled": "yes"}}', "clock_stale.enabled"),
])
def test_a_bad_rule_setting_stops_the_start_naming_it(text, words):
    with pytest.raises(ConfigurationError) as refused:
        rule_settings(text)
    assert words in str(refused.value) and "TICKWORK_ALERT_RULES_JSON" in str(refused.value)


def test_the_relay_url_becomes_an_smtp_destination_per_recipient():
    chosen = direct_destinations({"TICKWORK_ALERT_SMTP_URL": "smtp://ops%40x:p%20w@relay.example:2525?security=none",
                                  "TICKWORK_ALERT_EMAIL_TO": "a@example.com, b@example.com"})
    assert [d.recipient for d in chosen] == ["a@example.com", "b@example.com"]
    assert chosen[0].config == {"host": "relay.example", "port": 2525, "security": "none", "username": "ops@x",
                                "from": "tickwork@localhost"}
    assert chosen[0].secret == "p w"


@pytest.mark.parametrize("settings, words", [
    ({"TICKWORK_ALERT_SMTP_URL": "smtp://relay.example"}, "TICKWORK_ALERT_EMAIL_TO"),
    ({"TICKWORK_ALERT_SMTP_URL": "http://relay.example", "TICKWORK_ALERT_EMAIL_TO": "a@x"}, "expected smtp://"),
    ({"TICKWORK_ALERT_SMTP_URL": "smtp://relay.example:99999", "TICKWORK_ALERT_EMAIL_TO": "a@x"}, "expected smtp://"),
    ({"TICKWORK_ALERT_SMTP_URL": "smtp://relay?security=tls", "TICKWORK_ALERT_EMAIL_TO": "a@x"}, "security"),
    ({"TICKWORK_ALERT_WEBHOOK_URL": "ftp://x"}, "TICKWORK_ALERT_WEBHOOK_URL"),
])
def test_a_bad_destination_setting_stops_the_start_naming_it(settings, words):
    with pytest.raises(ConfigurationError) as refused:
        direct_destinations(settings)
    assert words in str(refused.value)


def test_the_operations_guide_has_a_section_per_alert_rule_and_the_prometheus_rules_name_only_real_ones():
    import re

    from tests.conftest import ROOT

    guide = (ROOT / "docs" / "operations.md").read_text().split("## Alerts", 1)[1]
    for name in RULES:
        assert f"### `{name}`" in guide, f"docs/operations.md has no section for the {name} alert"
        assert f"| `{name}` |" in guide, f"the alerts table of docs/operations.md misses {name}"
    labelled = set(re.findall(r"tickwork_rule: (\w+)", (ROOT / "docs" / "ops" / "prometheus-rules.yml").read_text()))
    assert labelled and labelled <= set(RULES)
