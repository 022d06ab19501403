"""The alerts pages: the list, an alert's page with its figures and links, acknowledging and silencing (with and
without htmx), destinations, rule settings and each member's choices; bad input is a message, never a 500."""

from sqlalchemy import select

from models.alerts import lifecycle
from models.alerts.tables import Alert, AlertPreference, AlertRuleSetting, workspace_scope
from models.core.database import read_session, write_session
from models.core.runtime import runtime


def raise_alert(app, world, *, rule="channel_failures", subject="channel:1", figures=None) -> int:
    with app.app_context(), write_session() as session:
        moved = lifecycle.fire(session, scope=workspace_scope(world.workspace_id), workspace_id=world.workspace_id,
                               rule=rule, subject=subject, now=runtime().now(), figures=figures or {
                                   "title": "Channel 'main' failed 12 sends", "channel_id": 1, "channel": "main",
                                   "failed": 12, "top_reasons": [{"reason": "permanent: bad token", "count": 12}],
                                   "action_ids": [7]})
        return moved.row.id


def alert(app, alert_id) -> Alert:
    with app.app_context(), read_session() as session:
        return session.get(Alert, alert_id)


def test_an_alerts_page_shows_its_figures_reasons_and_links_and_the_list_and_header_count_it(app, world, browser_for):
    alert_id = raise_alert(app, world)
    ops = browser_for("ops")
    listing = ops.get("/alerts").get_data(as_text=True)
    assert f'href="/alerts/{alert_id}"' in listing and "firing" in listing
    assert 'aria-label="1 firing"' in listing
    page = ops.get(f"/alerts/{alert_id}").get_data(as_text=True)
    assert "permanent: bad token" in page and "× 12" in page
    assert 'href="/actions/7"' in page and "Acknowledge" in page
    fragment = ops.get(f"/alerts/{alert_id}", htmx=True).get_data(as_text=True)
    assert "<html" not in fragment and "permanent: bad token" in fragment
    assert "Acknowledge" not in browser_for("marketer").get(f"/alerts/{alert_id}").get_data(as_text=True)


def test_ops_acknowledge_an_alert_and_the_state_card_replaces_itself_and_a_second_time_is_a_message(
        app, world, browser_for):
    alert_id = raise_alert(app, world)
    ops = browser_for("ops")
    answer = ops.post(f"/alerts/{alert_id}/acknowledge", htmx=True)
    assert answer.status_code == 200
    body = answer.get_data(as_text=True)
    assert 'id="alert-state"' in body and "acknowledged" in body and "ops@acme.test" in body
    assert alert(app, alert_id).acknowledged_by_id == world.users["ops"]
    again = ops.post(f"/alerts/{alert_id}/acknowledge")
    assert again.status_code == 409 and "only a firing alert" in again.get_data(as_text=True)
    assert browser_for("marketer").post(f"/alerts/{alert_id}/acknowledge").status_code == 403


def test_silencing_takes_hours_from_one_to_a_week_and_refuses_anything_else_changing_nothing(app, world, browser_for):
    alert_id = raise_alert(app, world)
    ops = browser_for("ops")
    for bad in ("", "0", "169", "soon", "1e400", "nan"):
        answer = ops.post(f"/alerts/{alert_id}/silence", {"hours": bad})
        assert answer.status_code == 422, bad
        assert "1 to 168 hours" in answer.get_data(as_text=True)
    assert alert(app, alert_id).silenced_until is None
    assert ops.post(f"/alerts/{alert_id}/silence", {"hours": "4"}).status_code == 303
    assert alert(app, alert_id).silenced_until is not None


def test_another_workspaces_alert_is_not_found(app, world, browser_for):
    from tests.conftest import make_world

    other = make_world(app, name="Other")
    theirs = raise_alert(app, other)
    ops = browser_for("ops")
    assert ops.get(f"/alerts/{theirs}").status_code == 404
    assert ops.post(f"/alerts/{theirs}/acknowledge").status_code == 404
    assert alert(app, theirs).state == "firing"


def test_admins_choose_destinations_and_a_bad_one_is_a_message_naming_the_field(app, world, browser_for):
    admin = browser_for("admin")
    refused = admin.post("/alerts/destinations", {"channel": "nope", "recipient": "ops@acme.test"})
    assert refused.status_code == 422 and "no channel named" in refused.get_data(as_text=True)
    refused = admin.post("/alerts/destinations", {"channel": "main", "recipient": ""})
    assert refused.status_code == 422 and 'aria-invalid="true"' in refused.get_data(as_text=True)
    refused = admin.post("/alerts/destinations", {"channel": "main", "recipient": "x", "member": "stranger@x.test"})
    assert refused.status_code == 422 and "not a member" in refused.get_data(as_text=True)
    assert admin.post("/alerts/destinations", {"channel": "main", "recipient": "ops-room",
                                               "member": "ops@acme.test"}).status_code == 303
    assert "main (log) → ops-room" in admin.get("/alerts").get_data(as_text=True)
    assert browser_for("ops").post("/alerts/destinations", {"channel": "main", "recipient": "y"}).status_code == 403


