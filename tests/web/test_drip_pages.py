"""The drip pages for each role, with and without HX-Request; the editor, the preview, enrolling, the CSV
upload and the contact forms, with refusals written in place. SQLite only: what these prove is the
dashboard's, and the database tests run on both."""

import io

import pytest

from tests.integration.drip_helpers import BASE_URL, campaign, contacts, enroll, enrollments

pytestmark = pytest.mark.only_backend("sqlite")

ROLES = ("marketer", "ops", "admin")
RANK = {"marketer": 0, "ops": 1, "admin": 2}


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


@pytest.fixture
def drip(app, world):
    campaign_id = campaign(app, world.workspace_id)
    [person] = contacts(app, world.workspace_id, 1)
    enroll(app, world.workspace_id, campaign_id, [person])
    [enrollment] = enrollments(app, campaign_id)
    return type("Drip", (), dict(campaign=campaign_id, contact=person, enrollment=enrollment.id))


def test_every_drip_page_for_every_role_with_and_without_htmx(drip, browser_for):
    pages = [("/campaigns", "marketer"), ("/campaigns/new", "marketer"), (f"/campaigns/{drip.campaign}", "marketer"),
             ("/contacts", "marketer"), ("/contacts?q=person", "marketer"), (f"/contacts/{drip.contact}", "marketer"),
             (f"/enrollments/{drip.enrollment}", "marketer")]
    for role in ROLES:
        browser = browser_for(role)
        for url, least in pages:
            for htmx in (False, True):
                answer = browser.get(url, htmx=htmx)
                body = answer.get_data(as_text=True)
                assert answer.status_code == 200, (role, url, htmx, body[:300])
                assert ("<html" in body) is not htmx, (role, url, htmx)
    page = browser_for("marketer").get(f"/campaigns/{drip.campaign}").get_data(as_text=True)
    assert "Funnel" in page and "Archive" not in page  # archiving is ops'
    assert "Archive" in browser_for("ops").get(f"/campaigns/{drip.campaign}").get_data(as_text=True)
    nav = browser_for("marketer").get("/calendar").get_data(as_text=True)
    assert 'href="/campaigns"' in nav and 'href="/contacts"' in nav
    signed_out = browser_for(None)
    for url, _ in pages:
        assert signed_out.get(url).status_code == 302, url


def test_a_campaign_is_written_previewed_and_refused_in_place_on_the_dashboard(app, world, browser_for):
    browser = browser_for("marketer")
    form = {"name": "Spring", "channel": "main", "on_failure": "skip", "window_start": "09:00", "window_end": "20:00",
            "window_days": ["mon", "tue"], "step_count": "1", "step-0-delay": "PT0S",
            "step-0-subject": "Hi {{ contact.first_name }}", "step-0-body": "Spring is here, {{ contact.name }}."}
    bad = browser.post("/campaigns", {**form, "step-0-delay": "P1M"})
    text = bad.get_data(as_text=True)
    assert bad.status_code == 422 and "counts in months" in text and 'value="Spring"' in text
    made = browser.post("/campaigns", form)
    assert made.status_code == 303
    campaign_url = made.headers["Location"]
    page = browser.get(campaign_url).get_data(as_text=True)
    assert "Saved: campaign Spring is a draft." in page and "Spring is here" in page
    preview = browser.post("/campaigns/preview", {"step": "0", "step-0-subject": form["step-0-subject"],
                                                  "step-0-body": form["step-0-body"]}, htmx=True)
    assert preview.status_code == 200 and "Hi Ada" in preview.get_data(as_text=True)
    broken = browser.post("/campaigns/preview", {"step": "0", "step-0-body": "{{ attributes.coupon }}"}, htmx=True)
    assert "template: missing attribute &#39;coupon&#39;" in broken.get_data(as_text=True)
    assert "<script>" not in browser.post("/campaigns/preview", {"step": "0", "step-0-body": "<script>x</script>"},
                                          htmx=True).get_data(as_text=True)
    activated = browser.post(campaign_url + "/activate")
    assert activated.status_code == 303
    assert "Active." in browser.get(campaign_url).get_data(as_text=True)
    refused = browser.post(campaign_url + "/archive")
    assert refused.status_code == 403 and "You need the ops role" in refused.get_data(as_text=True)


