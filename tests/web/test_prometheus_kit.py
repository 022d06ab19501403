"""The Prometheus kit: the rules pass Prometheus's own checks and unit tests, and the rules and the dashboard ask
only for series /metrics exposes."""

import json
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

OPS = ROOT / "docs" / "ops"
METRIC = re.compile(r"\b(tickwork_[a-z0-9_]+)")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not installed: scripts/test.sh installs it (Debian's prometheus package)")
    return found


@pytest.mark.only_backend("sqlite")
def test_the_alerting_rules_pass_promtool_check_rules():
    result = subprocess.run([promtool(), "check", "rules", "prometheus-rules.yml"], cwd=OPS, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout


@pytest.mark.only_backend("sqlite")
def test_the_alerting_rules_pass_their_unit_tests_with_promtool_test_rules():
    result = subprocess.run([promtool(), "test", "rules", "prometheus-rules.test.yml"], cwd=OPS, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.only_backend("sqlite")
def test_the_rules_and_the_dashboard_use_only_series_that_metrics_exposes(client, world):
    exposed = set(METRIC.findall(client.get("/metrics").get_data(as_text=True)))
    wanted = set(METRIC.findall((OPS / "prometheus-rules.yml").read_text())) - {"tickwork_rule"}  # a label
    dashboard = json.loads((OPS / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            wanted |= set(METRIC.findall(target["expr"]))
    assert wanted and wanted <= exposed, sorted(wanted - exposed)


def test_metrics_carry_what_the_alert_rules_look_at(app, client, world, clock):
    from tests.integration.alert_helpers import tick
    from tests.integration.clock_helpers import add_actions

    add_actions(app, world.workspace_id, 3)
    clock.advance(seconds=90)
    tick(app)
    text = client.get("/metrics").get_data(as_text=True)
    assert 'tickwork_channel_sends_10m{channel="Acme/main",outcome="published"} 3.0' in text
    assert "tickwork_claim_lateness_p95_10m_seconds 90.0" in text
    assert 'tickwork_queue_consumers_alive{queue="default"} 0.0' in text
    assert 'tickwork_clock_job_period_seconds{kind="archive"} 3600.0' in text
    assert 'tickwork_outcome_unknown_rows{workspace="Acme"} 0.0' in text