def test_admins_set_a_workspace_rule_and_bad_numbers_are_refused_changing_nothing(app, world, browser_for):
    admin = browser_for("admin")
    for form, words in (({"rule": "channel_failures", "threshold": "lots"}, "threshold is a number"),
                        ({"rule": "channel_failures", "window": "30"}, "from 60 seconds"),
                        ({"rule": "clock_stale", "threshold": "3"}, "no workspace alert rule")):
        answer = admin.post("/alerts/rules", {**form, "enabled": "1"})
        assert answer.status_code == 422 and words in answer.get_data(as_text=True), form
    with app.app_context(), read_session() as session:
        assert session.scalars(select(AlertRuleSetting)).all() == []
    assert admin.post("/alerts/rules", {"rule": "channel_failures", "threshold": "25", "window": "1800",
                                        "cooldown": "7200", "enabled": "1"}).status_code == 303
    with app.app_context(), read_session() as session:
        (row,) = session.scalars(select(AlertRuleSetting)).all()
        assert (row.threshold, row.window_seconds, row.cooldown_seconds, row.enabled) == (25, 1800, 7200, True)


def test_a_rules_window_and_cooldown_are_a_number_and_a_unit_shown_back_in_words(app, world, browser_for):
    admin = browser_for("admin")
    base = {"rule": "channel_failures", "threshold": "25", "enabled": "1"}
    for form, words in (({"window": "1.5", "window_unit": "hours"}, "whole number of hours"),
                        ({"window": "two", "window_unit": "minutes"}, "whole number of minutes"),
                        ({"window": "\u00b2", "window_unit": "minutes"}, "whole number of minutes"),
                        ({"cooldown": "2", "cooldown_unit": "fortnights"}, "seconds, minutes, hours or days"),
                        ({"window": "30", "window_unit": "seconds"}, "from 60 seconds")):
        answer = admin.post("/alerts/rules", {**base, **form})
        assert answer.status_code == 422 and words in answer.get_data(as_text=True), form
    with app.app_context(), read_session() as session:
        assert session.scalars(select(AlertRuleSetting)).all() == []
    saved = admin.post("/alerts/rules", {**base, "window": "30", "window_unit": "minutes", "cooldown": "2",
                                         "cooldown_unit": "hours"})
    assert saved.status_code == 303
    with app.app_context(), read_session() as session:
        (row,) = session.scalars(select(AlertRuleSetting)).all()
        assert (row.window_seconds, row.cooldown_seconds) == (1800, 7200)
    page = admin.get("/alerts").get_data(as_text=True)
    row_html = page.split('id="rule-channel_failures"')[1].split("</tr>")[0]
    assert 'name="window" form="rule-channel_failures" type="number" min="0" max="999999999" value="30"' in row_html
    assert '<option value="minutes" selected>minutes</option>' in row_html
    assert 'value="2"' in row_html and '<option value="hours" selected>hours</option>' in row_html
    shown = browser_for("ops").get("/alerts").get_data(as_text=True)  # read, not edited: in words
    assert "<td>30 minutes</td>" in shown and "<td>2 hours</td>" in shown


def test_every_member_chooses_their_own_alerts_at_once_or_in_the_digest(app, world, browser_for):
    marketer = browser_for("marketer")
    assert marketer.post("/alerts/preferences", {"delivery-channel_failures": "digest"}).status_code == 303
    refused = marketer.post("/alerts/preferences", {"delivery-channel_failures": "hourly"})
    assert refused.status_code == 422 and "immediate or digest" in refused.get_data(as_text=True)
    with app.app_context(), read_session() as session:
        (row,) = session.scalars(select(AlertPreference)).all()
        assert (row.user_id, row.rule, row.delivery) == (world.users["marketer"], "channel_failures", "digest")


def test_the_health_page_names_the_open_alerts_with_links(app, world, browser_for):
    alert_id = raise_alert(app, world)
    page = browser_for("ops").get("/health").get_data(as_text=True)
    assert f'href="/alerts/{alert_id}"' in page and "Channel &#39;main&#39; failed 12 sends" in page
    fragment = browser_for("ops").get("/health", htmx=True).get_data(as_text=True)
    assert f'href="/alerts/{alert_id}"' in fragment