def test_enrolling_one_contact_and_a_csv_file_from_the_dashboard(app, world, browser_for, drip):
    browser = browser_for("marketer")
    [other] = contacts(app, world.workspace_id, 1, prefix="other")
    url = f"/campaigns/{drip.campaign}"
    unknown = browser.post(url + "/enrollments", {"contact": "nobody@example.com"})
    assert unknown.status_code == 422 and "No contact has the email nobody@example.com" in unknown.get_data(as_text=True)
    phone = browser.post(url + "/enrollments", {"contact": "+15550109999"})
    assert phone.status_code == 422 and "No contact has the phone +15550109999" in phone.get_data(as_text=True)
    again = browser.post(url + "/enrollments", {"contact": "person0@example.com"})
    assert again.status_code == 409 and "already enrolled" in again.get_data(as_text=True)
    assert browser.post(url + "/enrollments", {"contact": "other0@example.com"}).status_code == 303
    csv = b"email,name\nnew@example.com,New\nbad,Bad\n"
    report = browser.post(url + "/upload", {"file": (io.BytesIO(csv), "people.csv")},
                          content_type="multipart/form-data")
    text = report.get_data(as_text=True)
    assert report.status_code == 200 and "invalid email" in text and "Enroll 1 contact" in text
    import_id = text.split("/imports/")[1].split("/")[0]
    done = browser.post(f"{url}/imports/{import_id}/commit")
    assert done.status_code == 200 and "1 contact(s) enrolled" in done.get_data(as_text=True)
    latin = browser.post(url + "/upload", {"file": (io.BytesIO("email\nzo\u00eb@x.com\n".encode("latin-1")), "p.csv")},
                         content_type="multipart/form-data")
    assert latin.status_code == 422 and "line 2 is not UTF-8" in latin.get_data(as_text=True)
    assert len(enrollments(app, drip.campaign)) == 3 and other


def test_contacts_are_added_edited_and_unsubscribed_from_the_dashboard(app, browser_for, drip):
    browser = browser_for("marketer")
    bad = browser.post("/contacts", {"email": "ann@example.com", "timezone": "Mars/Olympus"})
    assert bad.status_code == 422 and "Mars/Olympus" in bad.get_data(as_text=True)
    made = browser.post("/contacts", {"email": "ann@example.com", "name": "Ann", "attributes": "plan = pro"})
    assert made.status_code == 303
    contact_url = made.headers["Location"]
    assert "plan = pro" in browser.get(contact_url).get_data(as_text=True)
    edited = browser.post(contact_url, {"email": "ann@example.com", "name": "Ann B", "timezone": "Europe/Paris",
                                        "attributes": "plan"})
    assert edited.status_code == 422 and "should look like plan = pro" in edited.get_data(as_text=True)
    gone = browser.post(f"/contacts/{drip.contact}/unsubscribe")
    assert gone.status_code == 303
    page = browser.get(f"/contacts/{drip.contact}").get_data(as_text=True)
    assert "1 enrollment(s) ended, 1 queued send(s) cancelled." in page and "never sent to again" in page
    timeline = browser.get(f"/enrollments/{drip.enrollment}").get_data(as_text=True)
    assert "exit: active → exited" in timeline and "unsubscribed" in timeline
    assert "<dt>Left at step</dt><dd>1</dd>" in timeline  # the step it left at, counted from 1


