"""``/api/v1`` for drips against real databases: bad input is a 4xx naming its field and changes nothing,
roles, versions of steps (a new step beside kept ones is a new version), the zone change, and enrolling
from a CSV file (dry run, then commit)."""

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from models.core.database import read_session, write_session
from models.drips.tables import Campaign, Contact, Enrollment
from models.imports.csv_file import MAX_LINE_BYTES
from models.imports.tables import CsvImport, CsvImportLine
from tests.integration.drip_helpers import BASE_URL, advance, enrollments

STEPS = [{"delay": "PT0S", "subject": "Hi {{ contact.first_name }}", "body": "Hello"},
         {"delay": "P2D", "subject": "Again", "body": "More"}]


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def _counts(app) -> tuple:
    with app.app_context(), read_session() as session:
        return tuple(session.scalar(select(func.count()).select_from(table))
                     for table in (Campaign, Contact, Enrollment, CsvImport, CsvImportLine))


def _active_campaign(client, world, **extra) -> int:
    made = client.post("/api/v1/campaigns", headers=world.auth("marketer"),
                       json={"name": "Welcome", "channel": "main", "steps": STEPS, **extra})
    assert made.status_code == 201, made.json
    assert client.post(f"/api/v1/campaigns/{made.json['id']}/activate", headers=world.auth("marketer")).status_code == 200
    return made.json["id"]


