"""The rendering budget in the shells: a template over it is a 422 that says so when a campaign is
saved (API and dashboard) and when it is previewed, and, should one slip past on a branch the
sample contact never takes, its send fails for good before any provider call. SQLite only: the
budget is the sandbox's, not the database's."""

import pytest
from sqlalchemy import func, select

from models.core.database import read_session
from models.drips.tables import Campaign
from tests.integration.drip_helpers import BASE_URL, attempts, campaign, contacts, enroll, enrollments, outbox_count, tick

pytestmark = pytest.mark.only_backend("sqlite")

BOMB = "{{ ('a'*(10**9))|length }}"
LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def _campaigns(app) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(Campaign))


def test_a_template_over_budget_is_a_422_naming_the_field_when_a_campaign_is_saved(app, world, client):
    before = _campaigns(app)
    for where, source in (("body", BOMB), ("subject", LOOPS)):
        step = {"delay": "PT0S", "subject": "Hi", "body": "Hello", where: source}
        answer = client.post("/api/v1/campaigns", headers=world.auth("marketer"),
                             json={"name": "Bomb", "channel": "main", "steps": [step]})
        assert answer.status_code == 422, answer.json
        error = answer.json["error"]
        assert (error["code"], error["field"]) == ("over_budget", f"steps[0].{where}"), error
        assert "over the rendering budget" in error["message"], error
    assert _campaigns(app) == before


def test_a_template_over_budget_is_refused_at_preview_and_at_save_on_the_dashboard(app, world, browser_for):
    browser = browser_for("marketer")
    preview = browser.post("/campaigns/preview", {"step": "0", "step-0-subject": "Hi", "step-0-body": BOMB},
                           htmx=True)
    assert preview.status_code == 422
    assert "over the rendering budget" in preview.get_data(as_text=True)
    fine = browser.post("/campaigns/preview", {"step": "0", "step-0-body": "{{ 'ab' * 3 }}"}, htmx=True)
    assert fine.status_code == 200 and "ababab" in fine.get_data(as_text=True)
    before = _campaigns(app)
    saved = browser.post("/campaigns", {"name": "Bomb", "channel": "main", "on_failure": "skip", "step_count": "1",
                                        "step-0-delay": "PT0S", "step-0-subject": "Hi", "step-0-body": BOMB})
    assert saved.status_code == 422 and "over the rendering budget" in saved.get_data(as_text=True)
    assert _campaigns(app) == before


def test_a_template_over_budget_on_a_branch_fails_its_send_for_good_before_any_provider_call(app, world, clock):
    steps = [{"delay": "PT0S", "subject": "Hi", "body": "{% if attributes.vip %}" + BOMB + "{% endif %}Hello"}]
    campaign_id = campaign(app, world.workspace_id, steps=steps, name="Branch")  # the sample is no vip: saved
    [plain] = contacts(app, world.workspace_id, 1, prefix="plain", attributes={"vip": False})
    [vip] = contacts(app, world.workspace_id, 1, prefix="vip", attributes={"vip": True})
    enroll(app, world.workspace_id, campaign_id, [plain, vip])
    by_target = {row.target_key: row for row in attempts(app)}
    failed = by_target["vip0@example.com"]
    assert (failed.status, failed.failure_code) == ("failed", "content_error")
    assert failed.last_error.startswith("template: over its rendering budget: '*' would make a value"), failed.last_error
    assert by_target["plain0@example.com"].status == "queued"
    assert sorted(e.exit_reason or "" for e in enrollments(app, campaign_id)) == ["", "send_failed"]
    tick(app)
    assert outbox_count(app) == 1  # the plain contact's Hello only
