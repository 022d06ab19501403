"""The campaign editor's steps on one page: added, removed and moved before saving (with htmx the step list
comes back alone, without it the page), saved together in one transaction through the domain's create and
update, a refused save changing nothing and showing every step as typed with the error on its step, and an
active campaign's steps kept from changing under the contacts who are at them."""

import re

import pytest
from sqlalchemy import select

from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.drips.tables import Campaign, CampaignVersion, Enrollment, Step
from tests.integration.drip_helpers import BASE_URL, contacts, enroll
from tests.web.access_world import changed_tables, snapshot


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


TOP = {"name": "Welcome", "channel": "main", "on_failure": "exit", "window_start": "", "window_end": ""}


def form_of(steps: list[dict], **top) -> dict:
    """The editor's form for ``steps`` (each: wait, unit, subject, body, optional id), in that order."""
    form = {**TOP, **top, "step_count": str(len(steps))}
    for index, step in enumerate(steps):
        for key, value in step.items():
            form[f"step-{index}-{key}"] = str(value)
    return form


THREE = [{"wait": "0", "unit": "minutes", "subject": "Hello", "body": "First, {{ contact.first_name }}"},
         {"wait": "2", "unit": "days", "subject": "Two days on", "body": "Second"},
         {"wait": "3", "unit": "hours", "subject": "Soon after", "body": "Third"}]


def stored(app, campaign_id: int, number: int | None = None) -> list[tuple[str, str]]:
    """(delay, body) of each step of a version of the campaign (the newest by default), in order."""
    with app.app_context(), read_session() as session:
        versions = select(CampaignVersion.id).where(CampaignVersion.campaign_id == campaign_id)
        versions = versions.where(CampaignVersion.number == number) if number else versions.order_by(
            CampaignVersion.number.desc()).limit(1)
        version_id = session.scalar(versions)
        return [(step.delay, step.body) for step in session.scalars(
            select(Step).where(Step.version_id == version_id).order_by(Step.position))]


def step_ids(app, campaign_id: int) -> list[int]:
    with app.app_context(), read_session() as session:
        version_id = session.scalar(select(CampaignVersion.id).where(CampaignVersion.campaign_id == campaign_id)
                                    .order_by(CampaignVersion.number.desc()).limit(1))
        return list(session.scalars(select(Step.id).where(Step.version_id == version_id).order_by(Step.position)))


def versions(app, campaign_id: int) -> int:
    with app.app_context(), read_session() as session:
        return len(session.scalars(select(CampaignVersion.id).where(CampaignVersion.campaign_id == campaign_id)).all())


def created(browser, steps=THREE, **top) -> int:
    made = browser.post("/campaigns", form_of(steps, **top))
    assert made.status_code == 303, made.get_data(as_text=True)[:800]
    return int(made.headers["Location"].rsplit("/", 1)[1])


def fieldset(page: str, index: int) -> str:
    found = re.search(rf'<fieldset class="step" id="step-{index}".*?</fieldset>', page, re.S)
    assert found, page[:2000]
    return found.group(0)


def test_a_campaign_is_created_with_three_steps_in_one_post(app, world, browser_for):
    campaign_id = created(browser_for("marketer"))
    assert stored(app, campaign_id) == [("PT0S", "First, {{ contact.first_name }}"), ("P2D", "Second"),
                                        ("PT3H", "Third")]
    assert versions(app, campaign_id) == 1
    page = browser_for("marketer").get(f"/campaigns/{campaign_id}").get_data(as_text=True)
    assert [fieldset(page, i).count('selected>') for i in range(3)] == [1, 1, 1]
    assert '<option value="hours" selected>hours</option>' in fieldset(page, 2)