BAD_CAMPAIGNS = [
    ({"channel": "main", "steps": STEPS}, "name"),
    ({"name": "x", "channel": "nope", "steps": STEPS}, "channel"),
    ({"name": "x", "channel": "main", "steps": []}, "steps"),
    ({"name": "x", "channel": "main", "steps": "P2D"}, "steps"),
    ({"name": "x", "channel": "main", "steps": [{"delay": "P1M", "subject": "a", "body": "b"}]}, "steps[0].delay"),
    ({"name": "x", "channel": "main", "steps": [{"delay": "-PT1H", "subject": "a", "body": "b"}]}, "steps[0].delay"),
    ({"name": "x", "channel": "main", "steps": [{"delay": "PT0S", "subject": "a", "body": "{% if %}"}]}, "steps[0].body"),
    ({"name": "x", "channel": "main", "steps": [{"delay": "PT0S", "body": "b"}]}, "steps[0].subject"),
    ({"name": "x", "channel": "main", "steps": [{"delay": "PT0S", "subject": "a", "body": "b", "colour": 1}]},
     "steps[0].colour"),
    ({"name": "x", "channel": "main", "steps": STEPS, "send_window": {"start": "25:00", "end": "20:00",
                                                                      "days": ["mon"]}}, "send_window.start"),
    ({"name": "x", "channel": "main", "steps": STEPS, "send_window": {"start": "09:00", "end": "09:00",
                                                                      "days": ["mon"]}}, "send_window.end"),
    ({"name": "x", "channel": "main", "steps": STEPS, "send_window": {"start": "09:00", "end": "20:00",
                                                                      "days": ["someday"]}}, "send_window.days"),
    ({"name": "x", "channel": "main", "steps": STEPS, "on_failure": "retry"}, "on_failure"),
    ({"name": "x", "channel": "main", "steps": STEPS, "extra": 1}, "extra"),
]
BAD_CONTACTS = [
    ({}, "email"), ({"email": "not-an-address"}, "email"), ({"phone": "555-0100"}, "phone"),
    ({"email": "a@example.com", "timezone": "Mars/Olympus"}, "timezone"),
    ({"email": "a@example.com", "attributes": {"1bad": "x"}}, "attributes.1bad"),
    ({"email": "a@example.com", "attributes": {"nested": {"a": 1}}}, "attributes.nested"),
    ({"email": "a@example.com", "attributes": "plan=pro"}, "attributes"),
    ({"email": 7}, "email"),
]


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_every_bad_input_is_a_4xx_json_error_naming_the_field_and_changes_nothing(app, world, client):
    before = _counts(app)
    marketer = world.auth("marketer")
    for body, field in BAD_CAMPAIGNS:
        answer = client.post("/api/v1/campaigns", headers=marketer, json=body)
        assert answer.status_code in (400, 422), (body, answer.status_code)
        assert answer.json["error"]["field"] == field, (body, answer.json)
        assert answer.json["error"]["message"]
    for body, field in BAD_CONTACTS:
        answer = client.post("/api/v1/contacts", headers=marketer, json=body)
        assert answer.status_code == 422 and answer.json["error"]["field"] == field, (body, answer.json)
    assert client.post("/api/v1/campaigns", headers=marketer, data="{", content_type="application/json"
                       ).json["error"]["code"] == "invalid_json"
    for url in ("/api/v1/campaigns/99", "/api/v1/contacts/99", "/api/v1/enrollments/99",
                "/api/v1/campaigns/99999999999", "/api/v1/contacts?cursor=forged", "/api/v1/contacts?status=gone",
                "/api/v1/contacts?limit=0"):
        answer = client.get(url, headers=marketer)
        assert answer.status_code in (404, 422) and "error" in answer.json, url
    assert _counts(app) == before
    campaign_id = _active_campaign(client, world)
    person = client.post("/api/v1/contacts", headers=marketer, json={"email": "ann@example.com"}).json["id"]
    for body, field in (({"contact_id": "1"}, "contact_id"), ({}, "contact_id"), ({"contact_id": 999}, None)):
        answer = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json=body)
        assert answer.status_code in (404, 422) and answer.json["error"].get("field") == field, (body, answer.json)
    enrolled = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": person})
    assert enrolled.status_code == 201
    again = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": person})
    assert again.status_code == 409 and again.json["error"]["code"] == "already_enrolled"
    same = client.post("/api/v1/contacts", headers=marketer, json={"email": "ANN@example.com"})
    assert same.status_code == 409 and same.json["error"]["code"] == "contact_exists"


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_marketers_write_and_pause_ops_archive_and_remove(app, world, client):
    campaign_id = _active_campaign(client, world)
    person = client.post("/api/v1/contacts", headers=world.auth("marketer"), json={"email": "a@example.com"}).json["id"]
    enrollment = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=world.auth("marketer"),
                             json={"contact_id": person}).json["id"]
    for url in (f"/api/v1/enrollments/{enrollment}/remove", f"/api/v1/campaigns/{campaign_id}/archive"):
        refused = client.post(url, headers=world.auth("marketer"))
        assert refused.status_code == 403 and "ops role" in refused.json["error"]["message"]
    assert client.post(f"/api/v1/campaigns/{campaign_id}/pause", headers=world.auth("marketer")).status_code == 200
    removed = client.post(f"/api/v1/enrollments/{enrollment}/remove", headers=world.auth("ops"))
    assert removed.status_code == 200 and (removed.json["status"], removed.json["exit_reason"]) == ("exited", "removed")
    detail = client.get(f"/api/v1/enrollments/{enrollment}", headers=world.auth("marketer")).json
    assert [s["status"] for s in detail["sends"]] == ["held"]  # held by the pause; settled by the next pass
    advance(app)
    detail = client.get(f"/api/v1/enrollments/{enrollment}", headers=world.auth("marketer")).json
    assert [s["status"] for s in detail["sends"]] == ["exited"]
    assert [t["what"] for t in detail["timeline"]][:2] == ["enroll: new → active", "mint: new → pending"]
    archived = client.post(f"/api/v1/campaigns/{campaign_id}/archive", headers=world.auth("ops"))
    assert archived.status_code == 200 and archived.json["status"] == "archived"
    late = client.post(f"/api/v1/campaigns/{campaign_id}/activate", headers=world.auth("marketer"))
    assert late.status_code == 409 and late.json["error"]["code"] == "wrong_state"


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_an_active_campaigns_structural_change_makes_a_version_and_enrollments_finish_on_theirs(app, world, client):
    marketer = world.auth("marketer")
    campaign_id = _active_campaign(client, world)
    person = client.post("/api/v1/contacts", headers=marketer, json={"email": "a@example.com"}).json["id"]
    client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": person})
    shown = client.get(f"/api/v1/campaigns/{campaign_id}", headers=marketer).json
    ids = [step["id"] for step in shown["steps"]]
    assert shown["steps"][0]["counts"]["sending"] == 1 and shown["steps"][1]["counts"]["enrolled"] == 0
    edited = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"id": ids[0], "delay": "PT0S", "subject": "Hi", "body": "Hello again"},
        {"id": ids[1], "delay": "P3D", "subject": "Again", "body": "More"}]})
    assert edited.status_code == 200 and edited.json["version"] == 1 and "note" not in edited.json
    reordered = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"id": ids[1], "delay": "P3D", "subject": "Again", "body": "More"},
        {"id": ids[0], "delay": "PT0S", "subject": "Hi", "body": "Hello again"}]})
    assert reordered.status_code == 200 and reordered.json["version"] == 2 and "version 2 is what new" in reordered.json["note"]
    unknown = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"id": 999999, "delay": "PT0S", "subject": "x", "body": "y"}]})
    assert unknown.status_code == 422 and unknown.json["error"]["field"] == "steps[0].id"
    with app.app_context(), read_session() as session:
        version_of = dict(session.execute(select(Enrollment.id, Enrollment.version_id)).all())
    second = client.post("/api/v1/contacts", headers=marketer, json={"email": "b@example.com"}).json["id"]
    newer = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer,
                        json={"contact_id": second}).json
    with app.app_context(), read_session() as session:
        assert session.get(Enrollment, newer["id"]).version_id != next(iter(version_of.values()))
    assert newer["next_send_at"] == "2026-06-04T12:00:00Z"  # version 2 starts with the three-day step


