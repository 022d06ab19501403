"""API tokens people can manage: named, listed without their secret, revocable, expiring, with a last-used time;
and a rate limit that counts per token id, whatever the header's spelling, and counts bad tokens per address."""

import pytest

from tests.web.conftest import HX


def test_tokens_are_listed_without_their_secret_with_names_and_last_use(app, world, clock):
    client = app.test_client()
    listed = client.get("/api/v1/tokens", headers=world.auth("ops"))
    assert listed.status_code == 200
    [mine] = listed.json["tokens"]  # ops sees their own only
    assert mine["email"] == "ops@acme.test" and mine["current"] is True and mine["state"] == "live"
    assert mine["last_used_at"] == "2026-06-01T12:00:00Z"
    assert world.tokens["ops"] not in listed.get_data(as_text=True)
    everyone = client.get("/api/v1/tokens", headers=world.auth("admin")).json["tokens"]
    assert {t["email"] for t in everyone} == {"admin@acme.test", "ops@acme.test", "marketer@acme.test"}
    assert not any(raw in str(everyone) for raw in world.tokens.values())
    clock.advance(minutes=5)
    client.get("/api/v1/actions", headers=world.auth("ops"))
    again = client.get("/api/v1/tokens", headers=world.auth("ops")).json["tokens"][0]
    assert again["last_used_at"] == "2026-06-01T12:05:00Z"


def test_a_revoked_token_stops_at_once_and_only_its_person_or_an_admin_may_revoke_it(app, world):
    client = app.test_client()
    ids = {t["email"].split("@")[0]: t["id"] for t in client.get("/api/v1/tokens", headers=world.auth("admin")).json["tokens"]}
    # Another member's token is not the marketer's to see or revoke.
    assert client.delete(f"/api/v1/tokens/{ids['ops']}", headers=world.auth("marketer")).status_code == 404
    assert client.get("/api/v1/actions", headers=world.auth("ops")).status_code == 200
    revoked = client.delete(f"/api/v1/tokens/{ids['ops']}", headers=world.auth("ops"))
    assert revoked.status_code == 200 and revoked.json["state"] == "revoked"
    refused = client.get("/api/v1/actions", headers=world.auth("ops"))
    assert refused.status_code == 401 and refused.json["error"]["code"] == "unauthorized"
    # An admin revokes anyone's in the workspace; again is a no-op.
    for _ in range(2):
        assert client.delete(f"/api/v1/tokens/{ids['marketer']}", headers=world.auth("admin")).status_code == 200
    assert client.get("/api/v1/actions", headers=world.auth("marketer")).status_code == 401
    assert client.delete("/api/v1/tokens/999999", headers=world.auth("admin")).status_code == 404


def test_tokens_are_made_named_and_expiring_on_the_account_page_and_revoked_there(app, world, browser_for, clock):
    import re

    ops = browser_for("ops")
    made = ops.post("/account/tokens", {"name": "deploy script", "expires_in_days": "7"})
    assert made.status_code == 201
    page = made.get_data(as_text=True)
    raw = re.search(r'<code class="secret" id="new-token">(tw_[^<]+)</code>', page).group(1)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {raw}"}
    assert client.get("/api/v1/actions", headers=auth).status_code == 200
    listed = ops.get("/account").get_data(as_text=True)
    assert "deploy script" in listed and raw not in listed  # never shown again
    [token] = [t for t in client.get("/api/v1/tokens", headers=auth).json["tokens"] if t["name"] == "deploy script"]
    assert token["expires_at"] == "2026-06-08T12:00:00Z"
    clock.advance(days=7)
    assert client.get("/api/v1/actions", headers=auth).status_code == 401  # expired
    ops = browser_for("ops")  # a week later the dashboard session has ended too
    other = ops.post("/account/tokens", {"name": "another", "expires_in_days": "never"})
    raw = re.search(r'id="new-token">(tw_[^<]+)<', other.get_data(as_text=True)).group(1)
    [token] = [t for t in client.get("/api/v1/tokens", headers={"Authorization": f"Bearer {raw}"}).json["tokens"]
               if t["name"] == "another"]
    assert token["expires_at"] is None
    assert ops.post(f"/account/tokens/{token['id']}/revoke").status_code == 303
    assert client.get("/api/v1/actions", headers={"Authorization": f"Bearer {raw}"}).status_code == 401
    # Someone else's token is not found from this page, whatever the role.
    admin_token = [t for t in client.get("/api/v1/tokens", headers=world.auth("admin")).json["tokens"]
                   if t["email"] == "admin@acme.test"][0]
    assert ops.post(f"/account/tokens/{admin_token['id']}/revoke").status_code == 404