def test_steps_are_added_moved_and_removed_before_saving_and_nothing_is_stored(app, world, browser_for):
    browser = browser_for("marketer")
    before = snapshot(app)
    typed = form_of(THREE[:2])
    added = browser.post("/campaigns/new/steps", {**typed, "step_op": "add"}, htmx=True)
    text = added.get_data(as_text=True)
    assert added.status_code == 200 and "<html" not in text and text.lstrip().startswith('<div id="steps"')
    assert 'name="step_count" value="3"' in text and "Step 3 added at the end" in text
    assert 'id="step-2-wait" data-focus-after-swap' in text  # the keyboard lands in the new step
    assert "First, {{ contact.first_name }}" in fieldset(text, 0) and "Two days on" in fieldset(text, 1)
    assert 'value="1"' in fieldset(text, 2) and '<option value="days" selected>' in fieldset(text, 2)

    moved = browser.post("/campaigns/new/steps", {**form_of(THREE), "step_op": "up:2"}, htmx=True)
    text = moved.get_data(as_text=True)
    assert moved.status_code == 200 and "Step 3 moved up: it is step 2 now" in text
    assert "Soon after" in fieldset(text, 1) and "Two days on" in fieldset(text, 2)
    assert '<option value="hours" selected>' in fieldset(text, 1)  # the wait moves with its step
    assert 'id="step-1-up" data-focus-after-swap' in text
    to_top = browser.post("/campaigns/new/steps", {**form_of(THREE), "step_op": "up:1"}, htmx=True)
    assert 'id="step-0-down" data-focus-after-swap' in to_top.get_data(as_text=True)  # Up is disabled at the top

    removed = browser.post("/campaigns/new/steps", {**form_of(THREE), "step_op": "remove:0"}, htmx=True)
    text = removed.get_data(as_text=True)
    assert "Step 1 removed" in text and 'name="step_count" value="2"' in text
    assert "Two days on" in fieldset(text, 0) and "Soon after" in fieldset(text, 1) and "First," not in text
    assert 'id="step-0-remove" data-focus-after-swap' in text
    last = browser.post("/campaigns/new/steps", {**form_of(THREE[:2]), "step_op": "remove:1"}, htmx=True)
    assert 'id="step-add" data-focus-after-swap' in last.get_data(as_text=True)  # the one left cannot be removed

    # Without htmx the same buttons post the whole form and the page comes back with it.
    page = browser.post("/campaigns/new/steps", {**form_of(THREE), "step_op": "down:0"})
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "<html" in text and 'value="Welcome"' in text
    assert "Two days on" in fieldset(text, 0) and "First," in fieldset(text, 1)

    for op, words in (("up:0", "step 1 is already first"), ("down:2", "step 3 is already last"),
                      ("remove:7", "that step is no longer on the page")):
        refused = browser.post("/campaigns/new/steps", {**form_of(THREE), "step_op": op}, htmx=True)
        assert refused.status_code == 422 and words in refused.get_data(as_text=True).lower(), op
        assert "Soon after" in fieldset(refused.get_data(as_text=True), 2)
    only = browser.post("/campaigns/new/steps", {**form_of(THREE[:1]), "step_op": "remove:0"}, htmx=True)
    assert only.status_code == 422 and "needs at least one step" in only.get_data(as_text=True)
    assert changed_tables(before, snapshot(app)) == []


def test_a_saved_drafts_steps_are_reordered_and_removed_in_one_save(app, world, browser_for):
    browser = browser_for("marketer")
    campaign_id = created(browser)
    first, second, third = step_ids(app, campaign_id)
    rows = [{**THREE[2], "id": third}, {**THREE[0], "id": first}, {**THREE[1], "id": second}]
    moved = browser.post(f"/campaigns/{campaign_id}/steps", {**form_of(rows), "step_op": "remove:2"}, htmx=True)
    assert "Step 3 removed" in moved.get_data(as_text=True)
    saved = browser.post(f"/campaigns/{campaign_id}", form_of(rows[:2]))
    assert saved.status_code == 303
    assert stored(app, campaign_id) == [("PT3H", "Third"), ("PT0S", "First, {{ contact.first_name }}")]
    assert versions(app, campaign_id) == 1  # a draft's steps are replaced; nobody is on them yet