def test_a_new_step_beside_kept_ones_is_a_new_version_and_a_step_given_twice_is_refused(app, world, client):
    marketer = world.auth("marketer")
    campaign_id = _active_campaign(client, world)
    person = client.post("/api/v1/contacts", headers=marketer, json={"email": "a@example.com"}).json["id"]
    client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": person})
    ids = [step["id"] for step in client.get(f"/api/v1/campaigns/{campaign_id}", headers=marketer).json["steps"]]
    twice = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"id": ids[0], "delay": "PT0S", "subject": "Hi", "body": "Hello"},
        {"id": ids[0], "delay": "P2D", "subject": "Again", "body": "More"}]})
    assert twice.status_code == 422 and twice.json["error"]["code"] == "duplicate_step"
    assert twice.json["error"]["field"] == "steps[1].id"
    # The second step removed and another added: as many steps as before, yet not the old one changed in place.
    swapped = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"id": ids[0], "delay": "PT0S", "subject": "Hi", "body": "Hello"},
        {"delay": "P5D", "subject": "Other", "body": "Another step"}]})
    assert swapped.status_code == 200 and swapped.json["version"] == 2, swapped.json
    with app.app_context(), read_session() as session:
        from models.drips.tables import Step

        assert session.get(Step, ids[1]).body == "More"
    # Without any id the steps change in place, position by position, as before.
    in_place = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": [
        {"delay": "PT0S", "subject": "Hi", "body": "Hello"}, {"delay": "P6D", "subject": "Other", "body": "Later"}]})
    assert in_place.status_code == 200 and in_place.json["version"] == 2
    assert [step["delay"] for step in in_place.json["steps"]] == ["PT0S", "P6D"]