def test_an_exited_enrollment_shows_the_step_it_left_at(app, world, browser_for, clock):
    from tests.integration.drip_helpers import advance

    steps = [{"delay": "PT0S", "subject": "One", "body": "1"}, {"delay": "PT1H", "subject": "Two", "body": "2"},
             {"delay": "PT1H", "subject": "Three", "body": "3"}]
    campaign_id = campaign(app, world.workspace_id, steps=steps, name="Three steps")
    [person] = contacts(app, world.workspace_id, 1, prefix="walker")
    enroll(app, world.workspace_id, campaign_id, [person])
    for _ in range(2):
        advance(app)
        from tests.integration.drip_helpers import tick
        tick(app)
        advance(app)
        clock.advance(hours=1, minutes=1)
    [enrollment] = enrollments(app, campaign_id)
    browser = browser_for("ops")
    at = enrollment.current_step
    assert at >= 1, at
    assert browser.post(f"/enrollments/{enrollment.id}/remove").status_code in (200, 303)
    page = browser.get(f"/enrollments/{enrollment.id}").get_data(as_text=True)
    assert f"<dt>Left at step</dt><dd>{at + 1}</dd>" in page
    listing = browser.get(f"/campaigns/{campaign_id}").get_data(as_text=True)
    assert f"<td>{at + 1}</td>" in listing


def test_the_unsubscribe_page_needs_no_session_and_says_nothing_about_a_bad_link(app, world, client, drip):
    from models.core.runtime import runtime
    from models.drips.unsubscribe import unsubscribe_url

    with app.app_context():
        link = unsubscribe_url("", runtime().secret_box, world.workspace_id, drip.contact)
    page = client.get(link)
    assert page.status_code == 200 and "Unsubscribe?" in page.get_data(as_text=True)
    assert "csrf_token" not in page.get_data(as_text=True).split("<main")[1]  # the button posts no token
    for bad in (link + "x", link.replace(f"/{world.workspace_id}/", "/999/")):
        refused = client.get(bad)
        assert refused.status_code == 404 and "This unsubscribe link is not valid" in refused.get_data(as_text=True)
    assert client.post(link, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    assert "You are unsubscribed" in client.get(link).get_data(as_text=True)


def test_planned_drip_steps_show_on_the_calendar_and_enrollments_on_the_health_numbers(app, world, browser_for, client):
    window = {"start": "09:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri"]}
    campaign_id = campaign(app, world.workspace_id, name="Week two", window=window,
                           steps=[{"delay": "P2D", "subject": "a", "body": "b"}])
    enroll(app, world.workspace_id, campaign_id, contacts(app, world.workspace_id, 3))
    calendar = browser_for("marketer").get("/calendar?view=week&date=2026-06-03").get_data(as_text=True)
    assert "Week two: 3 planned" in calendar and f'href="/campaigns/{campaign_id}"' in calendar
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'tickwork_drip_enrollments{state="waiting"} 3.0' in metrics


def test_every_time_on_the_enrollment_and_contact_pages_says_its_zone(app, world, browser_for):
    # T0 is 08:00 in New York, 14:00 in Berlin: a Berlin contact's window of 15:00-18:00 holds the first step.
    window = {"start": "15:00", "end": "18:00", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}
    campaign_id = campaign(app, world.workspace_id, name="Berlin hours", window=window)
    [person] = contacts(app, world.workspace_id, 1, prefix="berlin", zone="Europe/Berlin")
    enroll(app, world.workspace_id, campaign_id, [person])
    [enrollment] = enrollments(app, campaign_id)
    browser = browser_for("marketer")
    page = browser.get(f"/enrollments/{enrollment.id}").get_data(as_text=True)
    assert "held until the send window opens at 15:00" in page and "Europe/Berlin time." in page
    assert "09:00 EDT" in page  # the next send on the workspace's clock, labelled
    contact = browser.get(f"/contacts/{person}").get_data(as_text=True)
    assert "times in America/New_York (the workspace's); their own zone is Europe/Berlin" in contact
    assert "times in Europe/Berlin" not in contact