def test_a_refused_save_changes_nothing_and_shows_every_step_as_typed_with_the_error_on_its_step(app, world,
                                                                                                  browser_for):
    browser = browser_for("marketer")
    campaign_id = created(browser)
    first, second, third = step_ids(app, campaign_id)
    before = snapshot(app)
    rows = [{**THREE[1], "id": second, "wait": "5"}, {**THREE[0], "id": first, "body": "Hi {{ contact.nonexistent }}"},
            {"wait": "4", "unit": "weeks", "subject": "Brand new", "body": "Fourth"}]
    refused = browser.post(f"/campaigns/{campaign_id}", form_of(rows))
    text = refused.get_data(as_text=True)
    assert refused.status_code == 422
    assert "Step 2&#39;s body refers to &#39;contact.nonexistent&#39;, which no contact has" in fieldset(text, 1)
    assert 'id="step-1-body" data-focus-after-swap name="step-1-body" rows="4" aria-invalid="true"' in text
    assert '<a href="#step-1">Go to step 2</a>' in text
    assert "contact.nonexistent" not in fieldset(text, 0) + fieldset(text, 2)
    assert 'value="5"' in fieldset(text, 0) and "Two days on" in fieldset(text, 0)  # as typed, not as saved
    assert "Brand new" in fieldset(text, 2) and '<option value="weeks" selected>' in fieldset(text, 2)
    assert f'name="step-0-id" value="{second}"' in text and 'name="step-2-id" value=""' in text
    bad_wait = browser.post(f"/campaigns/{campaign_id}", form_of([rows[0], {**rows[2], "wait": "soon"}]))
    text = bad_wait.get_data(as_text=True)
    assert bad_wait.status_code == 422 and "step 2&#39;s wait must be a whole number" in fieldset(text, 1)
    assert 'name="step-1-wait" type="number" min="0" max="99999" value="soon"' in text
    new = browser.post("/campaigns", form_of(rows, name="Never"))
    assert new.status_code == 422 and "Brand new" in new.get_data(as_text=True)
    assert changed_tables(before, snapshot(app)) == []
    assert stored(app, campaign_id)[0] == ("PT0S", "First, {{ contact.first_name }}")


def _activated_with_someone_at_step_one(app, world, browser) -> tuple[int, list[int]]:
    campaign_id = created(browser, THREE[:2])
    assert browser.post(f"/campaigns/{campaign_id}/activate").status_code == 303
    enroll(app, world.workspace_id, campaign_id, contacts(app, world.workspace_id, 1))
    return campaign_id, step_ids(app, campaign_id)


def test_an_active_campaigns_steps_are_never_changed_under_the_contacts_at_them(app, world, browser_for):
    browser = browser_for("marketer")
    campaign_id, (first, second) = _activated_with_someone_at_step_one(app, world, browser)
    page = browser.get(f"/campaigns/{campaign_id}").get_data(as_text=True)
    assert "1 contact at this step" in fieldset(page, 0) and "at this step" not in fieldset(page, 1)
    kept = [{**THREE[0], "id": first}, {**THREE[1], "id": second}]

    # Reordering on the page says what saving will do before anything is saved.
    moved = browser.post(f"/campaigns/{campaign_id}/steps", {**form_of(kept), "step_op": "up:1"}, htmx=True)
    assert "saving makes version 2, which new enrollments start on; the 1 enrollment under way finishes on " \
           "version 1" in moved.get_data(as_text=True)
    assert versions(app, campaign_id) == 1
    saved = browser.post(f"/campaigns/{campaign_id}", form_of(kept[::-1]), follow_redirects=True)
    assert "version 2 is what new enrollments start on" in saved.get_data(as_text=True)
    assert stored(app, campaign_id, 1) == [("PT0S", "First, {{ contact.first_name }}"), ("P2D", "Second")]
    assert stored(app, campaign_id) == [("P2D", "Second"), ("PT0S", "First, {{ contact.first_name }}")]
    with app.app_context(), read_session() as session:
        [enrollment] = session.scalars(select(Enrollment).where(Enrollment.campaign_id == campaign_id)).all()
        assert session.get(CampaignVersion, enrollment.version_id).number == 1 and enrollment.current_step == 0