def test_a_zone_change_retimes_the_steps_of_contacts_who_use_the_workspaces_zone(app, world, client, clock):
    marketer = world.auth("marketer")
    window = {"start": "09:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}
    campaign_id = _active_campaign(client, world, send_window=window,
                                   steps=[{"delay": "P1D", "subject": "a", "body": "b"}])
    own = client.post("/api/v1/contacts", headers=marketer, json={"email": "a@example.com",
                                                                   "timezone": "America/New_York"}).json["id"]
    follows = client.post("/api/v1/contacts", headers=marketer, json={"email": "b@example.com"}).json["id"]
    clock.set(clock.now().replace(hour=4))  # 00:00 in New York: the day delay lands outside the window
    for person in (own, follows):
        client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": person})
    before = {e.contact_id: e.next_send_at for e in enrollments(app, campaign_id)}
    assert before[own] == before[follows]  # both 09:00 in New York, 13:00Z
    from models.accounts.workspaces import change_workspace_zone
    from models.core.database import write_session
    from models.core.moves import Actor
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        moved = change_workspace_zone(session, world.workspace_id, "Europe/Paris", hooks=runtime().hooks,
                                      now=clock.now(), actor=Actor(label="cli"), policy=runtime().policy)
    assert moved["drips"] == {"enrollments_retimed": 1}
    after = {e.contact_id: e.next_send_at for e in enrollments(app, campaign_id)}
    assert after[own] == before[own]
    assert after[follows].isoformat() == "2026-06-02T07:00:00+00:00"  # 09:00 in Paris
    # A zone stored broken (behind the app's back) falls back to the workspace's, says so, and breaks nothing.
    broken = client.post("/api/v1/contacts", headers=marketer, json={"email": "c@example.com"}).json["id"]
    with app.app_context(), write_session() as session:
        session.execute(update(Contact).where(Contact.id == broken).values(timezone="Mars/Olympus"))
    shown = client.get(f"/api/v1/contacts/{broken}", headers=marketer).json
    assert "'Mars/Olympus' is not valid; the workspace's zone Europe/Paris was used" in shown["zone_note"]
    enrolled = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": broken})
    assert enrolled.status_code == 201 and "'Mars/Olympus' is not valid" in enrolled.json["schedule_note"]
    assert enrolled.json["next_send_at"] == "2026-06-02T07:00:00Z"
    clock.set(clock.now() + timedelta(days=1))
    assert not advance(app)["errors"]


def test_csv_the_dry_runs_report_matches_the_commit_line_for_line(app, world, client):
    marketer = world.auth("marketer")
    campaign_id = _active_campaign(client, world)
    taken = client.post("/api/v1/contacts", headers=marketer, json={"email": "taken@example.com"}).json["id"]
    client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": taken})
    gone = client.post("/api/v1/contacts", headers=marketer, json={"email": "gone@example.com"}).json["id"]
    client.post(f"/api/v1/contacts/{gone}/unsubscribe", headers=marketer)
    later = client.post("/api/v1/contacts", headers=marketer, json={"email": "later@example.com"}).json["id"]
    csv = ("\ufeffEmail,Name,Phone,Timezone,plan\n"
           "new@example.com,New Person,,Europe/Paris,pro\n"
           "taken@example.com,Taken,,,\n"
           "gone@example.com,Gone,,,\n"
           "not-an-email,Bad,,,\n"
           ",Phone Only,+1 (555) 010-0000,,\n"
           ",Bad Phone,555,,\n"
           "zone@example.com,Zone,,Mars/Olympus,\n"
           "new@example.com,Twice,,,\n"
           "later@example.com,Later,,,\n"
           ",No Address,,,\n").encode()
    dry = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments.csv?dry_run=1", headers=marketer, data=csv,
                      content_type="text/csv")
    assert dry.status_code == 200, dry.json
    fates = [(line["line"], line["fate"]) for line in dry.json["lines"]]
    assert fates == [(2, "enroll"), (3, "already_enrolled"), (4, "unsubscribed"), (5, "invalid_email"),
                     (6, "no_address_for_channel"), (7, "invalid_phone"), (8, "unknown_zone"), (9, "duplicate_in_file"),
                     (10, "enroll"), (11, "no_address")]
    assert len(enrollments(app, campaign_id)) == 1  # a dry run enrolls nobody
    # Between the dry run and the commit, one accepted contact unsubscribes.
    client.post(f"/api/v1/contacts/{later}/unsubscribe", headers=marketer)
    committed = client.post(f"/api/v1/campaigns/{campaign_id}/imports/{dry.json['import_id']}/commit",
                            headers=marketer)
    assert committed.status_code == 200, committed.json
    assert committed.json["enrolled"] == 1
    assert committed.json["changed"] == [{"line": 10, "was": "enroll", "now": "unsubscribed",
                                          "message": f"contact #{later} is unsubscribed"}]
    with app.app_context(), read_session() as session:
        new = session.scalar(select(Contact).where(Contact.email == "new@example.com"))
        assert session.scalar(select(Contact).where(Contact.phone == "+15550100000")) is None
        assert (new.name, new.timezone, new.attributes) == ("New Person", "Europe/Paris", {"plan": "pro"})
    enrolled = {e.contact_id for e in enrollments(app, campaign_id) if e.status == "active"}
    assert enrolled == {taken, new.id}
    again = client.post(f"/api/v1/campaigns/{campaign_id}/imports/{dry.json['import_id']}/commit", headers=marketer)
    assert again.status_code == 200 and again.json == committed.json  # a commit runs once
    other = client.post(f"/api/v1/campaigns/{campaign_id}/imports/{'0' * 32}/commit", headers=marketer)
    assert other.status_code == 404 and other.json["error"]["field"] == "import_id"
    # A commit only enrolls; the clock mints the new email contact's first step.
    summary = advance(app)
    assert summary["minted"] == 1 and not summary.get("settled_skipped")
    steps = {e.contact_id: e.current_step for e in enrollments(app, campaign_id) if e.status == "active"}
    assert steps == {taken: 0, new.id: 0}