@pytest.mark.parametrize("form, message", [
    ({"name": "", "expires_in_days": "never"}, "name says what it is for"),
    ({"name": "x" * 101, "expires_in_days": "never"}, "name says what it is for"),
    ({"name": "ok", "expires_in_days": "0"}, "1 to 3650 whole days"),
    ({"name": "ok", "expires_in_days": "soon"}, "1 to 3650 whole days"),
])
def test_a_bad_token_form_is_refused_in_words_and_makes_nothing(app, world, browser_for, form, message):
    ops = browser_for("ops")
    for htmx in (False, True):
        refused = ops.post("/account/tokens", form, htmx=htmx)
        assert refused.status_code == 422 and message in refused.get_data(as_text=True)
    assert len(app.test_client().get("/api/v1/tokens", headers=world.auth("ops")).json["tokens"]) == 1


def test_the_command_line_makes_lists_and_revokes_tokens(app, world):
    import json

    runner = app.test_cli_runner()
    made = runner.invoke(args=["token", "create", "ops@acme.test", "--workspace", "Acme", "--name", "cron",
                               "--expires-days", "30"])
    assert made.exit_code == 0, made.output
    raw = made.output.strip()
    listed = [json.loads(line) for line in runner.invoke(args=["token", "list", "--workspace", "Acme",
                                                               "--email", "ops@acme.test"]).output.splitlines()]
    [cron] = [t for t in listed if t["name"] == "cron"]
    assert raw not in str(listed) and cron["expires_at"].startswith("2026-07-01")
    revoked = runner.invoke(args=["token", "revoke", str(cron["id"])])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    assert app.test_client().get("/api/v1/actions", headers={"Authorization": f"Bearer {raw}"}).status_code == 401
    missing = runner.invoke(args=["token", "revoke", "999999"])
    assert missing.exit_code != 0 and "no token #999999" in missing.output and "Traceback" not in missing.output
    bad = runner.invoke(args=["token", "create", "ops@acme.test", "--workspace", "Acme", "--expires-days", "0"])
    assert bad.exit_code != 0 and "whole days" in bad.output


# -- the rate limit -----------------------------------------------------------------------------------


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_API_RATE_LIMIT="20 per minute")
    return app_config


SPELLINGS = ["Bearer {}", "bearer {}", "BEARER {}", "bEaReR {}", "Bearer  {}", "  Bearer {}  ", "Bearer\t{}"]


def test_the_same_token_spelled_any_way_spends_one_budget(app, world):
    client = app.test_client()
    answers = []
    for n in range(21):
        header = SPELLINGS[n % len(SPELLINGS)].format(world.tokens["ops"])
        answers.append(client.get("/api/v1/actions", headers={"Authorization": header}).status_code)
    assert answers[:20] == [200] * 20, answers
    assert answers[20] == 429
    assert client.get("/api/v1/actions", headers=world.auth("admin")).status_code == 200  # another token's budget


def test_bad_tokens_count_against_their_address(app, world):
    client = app.test_client()
    answers = [client.get("/api/v1/actions", headers={"Authorization": f"Bearer tw_bogus{n}"}).status_code
               for n in range(24)]
    assert answers[:20] == [401] * 20 and answers[20:] == [429] * 4, answers
    refused = client.get("/api/v1/actions", headers={"Authorization": "Bearer tw_another_guess"})
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    # A valid token has its own budget; another address its own.
    assert client.get("/api/v1/actions", headers=world.auth("ops")).status_code == 200
    elsewhere = client.get("/api/v1/actions", headers={"Authorization": "Bearer tw_bogus"},
                           environ_base={"REMOTE_ADDR": "192.0.2.9"})
    assert elsewhere.status_code == 401