def test_removing_a_step_and_adding_another_on_an_active_campaign_makes_a_version(app, world, browser_for):
    """As many steps as before, one of them new: the old one must not be overwritten in place under its contacts."""
    browser = browser_for("marketer")
    campaign_id, (first, second) = _activated_with_someone_at_step_one(app, world, browser)
    rows = [{**THREE[0], "id": first}, {"wait": "1", "unit": "weeks", "subject": "Replacement", "body": "Other"}]
    saved = browser.post(f"/campaigns/{campaign_id}", form_of(rows))
    assert saved.status_code == 303
    assert versions(app, campaign_id) == 2
    assert stored(app, campaign_id, 1)[1] == ("P2D", "Second")
    assert stored(app, campaign_id)[1] == ("P7D", "Other")


def test_an_active_campaigns_save_refuses_a_repeated_or_stale_step_naming_it(app, world, browser_for):
    browser = browser_for("marketer")
    campaign_id, (first, second) = _activated_with_someone_at_step_one(app, world, browser)
    before = snapshot(app)
    twice = browser.post(f"/campaigns/{campaign_id}", form_of([{**THREE[0], "id": first}, {**THREE[1], "id": first}]))
    text = twice.get_data(as_text=True)
    assert twice.status_code == 422 and "a step comes once" in fieldset(text, 1)
    assert changed_tables(before, snapshot(app)) == []
    # Another person saved a new version meanwhile: this page's ids are an older version's.
    with app.app_context(), write_session() as session:
        from models.core.moves import Actor
        from models.drips import operations as ops

        ops.update_campaign(session, world.workspace_id, campaign_id, actor=Actor(label="user:other"),
                            now=runtime().now(), changes={"steps": [{"id": second, "delay": "P2D", "subject": "x",
                                                                     "body": "y"}]})
    stale = browser.post(f"/campaigns/{campaign_id}", form_of([{**THREE[0], "id": first}, {**THREE[1], "id": second}]))
    text = stale.get_data(as_text=True)
    assert stale.status_code == 422
    assert "not a step of this campaign&#39;s current version (version 2); the steps may have changed" in fieldset(
        text, 0)
    with app.app_context(), read_session() as session:
        assert session.get(Campaign, campaign_id).status == "active"
    assert stored(app, campaign_id) == [("P2D", "y")]


def test_each_steps_template_fields_follow_its_channels_kind(app, world, browser_for):
    from models.channels.tables import Channel

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="sms", kind="log", config={"address": "phone"},
                            created_at=runtime().now()))
    browser = browser_for("marketer")
    rows = [THREE[0], {**THREE[1], "channel": "sms", "subject": "kept"}]
    shown = browser.post("/campaigns/new/steps", {**form_of(rows), "step_op": "refresh", "focus": "step-1-channel"},
                         htmx=True).get_data(as_text=True)
    assert 'id="step-0-subject"' in shown and "Text message" not in fieldset(shown, 0)
    assert 'id="step-1-subject"' not in shown and "Text message" in fieldset(shown, 1)
    assert '<input type="hidden" name="step-1-subject" value="kept">' in shown  # back if the channel is changed back
    assert 'id="step-1-channel" data-focus-after-swap' in shown
    whole = browser.post("/campaigns/new/steps", {**form_of(rows, channel="sms"), "step_op": "refresh",
                                                  "focus": "name\" onfocus=\"x"}, htmx=True).get_data(as_text=True)
    assert "Text message" in fieldset(whole, 0) and "data-focus-after-swap" not in whole
    campaign_id = created(browser, [THREE[0], {**THREE[1], "channel": "sms", "subject": ""}])
    assert stored(app, campaign_id)[1] == ("P2D", "Second")