def test_an_sms_campaign_refuses_a_csv_contact_with_only_an_email_as_no_address_for_channel(app, world, client):
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="sms", kind="log", config={"address": "phone"},
                            created_at=runtime().now()))
    marketer = world.auth("marketer")
    campaign_id = _active_campaign(client, world, channel="sms")
    known = client.post("/api/v1/contacts", headers=marketer, json={"email": "known@example.com"}).json["id"]
    csv = ("email,phone\n"
           "only@example.com,\n"
           "known@example.com,\n"
           ",+15550100001\n").encode()
    dry = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments.csv?dry_run=1", headers=marketer, data=csv,
                      content_type="text/csv")
    assert dry.status_code == 200, dry.json
    assert [(line["line"], line["fate"]) for line in dry.json["lines"]] == [
        (2, "no_address_for_channel"), (3, "no_address_for_channel"), (4, "enroll")]
    assert "phone" in dry.json["lines"][0]["message"]
    committed = client.post(f"/api/v1/campaigns/{campaign_id}/imports/{dry.json['import_id']}/commit",
                            headers=marketer)
    assert committed.json["enrolled"] == 1
    one = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": known})
    assert one.status_code == 422 and one.json["error"]["code"] == "no_address_for_channel"
    assert {e.contact_id for e in enrollments(app, campaign_id)} == {known + 1}


MALFORMED = {
    "wrong encoding": ("email\nann@example.com\nzo\u00eb@example.com\n".encode("latin-1"), "not_utf8",
                       "line 3 is not UTF-8"),
    "missing header": (b"ann@example.com,Ann\nbob@example.com,Bob\n", "missing_header", "must be a header"),
    "10 MB on one line": (b"email\n" + b"a" * (10 * 1024 * 1024) + b"\n", "line_too_long",
                          f"a line may be at most {MAX_LINE_BYTES:,}"),
}