def test_a_wait_is_typed_as_a_number_and_a_unit_and_shown_back_in_words(app, world, browser_for):
    browser = browser_for("marketer")
    form = {"name": "Words", "channel": "main", "on_failure": "exit", "step_count": "2",
            "step-0-wait": "0", "step-0-unit": "minutes", "step-0-subject": "Hello", "step-0-body": "Hi",
            "step-1-wait": "2", "step-1-unit": "days", "step-1-subject": "Again", "step-1-body": "Later"}
    bad = browser.post("/campaigns", {**form, "step-1-wait": "two"})
    assert bad.status_code == 422 and "step 2&#39;s wait must be a whole number" in bad.get_data(as_text=True)
    made = browser.post("/campaigns", form)
    assert made.status_code == 303, made.get_data(as_text=True)[:500]
    page = browser.get(made.headers["Location"]).get_data(as_text=True)
    assert "Step 2 <span class=\"muted\">· 2 days later</span>" in page and "at enrolment" in page
    assert "P2D" not in page  # ISO 8601 stays the API's
    assert 'name="step-1-wait" type="number" min="0" max="99999" value="2"' in page
    assert '<option value="days" selected>days</option>' in page
    with app.app_context():
        from sqlalchemy import select

        from models.core.database import read_session
        from models.drips.tables import Step
        with read_session() as session:
            assert sorted(session.scalars(select(Step.delay))) == ["P2D", "PT0S"]


def test_a_zone_is_chosen_from_a_searchable_list_with_its_region_and_offset(app, world, browser_for, drip):
    contact = browser_for("marketer").get(f"/contacts/{drip.contact}").get_data(as_text=True)
    assert 'list="timezone-zones"' in contact and '<datalist id="timezone-zones">' in contact
    assert '<option value="Europe/Berlin" label="Europe · UTC+02:00">' in contact  # June: summer time
    assert '<option value="America/New_York" label="America · UTC−04:00">' in contact
    settings = browser_for("admin").get("/settings").get_data(as_text=True)
    assert '<option value="Asia/Kolkata" label="Asia · UTC+05:30">' in settings
    campaign = browser_for("marketer").get(f"/campaigns/{drip.campaign}").get_data(as_text=True)  # the CSV help
    assert 'list="csv-zones"' in campaign and '<datalist id="csv-zones">' in campaign
    assert '<option value="Europe/Berlin" label="Europe · UTC+02:00">' in campaign


def test_the_editor_refuses_a_field_no_contact_has_and_warns_of_an_attribute_some_lack(app, world, browser_for, drip):
    browser = browser_for("marketer")
    form = {"name": "Fields", "channel": "main", "on_failure": "exit", "step_count": "2",
            "step-0-wait": "0", "step-0-unit": "minutes", "step-0-subject": "Hello", "step-0-body": "Hi",
            "step-1-wait": "2", "step-1-unit": "days", "step-1-subject": "Again",
            "step-1-body": "Dear {{ contact.nonexistent }}"}
    refused = browser.post("/campaigns", form)
    text = refused.get_data(as_text=True)
    assert refused.status_code == 422 and 'value="Fields"' in text
    assert "Step 2&#39;s body refers to &#39;contact.nonexistent&#39;, which no contact has" in text
    assert browser.get("/campaigns").get_data(as_text=True).count(">Fields<") == 0  # nothing saved
    # An attribute some enrolled contacts lack saves, with how many lack it and the default filter offered.
    from sqlalchemy import select

    from models.core.database import read_session
    from models.drips.tables import Step
    with app.app_context(), read_session() as session:
        ids = [s.id for s in session.scalars(select(Step).order_by(Step.position))]
    edit = {"name": "Welcome", "channel": "main", "on_failure": "exit", "step_count": str(len(ids))}
    for i, step_id in enumerate(ids):
        edit.update({f"step-{i}-id": str(step_id), f"step-{i}-wait": "1", f"step-{i}-unit": "days",
                     f"step-{i}-subject": "S", f"step-{i}-body": "Your {{ attributes.plan }} plan" if i else "B"})
    saved = browser.post(f"/campaigns/{drip.campaign}", edit)
    assert saved.status_code == 303, saved.get_data(as_text=True)[:800]
    page = browser.get(saved.headers["Location"]).get_data(as_text=True)
    assert "attributes.plan, which 1 of the 1 enrolled contacts lack" in page and "default(" in page
