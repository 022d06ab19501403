"""The archived action's page and the History page: an archived id still answers; the archives are searched."""

from tests.factories import add_action
from tests.integration.retention_helpers import (  # noqa: F401  (fixtures)
    app_config, archive, archive_dir, live_ids, publish_now)


def test_an_archived_action_still_answers_marked_archived_and_the_history_finds_it(app, world, clock, browser_for):
    ident = add_action(app, world, thing_id="letter-1", target_key="cat@example.test", publish_at=clock.now(),
                       payload={"body": "Sourdough workshop on Saturday"})
    publish_now(app, ident)
    clock.advance(days=2)
    archive(app)
    assert ident not in live_ids(app)
    client = app.test_client()
    answer = client.get(f"/api/v1/actions/{ident}", headers=world.auth("marketer"))
    assert answer.status_code == 200, answer.json
    assert answer.json["archived"] is True and answer.json["status"] == "published"
    assert answer.json["payload"] == {"body": "Sourdough workshop on Saturday"}
    assert [e["to"] for e in answer.json["events"]] == ["queued", "submitted", "published"]
    assert client.get("/api/v1/actions/999999", headers=world.auth()).status_code == 404
    browser = browser_for("marketer")
    page = browser.get(f"/actions/{ident}")
    assert page.status_code == 200 and "archived" in page.get_data(as_text=True)
    found = browser.get("/history?q=sourdough").get_data(as_text=True)
    assert f"/actions/{ident}" in found
    assert f"/actions/{ident}" not in browser.get("/history?q=croissant").get_data(as_text=True)
    # Words with FTS syntax are searched as words, never a 500.
    assert browser.get('/history?q=%22sourdough+OR+NEAR(').status_code == 200
    assert browser.get("/history?q=" + "x" * 300).status_code == 422


def test_a_host_without_the_directory_skips_and_says_so(app, world, clock, archive_dir, browser_for):
    ident = add_action(app, world, publish_at=clock.now())
    publish_now(app, ident)
    clock.advance(days=2)
    archive_dir.rmdir()
    summary = archive(app)
    assert "no archive directory" in summary["skipped"] and ident in live_ids(app)
    page = browser_for("ops").get("/health").get_data(as_text=True)
    assert "no archive directory" in page