@pytest.mark.only_backend("sqlite")  # the file is refused before any database is touched
def test_csv_a_malformed_file_gets_a_clear_error_and_changes_nothing(app, world, client):
    campaign_id = _active_campaign(client, world)
    before = _counts(app)
    for what, (data, code, words) in MALFORMED.items():
        for dry in ("?dry_run=1", ""):
            answer = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments.csv{dry}", headers=world.auth("marketer"),
                                 data=data, content_type="text/csv")
            assert answer.status_code == 422, (what, answer.json)
            assert (answer.json["error"]["code"], answer.json["error"]["field"]) == (code, "file"), what
            assert words in answer.json["error"]["message"], what
    assert _counts(app) == before


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_csv_routes_take_twenty_mebibytes_and_every_other_route_keeps_two(app, world, client):
    campaign_id = _active_campaign(client, world)
    big = b"email\n" + b"x@example.com\n" * 300_000  # 4.2 MB
    refused = client.post("/api/v1/contacts", headers=world.auth("marketer"), data=big, content_type="application/json")
    assert refused.status_code == 413
    taken = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments.csv?dry_run=1", headers=world.auth("marketer"),
                        data=b"email\n" + b"x" * 40 + b"\n" + b"\n" * (2 * 1024 * 1024), content_type="text/csv")
    assert taken.status_code == 200 and taken.json["counts"] == {"invalid_email": 1}
    too_big = client.post(f"/api/v1/campaigns/{campaign_id}/enrollments.csv?dry_run=1", headers=world.auth("marketer"),
                          data=b"\n" * (21 * 1024 * 1024), content_type="text/csv")
    assert too_big.status_code == 413


def test_a_drip_step_naming_a_field_no_contact_has_is_refused_at_save_and_at_activation(app, world, client):
    from models.drips.tables import Step

    marketer = world.auth("marketer")
    bad = [{"delay": "PT0S", "subject": "Hi", "body": "Hello"},
           {"delay": "P2D", "subject": "Again", "body": "Dear {{ contact.nonexistent }}"}]
    before = _counts(app)
    refused = client.post("/api/v1/campaigns", headers=marketer, json={"name": "W", "channel": "main", "steps": bad})
    assert refused.status_code == 422
    assert refused.json["error"]["field"] == "steps[1].body" and refused.json["error"]["code"] == "unknown_field"
    assert "contact.nonexistent" in refused.json["error"]["message"]
    assert _counts(app) == before
    bare = client.post("/api/v1/campaigns", headers=marketer,
                       json={"name": "W", "channel": "main", "steps": [{"delay": "PT0S", "subject": "a", "body": "{{ plan }}"}]})
    assert bare.status_code == 422 and bare.json["error"]["field"] == "steps[0].body"
    # A campaign saved before templates were read this way is refused at activation, naming the step.
    made = client.post("/api/v1/campaigns", headers=marketer, json={"name": "Old", "channel": "main", "steps": STEPS})
    with app.app_context(), write_session() as session:
        session.execute(update(Step).where(Step.position == 0).values(body="{{ contact.nonexistent }}"))
    activated = client.post(f"/api/v1/campaigns/{made.json['id']}/activate", headers=marketer)
    assert activated.status_code == 422 and activated.json["error"]["field"].endswith(".body")
    shown = client.get(f"/api/v1/campaigns/{made.json['id']}", headers=marketer)
    assert shown.json["status"] == "draft"


def test_a_drip_step_using_an_attribute_some_enrolled_contacts_lack_saves_with_a_warning_counting_them(
        app, world, client):
    marketer = world.auth("marketer")
    campaign_id = _active_campaign(client, world)
    with_plan = client.post("/api/v1/contacts", headers=marketer,
                            json={"email": "p@example.com", "attributes": {"plan": "pro"}}).json["id"]
    without = client.post("/api/v1/contacts", headers=marketer, json={"email": "n@example.com"}).json["id"]
    for contact_id in (with_plan, without):
        client.post(f"/api/v1/campaigns/{campaign_id}/enrollments", headers=marketer, json={"contact_id": contact_id})
    steps = client.get(f"/api/v1/campaigns/{campaign_id}", headers=marketer).json["steps"]
    changed = [{"id": s["id"], "delay": s["delay"], "subject": s["subject"], "body": s["body"]} for s in steps]
    changed[1]["body"] = "Your {{ attributes.plan }} plan"
    saved = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": changed})
    assert saved.status_code == 200, saved.json
    assert "attributes.plan, which 1 of the 2 enrolled contacts lack" in saved.json["note"]
    assert "default(" in saved.json["note"]
    changed[1]["body"] = "Your {{ attributes.plan | default('free') }} plan"
    guarded = client.patch(f"/api/v1/campaigns/{campaign_id}", headers=marketer, json={"steps": changed})
    assert guarded.status_code == 200 and "note" not in guarded.json
